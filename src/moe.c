/*
 * moe.c: what a plan does with a model's mixtures of experts, as the
 * frameworks say it.  It reads a graph's mixtures back (experts, top-k,
 * their widths, shared experts, which layers, the capacity factor, latent
 * attention) and the layout a plan gives its experts over the stage
 * sub-mesh (expert parallel and expert tensor parallel degrees, the token
 * dispatcher, whether the ranks are ordered as Megatron-LM orders them).
 * The search and the cost model never read this file: it describes plans.
 * Megatron-LM's MoE arguments and its checks of them, which name its
 * options, are written by pipe_export.c from these.
 *
 * Megatron-LM's rules, and where each is written:
 *   megatron/training/arguments.py, validate_args: num_experts a multiple
 *     of --expert-model-parallel-size; expert parallelism not with fp16;
 *     --expert-tensor-parallel-size defaults to the tensor-parallel size;
 *     --moe-grouped-gemm only with bf16.
 *   megatron/core/transformer/transformer_config.py, __post_init__: expert
 *     and tensor parallelism together need sequence parallelism;
 *     --moe-expert-capacity-factor with the alltoall dispatcher and an
 *     aux_loss (or seq_aux_loss, global_aux_loss, none) load balancing;
 *     the expert bias of aux-loss-free routing with the sigmoid score.
 *   megatron/core/parallel_state.py, initialize_model_parallel: the expert
 *     ranks are a second rank generator over the same world, expert tensor
 *     parallel innermost, then expert parallel, then expert data parallel
 *     (cp=1), so that world / pp must be a multiple of ETP x EP and expert
 *     parallelism takes its ranks from those of data parallelism times
 *     context parallelism (and, with ETP below TP, of tensor parallelism:
 *     "MoE parallel folding").
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ the model */

static const sl_op *
layer_kind(const sl_graph *g, int l, sl_op_kind k)
{
	const sl_layer *ly = &g->layers[l];

	for (int i = ly->first_op; i < ly->first_op + ly->n_ops; i++)
		if (g->ops[i].kind == k)
			return &g->ops[i];
	return NULL;
}

int
sl_moe_arch_of(const sl_graph *g, sl_moe_arch *a)
{
	int first = -1, run = 0, o = 0;
	bool regular = true;

	memset(a, 0, sizeof *a);
	a->layers = g->n_layers;
	for (int l = 0; l < g->n_layers; l++) {
		const sl_op *ex = layer_kind(g, l, SL_OP_EXPERTS);
		const sl_op *att = layer_kind(g, l, SL_OP_ATTENTION);

		if (att != NULL && l == 0) {
			sl_attn_dims ad;
			sl_attention_dims(g, att, &ad);
			if (ad.n_act == 3) {
				/* latent attention: kv_b reads the latent, q_a the
				 * query's (gen.c's names) */
				const sl_tensor *kv = &g->tensors[att->in[1]];
				const sl_op *kvb = &g->ops[kv->producer];
				const sl_tensor *lat = &g->tensors[kvb->in[1]];
				a->kv_lora = lat->dims[0];
				a->qk_rope = ad.rope;
				a->qk_nope = ad.dqk - ad.rope;
				a->v_head = ad.dv;
				{
					/* the query's matmul reads the hidden size
					 * (no compression) or its q_lora latent */
					const sl_op *qb = &g->ops[g->tensors[att->in[0]].producer];
					const sl_tensor *qw = &g->tensors[qb->in[1]];
					int64_t h = g->tensors[g->ops[g->layers[l].first_op].in[0]].dims[2];
					a->q_lora = qw->dims[0] == h ? 0 : qw->dims[0];
				}
			}
		}
		if (ex == NULL)
			continue;
		a->moe_layers++;
		if (first < 0) {
			const sl_tensor *w2 = &g->tensors[ex->in[2]];
			const sl_op *d = &g->ops[g->tensors[ex->in[0]].producer];
			const sl_layer *ly = &g->layers[l];

			first = l;
			a->experts = w2->dims[0];
			a->moe_ffn = w2->dims[1];
			a->topk = ex->topk;
			a->gated = ex->gated;
			a->expert_bias = ex->n_in == 5;
			a->capacity = d->kind == SL_OP_DISPATCH ? d->capacity : 0;
			for (int i = ly->first_op; i < ly->first_op + ly->n_ops; i++) {
				const sl_op *op = &g->ops[i];
				if (op->kind == SL_OP_ROUTER) {
					const sl_op *gate = &g->ops[g->tensors[op->in[0]].producer];
					a->score_bias = op->n_in == 2;
					a->router_bias = gate->n_in == 3;
				}
				if (op->kind == SL_OP_SIGMOID)
					a->shared_gate = true;
				if (op->kind == SL_OP_MATMUL &&
				    strstr(op->name, ".shared_down") != NULL)
					a->shared_ffn = g->tensors[op->in[1]].dims[0];
			}
		}
	}
	if (a->moe_layers == 0)
		return SL_OK;
	/* --moe-layer-freq: 1 when every layer is a mixture, else the
	 * pattern of 0 (dense) and 1 (MoE) in runs */
	for (int l = 0; l < g->n_layers; l++)
		regular = regular && layer_kind(g, l, SL_OP_EXPERTS) != NULL;
	if (regular) {
		snprintf(a->layer_freq, sizeof a->layer_freq, "1");
		return SL_OK;
	}
	o = snprintf(a->layer_freq, sizeof a->layer_freq, "(");
	for (int l = 0; l < g->n_layers; l += run) {
		bool m = layer_kind(g, l, SL_OP_EXPERTS) != NULL;
		for (run = 1; l + run < g->n_layers &&
		    (layer_kind(g, l + run, SL_OP_EXPERTS) != NULL) == m; run++)
			;
		if ((size_t)o < sizeof a->layer_freq)
			o += snprintf(a->layer_freq + o, sizeof a->layer_freq - o,
			    "%s[%d]*%d", l ? "+" : "", m ? 1 : 0, run);
	}
	if ((size_t)o < sizeof a->layer_freq)
		snprintf(a->layer_freq + o, sizeof a->layer_freq - o, ")");
	return SL_OK;
}

