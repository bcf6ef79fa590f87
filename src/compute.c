/*
 * compute.c: how long an operator's shard computes.  Each operator runs as a
 * few kernels (a table by kind); each kernel takes the longest of its three
 * bounds (a roofline with a launch floor):
 *
 *   - its FLOPs at the throughput the hardware profile measured for a
 *     problem of that size (matmuls; attention at the fused-attention rate),
 *   - its bytes (read plus written) at the profile's memory bandwidth,
 *   - the profile's launch overhead: the least time a kernel takes from
 *     issue to issue, which bounds small kernels (tensor-parallel shards).
 *
 * Backward costs twice the forward FLOPs of a matmul (input and weight
 * gradients) and twice the bytes of the others.  A layer that recomputes
 * runs its forward again in backward.  doc/cost-model.md, "Compute time",
 * has the formulas and doc/validation.md their comparison with an H100.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

#define DEFAULT_MEM_BW 2.0e12
#define DEFAULT_EFFICIENCY 0.7
/* Share of the dense peak an unaligned matmul reaches without a measured
 * figure: the align1 kernels' 123 TFLOP/s on an H100 and on an H200, of
 * 989 (doc/cost-model.md, "Unaligned matmuls"). */
#define DEFAULT_UNALIGNED_SHARE 0.125

/* Measured points, interpolated in log(flops), flat beyond both ends. */
static double
points_rate(const sl_gemm_point *p, int n, double f)
{
	if (f <= p[0].flops)
		return p[0].achieved;
	for (int i = 1; i < n; i++)
		if (f <= p[i].flops) {
			double t = (log(f) - log(p[i - 1].flops)) /
			    (log(p[i].flops) - log(p[i - 1].flops));
			return p[i - 1].achieved + t * (p[i].achieved - p[i - 1].achieved);
		}
	return p[n - 1].achieved;
}

/* Achieved FLOP/s for one matmul of f FLOPs: the profile's measured points;
 * the peak times an efficiency without them. */
double
sl_gemm_rate(const sl_hw *hw, double f)
{
	double eff = hw->matmul_efficiency > 0 ? hw->matmul_efficiency : DEFAULT_EFFICIENCY;

	if (hw->n_gemm <= 0)
		return hw->flops * eff;
	return points_rate(hw->gemm, hw->n_gemm, f);
}

/*
 * A matmul whose leading dimensions are not all multiples of 16 bytes
 * runs on cuBLAS's align1 kernels: cuBLAS documentation, "Tensor Core
 * Usage", asks that pointers and every leading dimension be multiples of
 * 16 bytes for its vectorized tensor-core kernels.  Row-major x [m, k],
 * w [k, n] (or [n, k]) and y [m, n] lead with k and n, forward and in
 * both gradients; m leads nothing.  Measured: GPT-2's vocabulary of
 * 50257 puts the LM head's three gemms on
 * cutlass_75_tensorop_bf16_s1688gemm_..._align1 at 95-150 TFLOP/s on an
 * H100 and an H200 (tests/data/fidelity/kernels-*.jsonl).
 */
static bool
matmul_aligned(int64_t k, int64_t n, int width)
{
	int64_t e = width > 0 && width < 16 ? 16 / width : 1;

	return k % e == 0 && n % e == 0;
}

/* FLOP/s of an unaligned matmul of f FLOPs: the profile's figure, else
 * DEFAULT_UNALIGNED_SHARE of the peak; never above the aligned rate. */
static double
unaligned_rate(const sl_hw *hw, double f)
{
	double r = hw->unaligned_flops > 0 ? hw->unaligned_flops :
	    hw->flops * DEFAULT_UNALIGNED_SHARE;
	double a = sl_gemm_rate(hw, f);

	return r < a ? r : a;
}

/* Fused attention of f FLOPs forward plus backward: the profile's points,
 * else its single rate, else the matmul rate. */
static double
attention_rate(const sl_hw *hw, double f)
{
	if (hw->n_attention > 0)
		return points_rate(hw->attention, hw->n_attention, f);
	if (hw->attention_flops > 0)
		return hw->attention_flops;
	return sl_gemm_rate(hw, f);
}

/*
 * Share of the s x s query-key pairs a causal attention computes: half,
 * or with a sliding window of w keys, sum over queries of min(i + 1, w)
 * = s w - w (w - 1) / 2 of the s^2.
 */
static double
causal_share(int64_t s, int64_t w)
{
	double S = (double)s, W = (double)w;

	if (w <= 0 || w >= s)
		return 0.5;
	return (S * W - W * (W - 1) / 2) / (S * S);
}

double
sl_attention_flops(const sl_graph *g, const sl_op *op, int64_t batch,
    int64_t heads)
{
	const sl_tensor *x = &g->tensors[op->in[0]];
	double s = (double)x->dims[1];
	sl_attn_dims ad;

	sl_attention_dims(g, op, &ad);
	if (batch <= 0)
		batch = x->dims[0];
	if (heads <= 0)
		heads = op->heads;
	/* QK^T (2 b h s^2 dqk) and PV (2 b h s^2 dv), causal: the pairs
	 * computed (a half, or what a sliding window leaves). */
	return 2.0 * (double)batch * (double)heads * s * s *
	    (double)(ad.dqk + ad.dv) * causal_share(x->dims[1], op->window);
}

/*
 * FP8 matmul FLOP/s for one problem of f FLOPs: the profile's FP8 points,
 * else the bf16 rate at that size times the FP8 peak over the bf16 peak:
 * the same fraction of the peak, as torchao's float8 roofline assumes of
 * large GEMMs (torchao/testing/training/roofline_utils.py,
 * pct_achievable_gemm_tops the same for both).
 */
