/*
 * compute.c: how long an operator's shard computes.  Matmuls (and the
 * matmuls inside attention) run at the throughput the hardware profile
 * measured for their size; everything else is bound by memory bandwidth
 * (bytes read plus written).  Backward costs twice the forward FLOPs of a
 * matmul (input and weight gradients) and twice the bytes of the others.
 * A layer that recomputes runs its forward again in backward.
 * doc/cost-model.md, "Compute time", has the formulas.
 */
#include "internal.h"

#include <math.h>

#define DEFAULT_MEM_BW 2.0e12
#define DEFAULT_EFFICIENCY 0.7

/* Achieved FLOP/s for a problem of f FLOPs: the profile's measured points,
 * interpolated in log(flops); the peak times an efficiency without them. */
static double
gemm_rate(const sl_hw *hw, double f)
{
	double eff = hw->matmul_efficiency > 0 ? hw->matmul_efficiency : DEFAULT_EFFICIENCY;
	const sl_gemm_point *p = hw->gemm;
	int n = hw->n_gemm;

	if (n <= 0)
		return hw->flops * eff;
	if (f <= p[0].flops)
		return p[0].achieved * (f / p[0].flops > 0.01 ? 1.0 : 0.5);
	if (f >= p[n - 1].flops)
		return p[n - 1].achieved;
	for (int i = 1; i < n; i++)
		if (f <= p[i].flops) {
			double t = (log(f) - log(p[i - 1].flops)) /
			    (log(p[i].flops) - log(p[i - 1].flops));
			return p[i - 1].achieved + t * (p[i].achieved - p[i - 1].achieved);
		}
	return p[n - 1].achieved;
}

static int64_t
ns_of(double seconds)
{
	double ns = seconds * 1e9;

	if (!(ns >= 0))
		return 0;
	return ns >= 9.2e18 ? INT64_MAX : (int64_t)(ns + 0.5);
}

int64_t
sl_gemm_ns(const sl_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch)
{
	double f = 2.0 * (double)m * (double)n * (double)k * (double)batch;

	if (f <= 0 || hw->flops <= 0)
		return 0;
	return ns_of(f / gemm_rate(hw, f / (batch > 0 ? batch : 1)));
}

static double
mem_bw(const sl_hw *hw)
{
	return hw->mem_bandwidth > 0 ? hw->mem_bandwidth : DEFAULT_MEM_BW;
}

/* Local bytes of every tensor slot of the operator (read plus written once). */
static double
slot_bytes(const sl_space *sp, int opi, int si, const int *coord)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	double b = 0;

	for (int i = 0; i < sl_op_nslots(op); i++) {
		const sl_tensor *t = &sp->g->tensors[sl_op_slot_tensor(op, i)];
		b += (double)sl_local_elems(&sp->mesh, &st->spec[i], t, coord) *
		    sl_dtype_size(t->dtype);
	}
	return b;
}

void
sl_node_compute(const sl_space *sp, int opi, int si, const int *coord,
    sl_compute *out)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_binding *b = &sp->ops[opi].bind;
	const sl_hw *hw = &sp->mesh.hw;
	int64_t loc[SL_MAX_LOOP];
	double fwd_s = 0, bwd_s = 0, ff = 0, fb = 0;
	int lay = op->layer;

	memset(out, 0, sizeof *out);
	sl_local_loop(sp, opi, si, coord, loc);
	switch (op->kind) {
	case SL_OP_MATMUL:
	case SL_OP_BMM: {
		/* Loops: batch dims..., (m), k, n: 2 x product of all. */
		double prod = 1, rows = 1;
		for (int l = 0; l < b->n_loop; l++)
			prod *= (double)loc[l];
		for (int l = 0; l < b->n_loop - 2; l++)
			rows *= (double)loc[l];
		ff = 2 * prod;
		fb = 2 * ff;
		if (hw->flops > 0) {
			double r = gemm_rate(hw, ff);
			fwd_s = ff / r;
			bwd_s = fb / r;
		}
		(void)rows;
		break;
	}
	case SL_OP_ATTENTION: {
		/* QK^T and PV over b x heads x s x s x d, causal: half computed. */
		const sl_tensor *x = &sp->g->tensors[op->in[0]];
		int64_t kvh = op->kv_heads > 0 ? op->kv_heads : op->heads;
		double d = (double)x->dims[2] / (double)(op->heads + 2 * kvh);
		double s = (double)b->size[1];
		double rate;
		ff = 4.0 * (double)loc[0] * (double)loc[2] * s * s * d * 0.5;
		fb = 2.5 * ff;	/* dQ, dK, dV and the recomputed scores */
		rate = hw->attention_flops > 0 ? hw->attention_flops : gemm_rate(hw, ff);
		if (hw->flops > 0) {
			fwd_s = ff / rate;
			bwd_s = fb / rate;
		}
		if (sp->opts.recipe.attention == SL_ATTN_NAIVE) {
			/* The s^2 scores go through memory: write and read them. */
			double sb = 2.0 * (double)loc[0] * (double)loc[2] * s * s;
			fwd_s += 3 * sb / mem_bw(hw);
			bwd_s += 6 * sb / mem_bw(hw);
		}
		break;
	}
	default:
		fwd_s = slot_bytes(sp, opi, si, coord) / mem_bw(hw);
		bwd_s = 2 * fwd_s;
		break;
	}
	out->flops_fwd = (int64_t)ff;
	out->flops_bwd = (int64_t)fb;
	out->fwd_ns = ns_of(fwd_s);
	out->bwd_ns = ns_of(bwd_s);
	if (lay >= 0 && sp->layer_recompute != NULL) {
		sl_recompute r = sp->layer_recompute[lay];
		if (r == SL_RECOMP_FULL ||
		    (r == SL_RECOMP_SELECTIVE && op->kind == SL_OP_ATTENTION &&
		    sp->opts.recipe.attention == SL_ATTN_NAIVE))
			out->recompute_ns = out->fwd_ns;
	}
}