/* ----------------------------------------------------------- the layout */

void
sl_moe_layout_init(sl_moe_layout *l)
{
	memset(l, 0, sizeof *l);
	l->ep = l->etp = 1;
	l->uniform = true;
	l->megatron = true;
}

/* The role of a loop dimension an axis splits in operator op, or NONE. */
static sl_loop_role
axis_role(const sl_space *sp, int op, int strat, int a)
{
	const sl_binding *b = sp->ops[op].bind;
	const sl_strategy *st = &sp->ops[op].strat[strat];

	for (int l = 0; l < b->n_loop; l++)
		if (st->loop_axes[l] & (1u << a))
			return b->role[l];
	return SL_LOOP_NONE;
}

void
sl_moe_layout_add(const sl_space *sp, int op, int strat, sl_moe_layout *l)
{
	const sl_mesh *m = &sp->mesh;
	sl_op_kind k = sp->g->ops[op].kind;
	uint8_t ep = 0, etp = 0, tok = 0;
	bool gather = false;

	if (k != SL_OP_EXPERTS && k != SL_OP_DISPATCH && k != SL_OP_COMBINE)
		return;
	for (int a = 0; a < m->n_axes; a++) {
		sl_loop_role r = axis_role(sp, op, strat, a);
		if (m->axes[a].size <= 1)
			continue;
		if (r == SL_LOOP_EXPERT)
			ep |= (uint8_t)(1u << a);
		else if (r == SL_LOOP_COL)
			etp |= (uint8_t)(1u << a);
		else if (r == SL_LOOP_DP || r == SL_LOOP_SEQ)
			tok |= (uint8_t)(1u << a);
		else if (k == SL_OP_EXPERTS && l->megatron) {
			/* experts whole on an axis: every rank of it computes
			 * the same tokens, which no framework does */
			l->megatron = false;
			snprintf(l->why, sizeof l->why, _("\"%s\" computes the same "
			    "experts' tokens on every device of axis %d"),
			    sp->g->ops[op].name, a);
		}
	}
	if (k != SL_OP_EXPERTS) {
		/* a dispatcher that splits the experts reads every token of
		 * the group (Megatron-LM's allgather dispatcher); one that
		 * splits the tokens sends them all-to-all */
		gather = ep != 0;
		if (l->n_dispatch++ == 0)
			l->allgather = gather;
		else if (l->allgather != gather)
			l->uniform = false;
		return;
	}
	if (l->n_experts++ == 0) {
		l->ep_axes = ep;
		l->etp_axes = etp;
		l->ep = sl_axes_parts(m, ep);
		l->etp = sl_axes_parts(m, etp);
	} else if (l->ep_axes != ep || l->etp_axes != etp) {
		l->uniform = false;
	}
}

void
sl_moe_layout_finish(const sl_mesh *m, sl_moe_layout *l)
{
	int stage = 0;	/* 0 expert tensor parallel, 1 expert parallel, 2 data */

	if (!l->uniform) {
		l->megatron = false;
		snprintf(l->why, sizeof l->why, "%s", _("the MoE layers lay their "
		    "experts out differently"));
		return;
	}
	/* parallel_state.py: expert ranks are ETP innermost, then EP, then
	 * expert data parallel; the inner axis of the sub-mesh is the
	 * innermost (consecutive ranks) */
	for (int a = m->n_axes - 1; a >= 0 && l->megatron; a--) {
		int role = (l->etp_axes & (1u << a)) ? 0 :
		    (l->ep_axes & (1u << a)) ? 1 : 2;
		if (m->axes[a].size <= 1)
			continue;
		if (role < stage) {
			l->megatron = false;
			snprintf(l->why, sizeof l->why, _("experts split over axis %d "
			    "%s the axis inside it, where Megatron-LM puts expert "
			    "tensor parallelism innermost, then expert parallelism"),
			    a, role == 0 ? _("by their width, outside") :
			    _("by expert, outside a data-parallel"));
		}
		stage = role > stage ? role : stage;
	}
}