static double
fp8_rate(const sl_hw *hw, double f)
{
	if (hw->n_gemm_fp8 > 0)
		return points_rate(hw->gemm_fp8, hw->n_gemm_fp8, f);
	return sl_gemm_rate(hw, f) * (hw->fp8_flops > 0 && hw->flops > 0 ?
	    hw->fp8_flops / hw->flops : 1);
}

static int64_t
ns_of(double seconds)
{
	double ns = seconds * 1e9;

	if (!(ns >= 0))
		return 0;
	return ns >= 9.2e18 ? INT64_MAX : (int64_t)(ns + 0.5);
}

static double
mem_bw(const sl_hw *hw)
{
	return hw->mem_bandwidth > 0 ? hw->mem_bandwidth : DEFAULT_MEM_BW;
}

/* The optimizer step's kernels: the profile's measured rate, else the
 * share of the copy bandwidth an H100 measured (SL_OPTIM_BW_SHARE). */
static double
optim_bw(const sl_hw *hw)
{
	return hw->optim_bandwidth > 0 ? hw->optim_bandwidth :
	    mem_bw(hw) * SL_OPTIM_BW_SHARE;
}

/* Seconds of k kernels sharing flops f at rate r and bytes b: each takes
 * the longest of its FLOP time, its memory time and the launch overhead. */
static double
kernels_s(const sl_hw *hw, int k, double f, double r, double b)
{
	double t = 0;

	if (k <= 0)
		return 0;
	if (f > 0 && r > 0)
		t = f / r / k;
	if (b / mem_bw(hw) / k > t)
		t = b / mem_bw(hw) / k;
	if (hw->launch_overhead > t)
		t = hw->launch_overhead;
	return k * t;
}

int64_t
sl_gemm_ns(const sl_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch)
{
	double f1 = 2.0 * (double)m * (double)n * (double)k;
	double nb = batch > 0 ? (double)batch : 1;
	double bytes = 2.0 * nb * ((double)m * k + (double)k * n + (double)m * n);

	if (f1 <= 0 || hw->flops <= 0)
		return 0;
	return ns_of(kernels_s(hw, 1, f1 * nb, sl_gemm_rate(hw, f1 * nb), bytes));
}

/*
 * Local bytes of every tensor slot of the operator (read plus written
 * once), at the widths the step moves them (sl_recipe_widths).  A matmul
 * or attention under autocast reads the bf16 copy of an fp32 input: the
 * copy is made by a cast kernel forward (4 bytes read, 2 written per
 * element), in *cast_elems and *casts (torch autocast's cast of each fp32
 * argument of a lower-precision op, aten/src/ATen/autocast_mode.cpp,
 * cached_cast; of a weight once per forward, its cache), and where the
 * input has a gradient the gradient is cast back to fp32 backward (2
 * read, 4 written; the copy's ToCopyBackward), in *bwd_elems and
 * *bwd_casts: data and frozen weights take no backward cast.
 */
static double
slot_bytes(const sl_space *sp, int opi, int si, const int *coord,
    double *cast_elems, int *casts, double *bwd_elems, int *bwd_casts)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	bool lowp = sp->opts.recipe.precision == SL_PREC_AMP &&
	    (op->kind == SL_OP_MATMUL || op->kind == SL_OP_BMM ||
	    op->kind == SL_OP_ATTENTION);
	bool fp8 = sl_fp8_matmul(sp, op);
	double b = 0;

	*cast_elems = *bwd_elems = 0;
	*casts = *bwd_casts = 0;
	for (int i = 0; i < sl_op_nslots(op); i++) {
		int ti = sl_op_slot_tensor(op, i);
		const sl_tensor *t = &sp->g->tensors[ti];
		double e = (double)sl_local_elems(&sp->mesh, &st->spec[i], t, coord);
		int w = sp->width[ti];

		if (lowp && i < op->n_in && w == 4 && (t->dtype == SL_DT_F32 ||
		    t->dtype == SL_DT_F16 || t->dtype == SL_DT_BF16)) {
			*cast_elems += e;
			(*casts)++;
			if (sl_space_grad(sp, ti)) {
				*bwd_elems += e;
				(*bwd_casts)++;
			}
			w = 2;
		}
		if (fp8 && i < 2)
			w = 1;		/* the FP8 GEMM reads its FP8 operands */
		b += e * w;
	}
	return b;
}

/* Seconds of one gemm of 2 m n k FLOPs reading and writing bytes. */
static double
gemm_s(const sl_hw *hw, double m, double n, double k, double bytes)
{
	double f = 2 * m * n * k;

	return kernels_s(hw, 1, f, sl_gemm_rate(hw, f), bytes);
}

/*
 * A LoRA matmul's adapters on its shard (m rows, k inputs; per adapter n
 * of its columns, rank r), as PEFT runs them (peft/tuners/lora/layer.py,
 * Linear.forward): forward x A, then (x A) B scaled and added to y;
 * backward dB = (x A)^T dY, d(x A) = dY B^T, dA = x^T d(x A) and, when x
 * has a gradient, d(x A) A^T added to it.  Rank 8 to 64 makes each a thin
 * gemm that its bytes (bf16) or the launch floor bound.
 */
static void
adapter_compute(const sl_space *sp, int opi, int si, const int *coord,
    double *ff, double *fb, double *tf, double *tb)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_hw *hw = &sp->mesh.hw;
	const sl_spec *ws = &sp->ops[opi].strat[si].spec[1];
	const sl_tensor *w = &sp->g->tensors[op->in[1]];
	const sl_tensor *y = &sp->g->tensors[op->out[0]];
	const sl_spec *ys = &sp->ops[opi].strat[si].spec[op->n_in];
	int parts = sp->adapter[opi].parts;
	double r = sp->opts.recipe.lora_rank, k, n, m, last;
	int64_t a, b;
	bool dx = sl_space_grad(sp, op->in[0]);

	*ff = *fb = *tf = *tb = 0;
	if (parts <= 0)
		return;
	sl_adapter_local(sp, opi, si, coord, &a, &b);
	k = (double)sl_local_dim(&sp->mesh, ws, 0, w->dims[0], coord);
	n = (double)b / r / parts;
	last = (double)sl_local_dim(&sp->mesh, ys, y->rank - 1,
	    y->dims[y->rank - 1], coord);
	m = last > 0 ? (double)sl_local_elems(&sp->mesh, ys, y, coord) / last : 0;
	for (int p = 0; p < parts; p++) {
		*ff += 2 * m * k * r + 2 * m * r * n;
		*tf += gemm_s(hw, m, r, k, 2 * (m * k + k * r + m * r)) +
		    gemm_s(hw, m, n, r, 2 * (m * r + r * n + m * n)) +
		    kernels_s(hw, 1, 0, 0, 2 * 3 * m * n);
		*fb += 2 * m * r * n * 2 + 2 * m * k * r * (dx ? 2 : 1);
		*tb += gemm_s(hw, r, n, m, 2 * (m * r + m * n + r * n)) +
		    gemm_s(hw, m, r, n, 2 * (m * n + r * n + m * r)) +
		    gemm_s(hw, k, r, m, 2 * (m * k + m * r + k * r));
		if (dx)
			*tb += gemm_s(hw, m, k, r, 2 * (m * r + k * r + m * k)) +
			    kernels_s(hw, 1, 0, 0, 2 * 3 * m * k);
	}
}

/*
 * What backward does for operator opi under LoRA, where most weights are
 * frozen: nothing when no output gets a gradient; a frozen matmul forms
 * its input's gradient (when that has one) and no weight gradient; a norm
 * with frozen scales no scale gradients.  *fb_mul multiplies the forward
 * FLOPs, *bytes_mul the slots' bytes, *kb the kernels.  Returns false when
 * the recipe trains every weight (the kind's own rule holds).
 */
static bool
frozen_backward(const sl_space *sp, int opi, double *fb_mul, double *bytes_mul,
    int *kb)
{
	const sl_op *op = &sp->g->ops[opi];
	bool any = false;

	if (!sl_recipe_frozen(&sp->opts.recipe))
		return false;
	for (int j = 0; j < op->n_out; j++)
		any = any || sl_space_grad(sp, op->out[j]);
	*fb_mul = 2;
	*bytes_mul = 2;
	*kb = sl_kinds[op->kind].kernels[1];
	if (!any) {
		*fb_mul = *bytes_mul = 0;
		*kb = 0;
	} else if (op->kind == SL_OP_MATMUL) {
		bool dx = sl_space_grad(sp, op->in[0]);
		*fb_mul = *bytes_mul = dx ? 1 : 0;
		*kb = dx ? 1 : 0;
	} else if ((op->kind == SL_OP_LAYERNORM || op->kind == SL_OP_RMSNORM) &&
	    op->n_in > 1 && *kb > 1) {
		(*kb)--;
	}
	return true;
}

/*
 * A linear layer under Transformer Engine's FP8 (--precision fp8), f FLOPs
 * forward: its GEMMs run at the FP8 rate (fprop on E4M3 operands, dgrad
 * and wgrad on E5M2 gradients, transformer_engine's HYBRID format) and
 * read their FP8 operands (slot_bytes); casts with transpose write both
 * layouts the GEMMs read, 2 bytes read and 1 + 1 written an element: the
 * input's forward (unless a norm or an activation produced it: TE's
 * LayerNormLinear and LayerNormMLP write their outputs in FP8), the
 * output gradient's backward, and the weight's once per optimizer step
 * (is_first_microbatch: the copy is kept for the step's other
 * micro-batches), counted with the optimizer.  Returns the FP8 rate.
 */
static double
fp8_matmul(const sl_space *sp, int opi, int si, const int *coord, double f,
    double *xb_f, double *xb_b, int *kf, int *kb, sl_compute *out)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_graph *g = sp->g;
	const sl_tensor *x = &g->tensors[op->in[0]], *w = &g->tensors[op->in[1]];
	const sl_tensor *y = &g->tensors[op->out[0]];
	const sl_hw *hw = &sp->mesh.hw;
	double xe = (double)sl_local_elems(&sp->mesh, &st->spec[0], x, coord);
	double we = (double)sl_local_elems(&sp->mesh, &st->spec[1], w, coord);
	double ye = (double)sl_local_elems(&sp->mesh, &st->spec[op->n_in], y, coord);
	sl_op_kind pk = x->producer >= 0 ? g->ops[x->producer].kind : SL_OP_KIND_COUNT;

	if (pk != SL_OP_LAYERNORM && pk != SL_OP_RMSNORM && pk != SL_OP_GELU &&
	    pk != SL_OP_SILU) {
		*xb_f += 4 * xe;
		(*kf)++;
	}
	*xb_b += 4 * ye;
	(*kb)++;
	out->optim_ns = sl_add_sat(out->optim_ns, ns_of(4 * we / optim_bw(hw)));
	return fp8_rate(hw, f);
}

int64_t
sl_optim_ns(const sl_space *sp, int64_t elems)
{
	return ns_of((double)elems * sl_recipe_optim_bytes(&sp->opts.recipe) /
	    optim_bw(&sp->mesh.hw));
}

/* The parameter elements of an operator's states on a device: its state
 * items (space.c, sl_node_items: the ZeRO shard), one per parameter; and
 * those of its optimizer states, which the optimizer step updates (fewer
 * under recipe.shard_states). */
struct state_elems {
	int64_t params, optim;
};

static void
param_item(void *ctx, const sl_mem_item *it)
{
	struct state_elems *e = ctx;

	if (it->what != SL_WHAT_STATE)
		return;
	/* a frozen weight (LoRA) takes no optimizer step */
	if (it->cat == SL_CAT_PARAMS && !it->frozen)
		e->params += it->elems;
	else if (it->cat == SL_CAT_OPTIM)
		e->optim += it->elems;
}

/*
 * Under recipe.shard_states (Megatron-LM's distributed optimizer, ZeRO-1
 * and -2) each rank that holds the same piece of a weight updates a share
 * of it, and the updated weights are all-gathered over those ranks after
 * the step, at the weight's width.  DeepSpeed gathers after the step
 * (runtime/zero/stage_1_and_2.py, step: all_gather_dp_groups); Megatron-LM
 * with --overlap-param-gather gathers each bucket as the next step's
 * forward reaches it (megatron/core/distributed/param_and_grad_buffer.py),
 * hidden behind that forward, so nothing of it is counted then; so does
 * the per-operator plan (free), whose states sharding is the search's
 * choice among the frameworks' (sl_hybrid_search) and runs as the best of
 * them does, as FSDP2 also prefetches the next module's all-gather during
 * forward on its own stream (torch/distributed/fsdp/_fully_shard/
 * _fsdp_param_group.py, unshard).
 */
static int64_t
shard_gather_ns(const sl_space *sp, int opi, int si, const int *coord)
{
	const sl_recipe *r = &sp->opts.recipe;
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_mesh *m = &sp->mesh;
	int64_t ns = 0;

	/* under LoRA the frozen weights do not change and the adapters'
	 * gather is a few megabytes: nothing counted */
	if (r->shard_states < 1 || sl_recipe_frozen(r) ||
	    ((r->framework == SL_FW_MEGATRON || r->framework == SL_FW_FREE) && !r->no_grad_overlap))
		return 0;
	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *t = &sp->g->tensors[op->in[i]];
		uint8_t rep;
		int64_t bytes;

		if (sp->owner == NULL || sp->owner[op->in[i]] != opi ||
		    st->spec[i].zero != 0)
			continue;
		rep = sl_grad_axes(sp->ops[opi].bind, st, i, op->n_in);
		bytes = sl_mul_sat(sl_recipe_part_bytes(r, SL_PART_WEIGHT),
		    sl_local_elems(m, &st->spec[i], t, coord));
		for (int a = 0; a < m->n_axes; a++)
			if ((rep & (1u << a)) && m->axes[a].size > 1)
				ns = sl_add_sat(ns, sl_coll_time(SL_COLL_ALL_GATHER,
				    m->axes[a].size, bytes, &m->axes[a].link));
	}
	return ns;
}

/* Bytes/s of an elementwise kernel PyTorch does not vectorize: the
 * profile's measured figure, else the copy bandwidth. */
static double
unvec_bw(const sl_hw *hw)
{
	return hw->unvec_bandwidth > 0 ? hw->unvec_bandwidth : mem_bw(hw);
}

/* Seconds of one elementwise kernel moving bytes at bw, or its launch. */
static double
ew_s(const sl_hw *hw, double bytes, double bw)
{
	double t = bytes / bw;

	return t > hw->launch_overhead ? t : hw->launch_overhead;
}

/*
 * Naive attention's kernels (sl_node_compute): the rate of its batched
 * gemms and the bytes they move on the scores (*xb_f, *xb_b; *kf, *kb
 * gemms), and the seconds of its elementwise kernels each way (*ew_f,
 * *ew_b), which run one after another and add to the gemms' time.
 * Bytes per score element: q the scores' width (the matmuls'), p the
 * probabilities' (fp32 under autocast, else q); n scores on the shard.
 *
 * As PyTorch runs a layer's eager attention (torch_step.py's GPTLayer and
 * LlamaLayer, Hugging Face's eager_attention_forward): the gemms write
 * QK^T (q) and P.V reads P (q); backward dP is written and P read for dV
 * (2q), dS read for dQ and dK (2q).  Forward elementwise:
 *  - the scale, a tensor-by-scalar kernel (2q);
 *  - masked_fill: a contiguous clone, a cudaMemcpy (2q), then masked_fill_
 *    whose mask broadcasts over batch and heads, so TensorIterator cannot
 *    vectorize it (2q, unvectorized) (aten/src/ATen/native/
 *    TensorAdvancedIndexing.cpp, masked_fill: clone, then masked_fill_);
 *  - under autocast, softmax is an fp32 op that casts its bf16 input
 *    (aten/src/ATen/autocast_mode.cpp, softmax under fp32_set_opt_dtype;
 *    aten/src/ATen/native/SoftMax.cpp, softmax: toType then _softmax): a
 *    dtype-converting copy (q + p, unvectorized: its loads cast);
 *  - softmax (2p); dropout of P, fused, with its 1-byte mask (2p + 1);
 *  - under autocast, P cast to bf16 for P.V (p + q; vectorized:
 *    aten/src/ATen/native/cuda/Copy.cu, bfloat16_copy_kernel_cuda).
 * Backward, in reverse: the cast's gradient to fp32 (q + p, unvectorized);
 * dropout's, mask times scale (2p + 1); softmax's, which first multiplies
 * the gradient by the output in a kernel of its own, then reads that and
 * the output (3p + 3p: aten/src/ATen/native/cuda/SoftMax.cu,
 * softmax_backward_cuda_out, tmp = grad * output); the first cast's
 * gradient back to q (p + q); masked_fill's, the gradient's clone and
 * masked_fill_ again (2q + 2q unvectorized: tools/autograd/
 * derivatives.yaml, masked_fill.Scalar: grad.masked_fill(mask, 0)); the
 * scale's (2q).  Under bf16 or fp32 there are no casts and p = q.
 *
 * Copies of the operands (2 x their width, unvectorized strided copies):
 * P.V's output [b, h, s, d] transposed to [b, s, h d] for the output
 * projection (reshape copies it); under grouped-query attention the keys
 * and values repeated to every head (repeat_interleave: expand, then a
 * contiguous copy), whose gradient sums each group back (a reduction,
 * h read, kv written); with more than one sequence on the shard, q, k and
 * v views of the fused projection cannot be folded into bmm's batch
 * without a copy (aten/src/ATen/native/LinearAlgebra.cpp, _matmul_impl:
 * reshape), nor the output's gradient in backward.  Measured on an H100
 * and an H200 (tests/data/fidelity/kernels-*.jsonl, gpt-1.7b and a 1B
 * LLaMA, naive against SDPA): the same kernels by name and count.
 */
static void
naive_attention(const sl_space *sp, const sl_op *op, const int64_t *loc,
    double s, double ff, double *rate, double *xb_f, double *xb_b, int *kf,
    int *kb, double *ew_f, double *ew_b)
{
	const sl_hw *hw = &sp->mesh.hw;
	const sl_recipe *r = &sp->opts.recipe;
	sl_attn_dims ad;
	double q = sl_recipe_act_bytes(r);
	bool amp = r->precision == SL_PREC_AMP;
	double p = amp ? 4 : q;
	double n = (double)loc[0] * (double)loc[2] * (double)loc[1] * s;
	double bw = mem_bw(hw), ubw = unvec_bw(hw), f = 0, b = 0;
	double heads = (double)loc[2], kvh, qe, ke, ve, oe;

	sl_attention_dims(sp->g, op, &ad);
	kvh = heads * (double)ad.kv_heads / (double)ad.heads;
	qe = (double)loc[0] * heads * (double)loc[1] * (double)ad.dqk;
	ke = (double)loc[0] * heads * s * (double)ad.dqk;
	ve = (double)loc[0] * heads * s * (double)ad.dv;
	oe = (double)loc[0] * heads * (double)loc[1] * (double)ad.dv;
	/* the gemms compute the masked half too */
	*rate = sl_gemm_rate(hw, ff) / 2;
	*xb_f = 2 * q * n;
	*xb_b = 4 * q * n;
	*kf = 2;
	*kb = 4;
	/* P.V's output to [b, s, h d] */
	f += ew_s(hw, 2 * q * oe, ubw);
	if (kvh < heads) {
		/* K and V to every head (kv heads read, every head written),
		 * and their gradients summed back; Megatron-LM's unfused
		 * attention too (megatron/core/transformer/
		 * dot_product_attention.py, DotProductAttention.forward) */
		double g = kvh / heads;
		f += ew_s(hw, q * (ke + ke * g), ubw) +
		    ew_s(hw, q * (ve + ve * g), ubw);
		b += ew_s(hw, q * (ke + ke * g), bw) +
		    ew_s(hw, q * (ve + ve * g), bw);
	}
	if (r->framework == SL_FW_MEGATRON) {
		/*
		 * Megatron-LM scales in the QK^T gemm (baddbmm's alpha) and
		 * fuses mask and softmax into one kernel each way
		 * (megatron/core/fusions/fused_softmax.py,
		 * FusedScaleMaskSoftmax; --masked-softmax-fusion, on by
		 * default): 2q forward, dP and P read and dS written (3q)
		 * backward; its context is permuted with .contiguous()
		 * (megatron/core/transformer/dot_product_attention.py).
		 */
		f += ew_s(hw, 2 * q * n, bw);
		b += ew_s(hw, 3 * q * n, bw);
	} else {
		f += ew_s(hw, 2 * q * n, bw) + ew_s(hw, 2 * q * n, bw) +
		    ew_s(hw, 2 * q * n, ubw) + ew_s(hw, 2 * p * n, bw);
		b += ew_s(hw, 3 * p * n, bw) + ew_s(hw, 3 * p * n, bw) +
		    ew_s(hw, 2 * q * n, bw) + ew_s(hw, 2 * q * n, ubw) +
		    ew_s(hw, 2 * q * n, bw);
		if (amp) {
			f += ew_s(hw, (q + p) * n, ubw) + ew_s(hw, (p + q) * n, bw);
			b += ew_s(hw, (q + p) * n, ubw) + ew_s(hw, (p + q) * n, bw);
		}
		if (loc[0] > 1) {
			f += ew_s(hw, 2 * q * qe, ubw);
			if (kvh >= heads)
				f += ew_s(hw, 2 * q * ke, ubw) +
				    ew_s(hw, 2 * q * ve, ubw);
			b += ew_s(hw, 2 * q * oe, ubw);
		}
	}
	if (op->p > 0) {
		f += ew_s(hw, (2 * p + 1) * n, bw);
		b += ew_s(hw, (2 * p + 1) * n, bw);
	}
	*ew_f = f;
	*ew_b = b;
}

void
sl_node_compute(const sl_space *sp, int opi, int si, const int *coord,
    sl_compute *out)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_binding *b = sp->ops[opi].bind;
	const sl_hw *hw = &sp->mesh.hw;
	int64_t loc[SL_MAX_LOOP];
	double cast_e, cast_b, bytes, ff = 0, fb = 0, rate = 0, xb_f = 0, xb_b = 0;
	double act_f = 0, act_b = 0, ew_f = 0, ew_b = 0;
	int kf = sl_kinds[op->kind].kernels[0], kb = sl_kinds[op->kind].kernels[1];
	int casts, casts_b;

	struct state_elems se = { 0, 0 };

	memset(out, 0, sizeof *out);
	sl_node_items(sp, opi, si, coord, param_item, &se);
	out->param_elems = se.params;
	out->optim_elems = se.optim;
	out->gather_ns = shard_gather_ns(sp, opi, si, coord);
	out->optim_ns = sl_add_sat(sl_optim_ns(sp, se.optim), out->gather_ns);
	if (hw->flops <= 0)
		return;
	bytes = slot_bytes(sp, opi, si, coord, &cast_e, &casts, &cast_b, &casts_b);
	for (int i = 0; i < op->n_in; i++)
		kb += sp->g->tensors[op->in[i]].role == SL_ROLE_PARAMETER &&
		    !sl_recipe_frozen(&sp->opts.recipe);
	sl_local_loop(sp, opi, si, coord, loc);
	switch (op->kind) {
	case SL_OP_MATMUL:
	case SL_OP_BMM: {
		/* Loops: batch dims..., (m), k, n: 2 x product of all. */
		double prod = 1;
		for (int l = 0; l < b->n_loop; l++)
			prod *= (double)loc[l];
		ff = 2 * prod;
		fb = 2 * ff;
		rate = sl_gemm_rate(hw, ff);
		if (sl_fp8_matmul(sp, op))
			rate = fp8_matmul(sp, opi, si, coord, ff, &xb_f, &xb_b,
			    &kf, &kb, out);
		else if (b->n_loop >= 2 && !matmul_aligned(loc[b->n_loop - 2],
		    loc[b->n_loop - 1], sl_recipe_act_bytes(&sp->opts.recipe)))
			rate = unaligned_rate(hw, ff);
		break;
	}
	case SL_OP_EXPERTS: {
		/*
		 * Grouped gemms over the local experts: fc1 (f' columns) and
		 * fc2, 2 x tokens x h x (f' + f) forward, twice that backward;
		 * one kernel runs every local expert, so its rate is that of
		 * the group's FLOPs (a batched gemm's).  Loops b, E, c, h, f.
		 */
		double tokens = (double)loc[0] * (double)loc[1] * (double)loc[2];
		double f = (double)loc[4], f1 = op->gated ? 2 * f : f;
		double e = sl_max_int(sl_recipe_act_bytes(&sp->opts.recipe),
		    sl_dtype_size(sp->g->tensors[op->in[0]].dtype));
		ff = 2 * tokens * (double)loc[3] * (f1 + f);
		fb = 2 * ff;
		rate = sl_gemm_rate(hw, ff);
		/* The activation between the grouped gemms is a kernel of its
		 * own, bound by memory (megatron/core/fusions/
		 * fused_bias_swiglu.py): forward it reads fc1's output and
		 * writes f a token, backward it reads that output and the
		 * gradient and writes fc1's gradient. */
		act_f = tokens * (f1 + f) * e;
		act_b = tokens * (f1 + f + f1) * e;
		kf--;
		kb--;
		break;
	}
	case SL_OP_ATTENTION: {
		double s = (double)b->size[1];
		ff = sl_attention_flops(sp->g, op, loc[0], loc[2]);
		fb = 2.5 * ff;	/* dQ, dK, dV and the recomputed scores */
		rate = attention_rate(hw, ff + fb);
		if (sp->opts.recipe.attention == SL_ATTN_NAIVE) {
			fb = 2 * ff;	/* dQ, dK, dV and dP */
			naive_attention(sp, op, loc, s, ff, &rate, &xb_f, &xb_b,
			    &kf, &kb, &ew_f, &ew_b);
		}
		break;
	}
	default:
		break;
	}
	{
		double fbm = 2, bm = 2, af, ab, atf, atb, tf, tb;
		int kbf;
		if (frozen_backward(sp, opi, &fbm, &bm, &kbf)) {
			/* no gradient kernel for a frozen weight */
			if (op->kind == SL_OP_MATMUL || op->kind == SL_OP_BMM)
				fb = ff * fbm;
			else if (fbm == 0)
				fb = 0;
			kb = kbf;
			xb_b = fbm == 0 ? 0 : xb_b;
			ew_b = fbm == 0 ? 0 : ew_b;
		}
		adapter_compute(sp, opi, si, coord, &af, &ab, &atf, &atb);
		tf = kernels_s(hw, kf, ff, rate, bytes + xb_f) +
		    kernels_s(hw, casts, 0, 0, 6 * cast_e) + atf + ew_f;
		tb = kernels_s(hw, kb, fb, rate, bm * bytes + xb_b) + atb + ew_b;
		if (act_f > 0) {
			tf += kernels_s(hw, 1, 0, 0, act_f);
			if (fb > 0)
				tb += kernels_s(hw, 1, 0, 0, act_b);
		}
		if (bm > 0)
			tb += kernels_s(hw, casts_b, 0, 0, 6 * cast_b);
		if (sp->adapter != NULL && sp->adapter[opi].nf4) {
			/* QLoRA: the weight dequantised from NF4 to bf16 before
			 * the forward matmul and the input gradient's */
			const sl_tensor *w = &sp->g->tensors[op->in[1]];
			int64_t e = sl_local_elems(&sp->mesh, &sp->ops[opi].strat[si].spec[1],
			    w, coord);
			double qb = (double)sl_nf4_bytes(e, true) + 2.0 * (double)e;
			tf += kernels_s(hw, 1, 0, 0, qb);
			if (kb > 0)
				tb += kernels_s(hw, 1, 0, 0, qb);
		}
		out->flops_fwd = (int64_t)(ff + af);
		out->flops_bwd = (int64_t)(fb + ab);
		out->fwd_ns = ns_of(tf);
		out->bwd_ns = ns_of(tb);
	}
	if (sl_op_recomputed(sp, opi))
		out->recompute_ns = (int64_t)llround((double)out->fwd_ns *
		    sl_op_recompute_share(sp, opi));
}

/*
 * The matrix products torchtitan's LLaMA runs for matmul v, and each
 * one's share of v's output columns: a fused qkv that an attention reads
 * whole (its only activation input) is wq, wk and wv, H, kv and kv heads
 * wide (torchtitan/models/llama3/model/model.py, Attention.forward);
 * any other matmul is one mm.
 */
static int
mm_calls(const sl_graph *g, int v, double *share)
{
	const sl_op *op = &g->ops[v];
	const sl_layer *ly = &g->layers[op->layer];

	share[0] = 1.0;
	for (int u = v + 1; u < ly->first_op + ly->n_ops; u++) {
		const sl_op *a = &g->ops[u];
		int acts = 0;
		if (a->kind != SL_OP_ATTENTION || a->in[0] != op->out[0])
			continue;
		for (int i = 0; i < a->n_in; i++)
			acts += g->tensors[a->in[i]].role == SL_ROLE_ACTIVATION;
		if (acts != 1 || a->heads < 1 || a->kv_heads < 1)
			return 1;
		share[0] = (double)a->heads / (a->heads + 2 * a->kv_heads);
		share[1] = share[2] = (double)a->kv_heads / (a->heads + 2 * a->kv_heads);
		return 3;
	}
	return 1;
}

bool
sl_layer_sac(const sl_recipe *r, const sl_op *op, sl_recompute mode)
{
	return op->layer >= 0 && mode == SL_RECOMP_SELECTIVE &&
	    r->framework == SL_FW_TORCHTITAN;
}

bool
sl_op_sac(const sl_space *sp, const sl_op *op)
{
	return sl_layer_sac(&sp->opts.recipe, op, sl_layer_recompute_of(sp, op));
}

double
sl_sac_saved_share(const sl_graph *g, int v)
{
	const sl_op *op = &g->ops[v];
	double share[3], saved = 0;
	int count = 0, n;

	if (op->layer < 0)
		return 0;
	if (op->kind == SL_OP_ATTENTION)
		return 1;
	if (op->kind != SL_OP_MATMUL)
		return 0;
	/* the mm calls of the block before v: the policy's counter starts
	 * at 0 in each checkpointed block */
	for (int u = g->layers[op->layer].first_op; u < v; u++)
		if (g->ops[u].kind == SL_OP_MATMUL)
			count += mm_calls(g, u, share);
	n = mm_calls(g, v, share);
	/* "Saves output of all compute ops, except every second mm" */
	for (int i = 0; i < n; i++)
		if ((count + i + 1) % 2 == 1)
			saved += share[i];
	return saved;
}

double
sl_recompute_share(const sl_recipe *r, const sl_graph *g, int v,
    sl_recompute mode)
{
	const sl_op *op = &g->ops[v];

	if (sl_layer_sac(r, op, mode))
		return op->kind == SL_OP_ATTENTION ? 0 :
		    1.0 - sl_sac_saved_share(g, v);
	return sl_recomputes(r, op, mode) ? 1 : 0;
}

double
sl_op_recompute_share(const sl_space *sp, int v)
{
	const sl_op *op = &sp->g->ops[v];

	if (op->layer < 0 || sp->layer_recompute == NULL)
		return 0;
	return sl_recompute_share(&sp->opts.recipe, sp->g, v,
	    (sl_recompute)sp->layer_recompute[op->layer]);
}

bool
sl_recomputes(const sl_recipe *r, const sl_op *op, sl_recompute mode)
{
	if (op->layer < 0)
		return false;
	return mode == SL_RECOMP_FULL || (mode == SL_RECOMP_SELECTIVE &&
	    op->kind == SL_OP_ATTENTION && r->attention == SL_ATTN_NAIVE);
}

bool
sl_op_recomputed(const sl_space *sp, int v)
{
	const sl_op *op = &sp->g->ops[v];

	if (op->layer < 0 || sp->layer_recompute == NULL)
		return false;
	return sl_op_recompute_share(sp, v) > 0;
}

/*
 * Model FLOPs of one operator's forward pass, as Megatron-LM counts them
 * (megatron/training/training.py, num_floating_point_operations; Narayanan
 * et al. SC21 and Korthikanti et al. 2022, appendix) and PaLM (Chowdhery et
 * al. 2022, appendix B): 2 m n k for every matrix product over the whole
 * tensors, and for attention its two products over the whole s x s score
 * matrix, 4 b h s^2 d, although a causal kernel computes half of it.
 * A mixture's experts: the products of the tokens routed to them, k a
 * token (Megatron-LM counts its MoE layers the same way: top-k times an
 * expert's MLP).  Nothing for normalisation, activations, the loss or the
 * embedding's lookup.  In double precision: a trillion-parameter step is 5e19.
 */
double
sl_op_model_flops(const sl_graph *g, const sl_op *op)
{
	const sl_tensor *x, *y;

	switch (op->kind) {
	case SL_OP_MATMUL:
	case SL_OP_BMM:
		/* every output element is a dot product over x's last dimension */
		x = &g->tensors[op->in[0]];
		y = &g->tensors[op->out[0]];
		return 2.0 * (double)sl_tensor_elems(y) * (double)x->dims[x->rank - 1];
	case SL_OP_ATTENTION:
		return 2.0 * sl_attention_flops(g, op, 0, 0);
	case SL_OP_EXPERTS: {
		/* the tokens routed (b s k; its dispatch's input gives s),
		 * not the capacity they are padded to: fc1 (h -> f') and fc2
		 * (f -> h) */
		const sl_tensor *d = &g->tensors[op->in[0]];
		const sl_tensor *w2 = &g->tensors[op->in[2]];
		double tokens = (double)d->dims[0] * (double)d->dims[1] *
		    (double)d->dims[2], f = (double)w2->dims[1];
		if (d->producer >= 0 && g->ops[d->producer].kind == SL_OP_DISPATCH) {
			const sl_tensor *t = &g->tensors[g->ops[d->producer].in[0]];
			tokens = (double)t->dims[0] * (double)t->dims[1] * op->topk;
		}
		return 2.0 * tokens * (double)d->dims[3] * ((op->gated ? 2 * f : f) + f);
	}
	default:
		return 0;
	}
}

double
sl_model_flops(const sl_graph *g)
{
	double f = 0;

	for (int v = 0; v < g->n_ops; v++)
		f += sl_op_model_flops(g, &g->ops[v]);
	/* forward, and backward twice the forward (input and weight gradients) */
	return 3.0 * f;
}

/*
 * Model FLOPs of a step under the recipe (doc/cost-model.md, "Model FLOPs
 * and MFU").  Training every weight: sl_model_flops.  Under LoRA, the work
 * the algorithm does: every forward; in backward, only where a gradient
 * flows (2x the forward where the operator has no weights, the input
 * gradient alone of a frozen matmul or experts, 1x); and the adapters'
 * products, forward 2 m k r + 2 m r n, backward dB and d(x A) (4 m r n)
 * and dA (2 m k r) and, where x has a gradient, d(x A) A^T (2 m k r).
 */
double
sl_recipe_model_flops(const sl_graph *g, const sl_recipe *r)
{
	sl_space t;
	double f = 0;

	if (!sl_recipe_frozen(r))
		return sl_model_flops(g);
	memset(&t, 0, sizeof t);
	t.g = g;
	t.opts.recipe = *r;
	sl_find_adapters(&t);
	sl_find_grads(&t);
	for (int v = 0; v < g->n_ops; v++) {
		const sl_op *op = &g->ops[v];
		double fw = sl_op_model_flops(g, op), bw = 0;
		const sl_adapter *ad = &t.adapter[v];
		bool dx = op->n_in > 0 && t.grad[op->in[0]];

		if (sl_op_backward(&t, v))
			bw = op->kind == SL_OP_MATMUL || op->kind == SL_OP_EXPERTS ?
			    (dx ? fw : 0) : 2 * fw;
		if (ad->parts > 0) {
			const sl_tensor *w = &g->tensors[op->in[1]];
			const sl_tensor *y = &g->tensors[op->out[0]];
			double m = (double)sl_tensor_elems(y) / (double)y->dims[y->rank - 1];
			double k = (double)w->dims[0], n = (double)ad->n;
			double rk = r->lora_rank, p = ad->parts;
			fw += 2 * m * k * rk * p + 2 * m * rk * n;
			bw += 4 * m * rk * n + 2 * m * k * rk * p * (dx ? 2 : 1);
		}
		f += fw + bw;
	}
	free(t.adapter);
	free(t.grad);
	return f;
}

/*
 * ZeRO-Offload (Ren et al., USENIX ATC 2021; deepspeed/runtime/zero/
 * stage_1_and_2.py with offload_optimizer): the reduced gradients are
 * copied to pinned host memory as backward produces them (G bytes an
 * element), the host's CPU Adam updates the fp32 states there, and the
 * updated weights come back (W bytes an element) before the next step.
 */
void
sl_offload_ns(const sl_hw *hw, const sl_recipe *r, int64_t elems,
    int64_t *d2h, int64_t *host)
{
	sl_link l = sl_hw_host_link(hw);
	double e = (double)elems;

	*d2h = *host = 0;
	if (elems <= 0)
		return;
	*d2h = ns_of(e * sl_recipe_state_bytes(r, SL_CAT_GRADS) / l.bandwidth +
	    l.latency);
	*host = ns_of(e / sl_hw_host_adam(hw) +
	    e * sl_recipe_state_bytes(r, SL_CAT_PARAMS) / l.bandwidth + l.latency);
}
