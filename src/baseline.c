/*
 * baseline.c: the plans other systems would run, as assignments of the same
 * strategy space, scored by the same evaluator, so that a comparison measures
 * plans and not cost models.
 *
 *   dp            every operator splits its batch over every mesh axis
 *   zero1, zero2  the dp plan with optimizer states (and gradients) divided
 *                 over all devices afterwards (not strategies of the space)
 *   zero3         the dp plan with the +z (ZeRO-3 / OSDP) variants
 *   megatron      Megatron-LM tensor parallelism on the inner mesh axis, data
 *                 parallelism on the outer one; -sp adds sequence parallelism
 *   alpa          least communication time (the frontier's high-alpha end),
 *                 optionally under a per-device memory budget
 *   colossal-auto least communication under the device memory of the profile
 *
 * Strategies are chosen by role (dp, col, row, head, vocab, seq) per mesh
 * axis: first by the name doc/cost-model.md gives them, then by matching the
 * loop dimensions each axis splits, so a renamed strategy is still found.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const struct {
	const char *name, *title;
} base_info[SL_BASE_COUNT] = {
	[SL_BASE_DP] = { "dp", N_("Data parallel") },
	[SL_BASE_ZERO1] = { "zero1", N_("ZeRO-1") },
	[SL_BASE_ZERO2] = { "zero2", N_("ZeRO-2") },
	[SL_BASE_ZERO3] = { "zero3", N_("ZeRO-3 / FSDP") },
	[SL_BASE_MEGATRON] = { "megatron", N_("Megatron-LM") },
	[SL_BASE_MEGATRON_SP] = { "megatron-sp", N_("Megatron-LM + SP") },
	[SL_BASE_ALPA] = { "alpa", N_("Alpa") },
	[SL_BASE_ALPA_BUDGET] = { "alpa-budget", N_("Alpa (budget)") },
	[SL_BASE_COLOSSAL] = { "colossal-auto", N_("Colossal-Auto") },
};

const char *
sl_baseline_name(sl_baseline_kind k)
{
	return ((int)k >= 0 && k < SL_BASE_COUNT) ? base_info[k].name : "?";
}

const char *
sl_baseline_title(sl_baseline_kind k)
{
	return ((int)k >= 0 && k < SL_BASE_COUNT) ? _(base_info[k].title) : "?";
}

int
sl_baseline_from_name(const char *s)
{
	for (int k = 0; k < SL_BASE_COUNT; k++)
		if (strcmp(base_info[k].name, s) == 0)
			return k;
	return -1;
}

void
sl_scored_plan_free(sl_scored_plan *p)
{
	if (p == NULL)
		return;
	free(p->choice);
	if (p->applicable)
		sl_eval_free(&p->ev);
	memset(p, 0, sizeof *p);
}

static void
plan_init(sl_scored_plan *out, const char *method, const char *title)
{
	memset(out, 0, sizeof *out);
	snprintf(out->method, sizeof out->method, "%s", method);
	snprintf(out->title, sizeof out->title, "%s", title);
}

static void
note_add(sl_scored_plan *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
note_add(sl_scored_plan *out, const char *fmt, ...)
{
	size_t o = strlen(out->note);
	va_list ap;

	if (o + 3 >= sizeof out->note)
		return;
	if (o > 0) {
		memcpy(out->note + o, "; ", 3);
		o += 2;
	}
	va_start(ap, fmt);
	vsnprintf(out->note + o, sizeof out->note - o, fmt, ap);
	va_end(ap);
}

/*
 * Totals of an evaluation: max, mean over devices, device-0 redundancy, and
 * the devices over capacity counted again as the evaluator counts them (a
 * ZeRO-1/2 plan holds less than the data-parallel plan it was scored as).
 */
static void
plan_totals(const sl_space *s, sl_scored_plan *p)
{
	int64_t sum = 0, mx = 0, cap = s->mesh.hw.memory_bytes;

	p->ev.n_over_capacity = 0;
	for (int d = 0; d < p->ev.n_devices; d++) {
		int64_t t = sl_mem_total(&p->ev.dev[d]);
		sum = sl_add_sat(sum, t);
		if (t > mx)
			mx = t;
		if (cap > 0 && t > cap)
			p->ev.n_over_capacity++;
	}
	p->ev.max_total = mx;
	p->max_mem = mx;
	p->mean_mem = p->ev.n_devices > 0 ? sum / p->ev.n_devices : 0;
	p->redundant = p->ev.redundant;
	p->comm_ns = p->ev.comm_ns;
}

int
sl_score_plan(const sl_space *s, const int *choice, double alpha,
    const char *method, const char *title, sl_scored_plan *out, sl_error *err)
{
	int n = s->g->n_ops;

	plan_init(out, method, title);
	if (sl_evaluate(s, choice, alpha, &out->ev, err) != SL_OK)
		return err != NULL && err->code != SL_OK ? err->code : SL_EINTERNAL;
	out->applicable = true;
	out->choice = sl_xcalloc(n > 0 ? n : 1, sizeof *out->choice);
	memcpy(out->choice, choice, n * sizeof *choice);
	plan_totals(s, out);
	return SL_OK;
}

/* ------------------------------------------------------ finding strategies */

/*
 * The name doc/cost-model.md gives a strategy that splits, per mesh axis,
 * the loop dimension of role want[a] (NULL: the axis splits nothing).
 */
static void
role_name(const sl_mesh *m, const sl_loop_role *want, bool zero, char *buf,
    size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	if (m->n_axes == 1) {
		o = snprintf(buf, len, "%s", want[0] != SL_LOOP_NONE ?
		    sl_loop_role_name(want[0]) : "rep");
	} else if (want[0] != SL_LOOP_NONE && want[0] == want[1]) {
		o = snprintf(buf, len, "%s01", sl_loop_role_name(want[0]));
	} else {
		for (int a = 0; a < m->n_axes && o < len; a++) {
			if (want[a] == SL_LOOP_NONE)
				continue;
			o += snprintf(buf + o, len - o, "%s%s%d", o ? "." : "",
			    sl_loop_role_name(want[a]), a);
		}
		if (o == 0)
			o = snprintf(buf, len, "rep");
	}
	if (zero && o < len)
		snprintf(buf + o, len - o, "+z");
}

/* Role of the loop dimension that axis a splits in strategy st, or none. */
static sl_loop_role
axis_role(const sl_space *s, int op, const sl_strategy *st, int a)
{
	const sl_binding *b = s->ops[op].bind;

	for (int l = 0; l < b->n_loop; l++)
		if (st->loop_axes[l] & (1u << a))
			return b->role[l];
	return SL_LOOP_NONE;
}

/*
 * Strategy of op that splits the role want[a] on every axis a of size > 1
 * (axes of size 1 split nothing), with or without +z; -1 if none.
 */
static int
find_roles(const sl_space *s, int op, const sl_loop_role *want, bool zero)
{
	const sl_space_op *so = &s->ops[op];
	sl_loop_role w[SL_MAX_AXES] = { SL_LOOP_NONE, SL_LOOP_NONE };
	char name[32];
	int i;

	for (int a = 0; a < s->mesh.n_axes; a++)
		w[a] = s->mesh.axes[a].size > 1 ? want[a] : SL_LOOP_NONE;
	role_name(&s->mesh, w, zero, name, sizeof name);
	i = sl_space_find_strategy(s, op, name);
	if (i >= 0 && i < so->n_strat)
		return i;
	for (i = 0; i < so->n_strat; i++) {
		const sl_strategy *st = &so->strat[i];
		bool ok = (st->zero != 0) == zero;
		for (int a = 0; ok && a < s->mesh.n_axes; a++)
			ok = axis_role(s, op, st, a) == w[a];
		if (ok)
			return i;
	}
	return -1;
}

/* Does op hold the states of a parameter (is it the parameter's owner)? */
static bool
owns_params(const sl_space *s, int op)
{
	const sl_op *o = &s->g->ops[op];

	for (int i = 0; i < o->n_in; i++) {
		int t = o->in[i];
		if (s->g->tensors[t].role == SL_ROLE_PARAMETER &&
		    (s->owner == NULL || s->owner[t] == op))
			return true;
	}
	return false;
}

/*
 * Fallback: among the strategies whose split of axis keep_axis is role
 * keep_role (keep_axis < 0: any), the one with the least resharding time
 * from the operators already chosen, then the least memory.
 */
static int
follow_inputs(const sl_space *s, const int *choice, int op, int keep_axis,
    sl_loop_role keep_role)
{
	const sl_space_op *so = &s->ops[op];
	int best = -1;
	int64_t best_ns = INT64_MAX, best_mem = INT64_MAX;

	for (int pass = 0; pass < 2 && best < 0; pass++) {
		for (int i = 0; i < so->n_strat; i++) {
			sl_mem m;
			sl_comm c;
			int64_t ns = 0, mem;

			if (pass == 0 && keep_axis >= 0 && keep_axis < s->mesh.n_axes &&
			    s->mesh.axes[keep_axis].size > 1 &&
			    axis_role(s, op, &so->strat[i], keep_axis) != keep_role)
				continue;
			if (so->strat[i].zero != 0)
				continue;
			for (int e = 0; e < s->n_edges; e++) {
				const sl_space_edge *ed = &s->edges[e];
				if (ed->dst != op || choice[ed->src] < 0)
					continue;
				sl_edge_cost(s, e, choice[ed->src], i, NULL, &m, &c);
				for (int k = 0; k < SL_COLL_COUNT; k++)
					ns = sl_add_sat(ns, c.ns[k]);
			}
			sl_node_cost(s, op, i, NULL, &m, &c);
			mem = sl_mem_total(&m);
			if (ns < best_ns || (ns == best_ns && mem < best_mem)) {
				best = i;
				best_ns = ns;
				best_mem = mem;
			}
		}
	}
	return best >= 0 ? best : 0;
}

/* --------------------------------------------------- data parallel, ZeRO */

static int
plan_dp(const sl_space *s, bool zero, int *choice, int *n_fallback)
{
	const sl_loop_role all[SL_MAX_AXES] = { SL_LOOP_DP, SL_LOOP_DP };
	const sl_loop_role outer[SL_MAX_AXES] = { SL_LOOP_DP, SL_LOOP_NONE };
	const sl_loop_role inner[SL_MAX_AXES] = { SL_LOOP_NONE, SL_LOOP_DP };

	for (int v = 0; v < s->g->n_ops; v++)
		choice[v] = -1;
	for (int v = 0; v < s->g->n_ops; v++) {
		bool z = zero && owns_params(s, v);
		int i = find_roles(s, v, all, z);

		if (i < 0 && z)
			i = find_roles(s, v, all, false);
		if (i < 0 && s->mesh.n_axes == 2) {
			if ((i = find_roles(s, v, outer, z)) < 0)
				i = find_roles(s, v, inner, z);
		}
		if (i < 0) {
			i = follow_inputs(s, choice, v, -1, SL_LOOP_NONE);
			(*n_fallback)++;
		}
		choice[v] = i;
	}
	return SL_OK;
}

/*
 * ZeRO-1 (optimizer states) and ZeRO-2 (and gradients) over the plain data
 * parallel plan.  Every parameter is replicated on all N devices there, with
 * o bytes of optimizer state and g bytes of gradient per element (the
 * recipe's: 12 and 2 for bf16).  ZeRO partitions each state over the N
 * data-parallel ranks, so device r keeps sl_piece(E, N, r) = floor(E/N)
 * (+1 for the first E mod N ranks) elements of a parameter of E elements:
 *   optimizer   o E  ->  o piece(E, N, r)
 *   gradients   g E  ->  g piece(E, N, r)       (ZeRO-2 only)
 * Replicated bytes that go away were redundant bytes, so device r's
 * redundancy drops by the same amount.  Communication is the data parallel
 * plan's: the ZeRO paper's reduce-scatter of gradients plus all-gather of
 * updated parameters moves 2 Psi like the all-reduce it replaces, and with
 * the ring formulas its time is identical, 2(N-1)/N B/beta.  The optimizer
 * step runs over a device's piece alone: its time loses the elements that
 * went (sl_optim_ns), on every device, the slowest device's kept; and the
 * all-gather of the updated weights, (N-1)/N of them at the weight's
 * width, waits for it (DeepSpeed's stage_1_and_2.py: all_gather after
 * step): counted with the optimizer.  The reduce-scatter that replaces
 * the all-reduce during backward is left as the all-reduce was.
 */
static void
zero_adjust(const sl_space *s, const int *choice, bool grads, sl_scored_plan *p)
{
	const sl_graph *g = s->g;
	int nd = p->ev.n_devices;
	int ob = sl_recipe_state_bytes(&s->opts.recipe, SL_CAT_OPTIM);
	int gb = sl_recipe_state_bytes(&s->opts.recipe, SL_CAT_GRADS);
	int wb = sl_recipe_state_bytes(&s->opts.recipe, SL_CAT_PARAMS);
	int64_t *gone = sl_xcalloc(nd, sizeof *gone), gather = 0;

	for (int t = 0; t < g->n_tensors; t++) {
		const sl_tensor *tt = &g->tensors[t];
		int own, slot = -1;
		const sl_op *o;
		const sl_spec *sp;
		uint8_t rep;
		int groups;

		if (tt->role != SL_ROLE_PARAMETER)
			continue;
		own = s->owner != NULL ? s->owner[t] : -1;
		if (own < 0)
			continue;
		o = &g->ops[own];
		for (int i = 0; i < o->n_in; i++)
			if (o->in[i] == t)
				slot = i;
		if (slot < 0)
			continue;
		sp = &s->ops[own].strat[choice[own]].spec[slot];
		if (sp->zero != 0)
			continue;
		/* devices holding the same piece of t: the axes that do not
		 * split it, and a device's rank among them */
		rep = 0;
		for (int a = 0; a < s->mesh.n_axes; a++)
			if (sl_placement(sp, tt->rank, a) == -1)
				rep |= (uint8_t)(1u << a);
		groups = sl_axes_parts(&s->mesh, rep);
		for (int a = 0; a < s->mesh.n_axes; a++)
			if (rep & (1u << a))
				gather = sl_add_sat(gather, sl_coll_time(SL_COLL_ALL_GATHER,
				    s->mesh.axes[a].size, sl_mul_sat(wb,
				    sl_local_elems(&s->mesh, sp, tt, NULL)),
				    &s->mesh.axes[a].link));
		for (int d = 0; d < nd; d++) {
			int coord[SL_MAX_AXES] = { 0, 0 };
			int64_t e, part, drop;

			sl_mesh_coords(&s->mesh, d, coord);
			e = sl_local_elems(&s->mesh, sp, tt, coord);
			part = sl_piece(e, groups, sl_axes_index(&s->mesh, rep, coord));
			drop = ob * (e - part);
			gone[d] += e - part;
			p->ev.dev[d].optim -= ob * (e - part);
			if (grads) {
				p->ev.dev[d].grads -= gb * (e - part);
				drop += gb * (e - part);
			}
			if (p->ev.dev_redundant != NULL)
				p->ev.dev_redundant[d] -= drop;
			if (d == 0)
				p->ev.redundant -= drop;
		}
	}
	p->ev.optim_ns = 0;
	for (int d = 0; d < nd; d++) {
		int coord[SL_MAX_AXES] = { 0, 0 };
		int64_t o = 0;

		sl_mesh_coords(&s->mesh, d, coord);
		for (int v = 0; v < g->n_ops; v++) {
			sl_compute c;
			sl_node_compute(s, v, choice[v], coord, &c);
			o = sl_add_sat(o, c.optim_ns);
		}
		o -= sl_optim_ns(s, gone[d]);
		if (o > p->ev.optim_ns)
			p->ev.optim_ns = o;
	}
	free(gone);
	p->ev.optim_ns = sl_add_sat(p->ev.optim_ns, gather);
	sl_eval_restep(s, &p->ev);
	plan_totals(s, p);
}

/* ------------------------------------------------------------ Megatron-LM */

/* The spec the producer of input slot i of op gives its tensor, or NULL. */
static const sl_spec *
input_spec(const sl_space *s, const int *choice, int op, int i)
{
	const sl_graph *g = s->g;
	int t = g->ops[op].in[i], p = g->tensors[t].producer;

	if (p < 0 || choice[p] < 0)
		return NULL;
	for (int k = 0; k < g->ops[p].n_out; k++)
		if (g->ops[p].out[k] == t)
			return &s->ops[p].strat[choice[p]].spec[g->ops[p].n_in + k];
	return NULL;
}

/* Role (in op's binding) of the dimension of input slot i that axis a splits. */
static sl_loop_role
input_split_role(const sl_space *s, const int *choice, int op, int i, int a)
{
	const sl_spec *sp = input_spec(s, choice, op, i);
	const sl_tensor *t = &s->g->tensors[s->g->ops[op].in[i]];
	const sl_binding *b = s->ops[op].bind;

	if (sp == NULL)
		return SL_LOOP_NONE;
	for (int d = 0; d < t->rank; d++) {
		int l = b->map[i][d];
		if ((sp->split[d] & (1u << a)) && l >= 0 && b->splittable[l])
			return b->role[l];
	}
	return SL_LOOP_NONE;
}

static bool
has_role(const sl_space *s, int op, sl_loop_role role)
{
	const sl_binding *b = s->ops[op].bind;

	for (int l = 0; l < b->n_loop; l++)
		if (b->splittable[l] && b->role[l] == role)
			return true;
	return false;
}

/*
 * Whether every reader of op's output takes it whole over a tensor-parallel
 * axis: the router (tp rule SL_TP_ROUTER), a norm, or an attention input
 * without heads (latent attention's shared rope key).  Megatron-LM keeps
 * such a matmul's weight whole on every rank, applied to the rank's tokens
 * (parallel_mode "duplicated"): the router's gate (megatron/core/
 * transformer/moe/router.py, TopKRouter) and latent attention's down
 * projections, whose latents it gathers before their norms
 * (megatron/core/transformer/multi_latent_attention.py, linear_q_down_proj
 * and linear_kv_down_proj).
 */
static bool
feeds_whole(const sl_space *s, int op)
{
	const sl_graph *g = s->g;
	const sl_op *o = &g->ops[op];
	int n = 0;

	if (o->layer < 0 || o->n_out < 1)
		return false;
	for (int v = op + 1; v < g->layers[o->layer].first_op +
	    g->layers[o->layer].n_ops && v < g->n_ops; v++)
		for (int i = 0; i < g->ops[v].n_in; i++) {
			sl_tp_rule r = sl_kinds[g->ops[v].kind].tp_rule;
			const sl_binding *b = s->ops[v].bind;
			bool heads = false;

			if (g->ops[v].in[i] != o->out[0])
				continue;
			for (int d = 0; d < g->tensors[o->out[0]].rank; d++)
				heads |= b->map[i][d] >= 0 &&
				    b->role[b->map[i][d]] == SL_LOOP_HEAD;
			if (r != SL_TP_ROUTER && r != SL_TP_SEQ &&
			    (r != SL_TP_HEAD || heads))
				return false;
			n++;
		}
	return n > 0;
}

/*
 * The tensor-parallel role Megatron-LM gives op on the inner axis, by the
 * rule of its kind (kinds.c): vocabulary-parallel embedding and
 * cross-entropy; a matmul is row-parallel when its input arrives split on
 * features (proj, fc2, down) and column-parallel otherwise (qkv, fc1, gate,
 * up, lm_head); attention splits heads; elementwise operators follow their
 * input's split; norms, and anything fed by a replicated or partial tensor,
 * are replicated, or split on the sequence with sequence parallelism.
 *
 * A matmul whose readers take its output whole keeps its weight whole
 * (feeds_whole).  A mixture's experts (megatron/core/transformer/moe/
 * token_dispatcher.py, MoEAlltoAllTokenDispatcher): the router and its gate on the rank's
 * tokens; with expert parallelism over the axis (ep), the tokens stay
 * split through dispatch and combine and the experts split by expert;
 * without (expert tensor parallel, the default of
 * --expert-tensor-parallel-size), the tokens are gathered before the
 * dispatch, the experts split by their width, and combine
 * reduce-scatters their output back to the sequence.
 */
static sl_loop_role
megatron_role(const sl_space *s, const int *choice, int op, int tp, bool sp,
    bool ep)
{
	const sl_op *o = &s->g->ops[op];
	sl_loop_role in_role = o->n_in > 0 ?
	    input_split_role(s, choice, op, 0, tp) : SL_LOOP_NONE;
	sl_loop_role seq = sp && has_role(s, op, SL_LOOP_SEQ) ? SL_LOOP_SEQ :
	    SL_LOOP_NONE;

	switch (sl_kinds[o->kind].tp_rule) {
	case SL_TP_ROUTER:
		return seq;
	case SL_TP_DISPATCH:
		return ep ? seq : SL_LOOP_NONE;
	case SL_TP_EXPERTS:
		return ep ? SL_LOOP_EXPERT : SL_LOOP_COL;
	case SL_TP_VOCAB:
		return SL_LOOP_VOCAB;
	case SL_TP_HEAD:
		return SL_LOOP_HEAD;
	case SL_TP_ROW_OR_COL:
		if (feeds_whole(s, op))
			return seq;
		return in_role == SL_LOOP_ROW ? SL_LOOP_ROW : SL_LOOP_COL;
	case SL_TP_HEAD_OR_INPUT:
		return has_role(s, op, SL_LOOP_HEAD) ? SL_LOOP_HEAD : in_role;
	case SL_TP_VOCAB_OR_SEQ:
		return in_role == SL_LOOP_VOCAB ? SL_LOOP_VOCAB : seq;
	case SL_TP_SEQ:
		return seq;
	case SL_TP_FOLLOW:
	default:
		if (in_role != SL_LOOP_NONE && in_role != SL_LOOP_DP)
			return in_role;
		return seq;
	}
}

/* ------------------------------------------------------------ frameworks */

bool
sl_strategy_roles_ok(const sl_space *s, int op, const sl_strategy *st,
    const sl_axis_role *role)
{
	for (int a = 0; a < s->mesh.n_axes; a++) {
		sl_loop_role r = axis_role(s, op, st, a);

		if (s->mesh.axes[a].size <= 1)
			continue;
		switch (role[a]) {
		case SL_AXIS_DP:
			if (r != SL_LOOP_NONE && r != SL_LOOP_DP && r != SL_LOOP_EXPERT)
				return false;
			break;
		case SL_AXIS_TP:
			if (r == SL_LOOP_DP || (st->zero & (1u << a)))
				return false;
			break;
		case SL_AXIS_CP:
			if (r != SL_LOOP_NONE && r != SL_LOOP_SEQ && r != SL_LOOP_EXPERT)
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

/* The baselines' count of the operators that cannot take the layout. */
struct layout_misfits {
	int n_fallback, n_rep;
	char fb_op[128], rep_op[128];
};

/*
 * Megatron-LM's per-operator layout, the one rule for the frameworks'
 * plans (sl_framework_choice) and the Megatron-LM baselines (solve,
 * compare, and the published layouts a pipeline takes as they are,
 * SL_LAYOUT_MEGATRON): on a tp axis the tensor-parallel role of each
 * operator (megatron_role, with sequence parallelism when sp), on a dp
 * axis the batch, on a cp axis the sequence, experts split by expert over
 * the axes of ep_axes, parameters sharded (+z) where shard_params.
 *
 * An operator that cannot take its role: under a framework (mis NULL) a
 * table or weight too narrow to split over a tensor-parallel axis stays
 * whole there, and anything else is refused (SL_EINPUT, why naming it);
 * a baseline replicates it over the tensor-parallel axis (fewer heads than
 * devices), else takes the strategy its inputs reshard to least, and
 * counts both in *mis for its notes.
 */
static int
megatron_layout(const sl_space *s, const sl_axis_role *role, unsigned ep_axes,
    bool shard_params, bool sp, struct layout_misfits *mis, int *choice,
    char *why, size_t len)
{
	int na = s->mesh.n_axes;

	for (int v = 0; v < s->g->n_ops; v++)
		choice[v] = -1;
	for (int v = 0; v < s->g->n_ops; v++) {
		sl_loop_role want[SL_MAX_AXES] = { SL_LOOP_NONE, SL_LOOP_NONE };
		bool z = shard_params && owns_params(s, v);
		int i, tp = -1, dp = -1;

		for (int a = 0; a < na; a++) {
			bool ep = (ep_axes & (1u << a)) != 0;
			if (ep && role[a] != SL_AXIS_TP &&
			    sl_kinds[s->g->ops[v].kind].tp_rule == SL_TP_EXPERTS) {
				want[a] = SL_LOOP_EXPERT;
				continue;
			}
			switch (role[a]) {
			case SL_AXIS_TP:
				want[a] = megatron_role(s, choice, v, a, sp, ep);
				tp = a;
				break;
			case SL_AXIS_CP:
				want[a] = has_role(s, v, SL_LOOP_SEQ) ? SL_LOOP_SEQ :
				    SL_LOOP_NONE;
				break;
			default:
				want[a] = has_role(s, v, SL_LOOP_DP) ? SL_LOOP_DP :
				    SL_LOOP_NONE;
				if (dp < 0)
					dp = a;
				break;
			}
		}
		if (mis != NULL) {
			i = find_roles(s, v, want, z);
			if (i < 0 && tp >= 0 && want[tp] != SL_LOOP_NONE &&
			    want[tp] != SL_LOOP_ROW && want[tp] != SL_LOOP_COL) {
				/* e.g. fewer heads than devices: replicate that operator */
				want[tp] = SL_LOOP_NONE;
				i = find_roles(s, v, want, z);
				if (i >= 0 && mis->n_rep++ == 0)
					snprintf(mis->rep_op, sizeof mis->rep_op, "%s",
					    s->g->ops[v].name);
			}
			if (i < 0) {
				i = follow_inputs(s, choice, v, dp,
				    dp >= 0 ? want[dp] : SL_LOOP_NONE);
				if (mis->n_fallback++ == 0)
					snprintf(mis->fb_op, sizeof mis->fb_op, "%s",
					    s->g->ops[v].name);
			}
			choice[v] = i;
			continue;
		}
		for (int pass = 0; pass < 2; pass++) {
			bool narrow = false;
			/*
			 * A table or weight too narrow to split over a
			 * tensor-parallel axis stays whole there, applied to
			 * the rank's tokens: Megatron-LM's token-type
			 * embedding (a plain nn.Embedding in
			 * megatron/core/models/common/embeddings/
			 * language_model_embedding.py) and a shared expert's
			 * gate (shared_experts.py, gate_weight).
			 */
			for (int a = 0; pass == 1 && a < na; a++)
				if (role[a] == SL_AXIS_TP && (want[a] == SL_LOOP_VOCAB ||
				    want[a] == SL_LOOP_COL)) {
					want[a] = has_role(s, v, SL_LOOP_SEQ) ?
					    SL_LOOP_SEQ : SL_LOOP_NONE;
					narrow = true;
				}
			if (pass == 1 && !narrow)
				break;
			i = find_roles(s, v, want, z);
			/*
			 * A parameter replicated over no axis has nothing to
			 * shard; one replicated over a tensor-parallel axis
			 * too (a norm's weight under sequence parallelism)
			 * would be sharded over it by +z, which FSDP and ZeRO
			 * do not do: it stays whole (a vector of the hidden
			 * size per layer).
			 */
			if (i >= 0 && z && !sl_strategy_roles_ok(s, v, &s->ops[v].strat[i], role))
				i = -1;
			if (i < 0 && z)
				i = find_roles(s, v, want, false);
			if (i >= 0)
				break;
		}
		if (i < 0) {
			if (why != NULL && len > 0)
				snprintf(why, len, _("operator \"%s\" cannot be split as "
				    "the axes' roles ask"), sl_esc(s->g->ops[v].name));
			return SL_EINPUT;
		}
		choice[v] = i;
	}
	return SL_OK;
}

int
sl_framework_choice(const sl_space *s, const sl_axis_role *role,
    unsigned ep_axes, bool shard_params, int *choice, char *why, size_t len)
{
	return megatron_layout(s, role, ep_axes, shard_params, true, NULL, choice,
	    why, len);
}

/*
 * The Megatron-LM baselines: tensor parallel on the inner axis, data
 * parallel on the outer of two.
 */
static void
plan_megatron(const sl_space *s, bool sp, int *choice, struct layout_misfits *mis)
{
	static const sl_axis_role one[SL_MAX_AXES] = { SL_AXIS_TP, SL_AXIS_TP };
	static const sl_axis_role two[SL_MAX_AXES] = { SL_AXIS_DP, SL_AXIS_TP };

	megatron_layout(s, s->mesh.n_axes == 2 ? two : one, 0, false, sp, mis,
	    choice, NULL, 0);
}

/* ---------------------------------------------------- Alpa, Colossal-Auto */

/*
 * Alpa and Colossal-Auto price computation too, and never replicate the
 * computation of a heavy operator (matmul, batched matmul, attention) over
 * a mesh axis: without that rule the least-communication plan of a cost
 * model that counts no computation is to replicate everything.  The rule as
 * forbids: every strategy of a heavy operator that leaves an axis of size > 1
 * splitting nothing (kept when it would leave the operator no strategy).
 */
static void
heavy_forbids(const sl_space *s, sl_constraints *cs)
{
	for (int v = 0; v < s->g->n_ops; v++) {
		const sl_space_op *so = &s->ops[v];
		sl_op_kind k = s->g->ops[v].kind;
		int n_bad = 0;

		if (!sl_kind_is_heavy(k))
			continue;
		for (int pass = 0; pass < 2; pass++) {
			for (int i = 0; i < so->n_strat; i++) {
				bool bad = false;
				for (int a = 0; a < s->mesh.n_axes; a++)
					if (s->mesh.axes[a].size > 1 &&
					    axis_role(s, v, &so->strat[i], a) == SL_LOOP_NONE)
						bad = true;
				if (!bad)
					continue;
				if (pass == 0)
					n_bad++;
				else
					sl_constraints_add(cs, s->g->ops[v].name,
					    so->strat[i].name, false);
			}
			if (n_bad == so->n_strat)
				break;
		}
	}
}

/* A stand-in frontier when sl_sweep is unavailable: solves at fixed alphas. */
static int
grid_frontier(const sl_space *s, const sl_constraints *cs, sl_solver_kind kind,
    sl_frontier *f, sl_error *err)
{
	static const double alphas[] = { 0, 1e-3, 1e-2, 1e-1, 1, 10, 1e2, 1e3,
	    1e4, 1e5, 1e6, 1e7 };
	int n = s->g->n_ops;

	memset(f, 0, sizeof *f);
	f->pt = sl_xcalloc(SL_ARRAY_LEN(alphas), sizeof *f->pt);
	for (size_t i = 0; i < SL_ARRAY_LEN(alphas); i++) {
		sl_problem *p = sl_space_problem(s, alphas[i], cs, err);
		sl_solution sol;
		sl_eval ev;
		int rc;

		if (p == NULL)
			return err != NULL ? err->code : SL_EINTERNAL;
		sl_solution_init(&sol, p->n);
		rc = sl_solve(p, kind, NULL, &sol, err);
		sl_problem_free(p);
		if (rc != SL_OK || (sol.status != SL_SOLVE_OPTIMAL &&
		    sol.status != SL_SOLVE_FEASIBLE)) {
			sl_solution_free(&sol);
			return rc != SL_OK ? rc : sl_error_set(err, SL_EINTERNAL,
			    NULL, 0, 0, "%s", _("no plan found for the frontier"));
		}
		if (sl_evaluate(s, sol.choice, 0, &ev, err) != SL_OK) {
			sl_solution_free(&sol);
			return SL_EINTERNAL;
		}
		f->pt[f->n].alpha_lo = alphas[i];
		f->pt[f->n].alpha_hi = i + 1 < SL_ARRAY_LEN(alphas) ? alphas[i + 1] : -1;
		f->pt[f->n].mem = ev.mem_part;
		f->pt[f->n].comm_ns = ev.comm_ns;
		f->pt[f->n].choice = sl_xcalloc(n > 0 ? n : 1, sizeof(int));
		memcpy(f->pt[f->n].choice, sol.choice, n * sizeof(int));
		f->n++;
		sl_eval_free(&ev);
		sl_solution_free(&sol);
	}
	return SL_OK;
}

static void
grid_frontier_free(sl_frontier *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->pt[i].choice);
	free(f->pt);
	memset(f, 0, sizeof *f);
}

/*
 * The least-communication point of the frontier whose highest device memory
 * fits budget (< 0: any), scored into out.  Points are re-evaluated: the
 * frontier's mem is device 0's objective part, the budget is about the
 * total of the fullest device.  Ties in time go to less memory.
 */
static int
pick_frontier(const sl_space *s, const sl_frontier *f, int64_t budget,
    sl_scored_plan *out, sl_error *err)
{
	int best = -1;
	int64_t best_ns = INT64_MAX, best_mem = INT64_MAX, least = INT64_MAX;
	char b1[32], b2[32];

	for (int i = 0; i < f->n; i++) {
		sl_eval ev;
		int64_t mx = 0;

		if (sl_evaluate(s, f->pt[i].choice, 0, &ev, err) != SL_OK)
			return err != NULL && err->code ? err->code : SL_EINTERNAL;
		for (int d = 0; d < ev.n_devices; d++)
			if (sl_mem_total(&ev.dev[d]) > mx)
				mx = sl_mem_total(&ev.dev[d]);
		if (mx < least)
			least = mx;
		if ((budget < 0 || mx <= budget) && (ev.comm_ns < best_ns ||
		    (ev.comm_ns == best_ns && mx < best_mem))) {
			best = i;
			best_ns = ev.comm_ns;
			best_mem = mx;
		}
		sl_eval_free(&ev);
	}
	if (best < 0) {
		out->applicable = false;
		note_add(out, _("no plan of the alpha frontier fits %s per device "
		    "(the least needs %s)"), sl_format_bytes(budget, b1, sizeof b1),
		    sl_format_bytes(least, b2, sizeof b2));
		return SL_OK;
	}
	{
		char method[32], title[64], note[512];
		int rc;

		memcpy(method, out->method, sizeof method);
		memcpy(title, out->title, sizeof title);
		memcpy(note, out->note, sizeof note);
		rc = sl_score_plan(s, f->pt[best].choice, 0, method, title, out, err);
		memcpy(out->note, note, sizeof note);
		if (rc != SL_OK)
			return rc;
	}
	if (budget >= 0)
		note_add(out, _("least communication of %d frontier plans under %s "
		    "per device, heavy operators not replicated"), f->n,
		    sl_format_bytes(budget, b1, sizeof b1));
	else
		note_add(out, _("least communication of %d frontier plans, heavy "
		    "operators not replicated"), f->n);
	return SL_OK;
}

/* ------------------------------------------------------------- dispatch */

/*
 * The baselines read off the alpha frontier (Alpa, Alpa under a budget,
 * Colossal-Auto): the frontier of s with heavy operators not replicated,
 * computed here when frontier is NULL, and the plan picked from it.
 */
static int
baseline_frontier(const sl_space *s, sl_baseline_kind k,
    const sl_baseline_opts *o, const sl_frontier *frontier,
    sl_scored_plan *out, sl_error *err)
{
	sl_frontier own = { 0, NULL };
	bool own_frontier = false;
	int64_t budget = -1;
	int rc;

	if (k == SL_BASE_ALPA_BUDGET) {
		if (o->mem_budget < 0) {
			note_add(out, "%s", _("needs a memory budget"));
			out->needs = SL_SET_MEM_LIMIT;
			return SL_OK;
		}
		budget = o->mem_budget;
	} else if (k == SL_BASE_COLOSSAL) {
		budget = s->mesh.hw.memory_bytes;
		if (budget <= 0) {
			note_add(out, "%s", _("the hardware profile gives no device memory"));
			return SL_OK;
		}
	}
	if (frontier == NULL) {
		sl_error e2;
		sl_constraints cs = { 0, 0, NULL };

		sl_error_clear(&e2);
		heavy_forbids(s, &cs);
		if (sl_sweep(s, &cs, o->solver, NULL, &own, &e2) != SL_OK) {
			memset(&own, 0, sizeof own);
			rc = grid_frontier(s, &cs, o->solver, &own, err);
			sl_constraints_free(&cs);
			if (rc != SL_OK) {
				grid_frontier_free(&own);
				return rc;
			}
			rc = pick_frontier(s, &own, budget, out, err);
			grid_frontier_free(&own);
			return rc;
		}
		sl_constraints_free(&cs);
		own_frontier = true;
		frontier = &own;
	}
	rc = pick_frontier(s, frontier, budget, out, err);
	if (own_frontier)
		sl_frontier_free(&own);
	return rc;
}

/*
 * How a preset plan was laid out and adjusted: nfb operators without the
 * preset strategy (the first fb_op), nrep replicated over the
 * tensor-parallel axis (the first rep_op).  ZeRO-1/2 are adjusted here.
 */
static void
baseline_notes(const sl_space *s, sl_baseline_kind k, int nfb,
    const char *fb_op, int nrep, const char *rep_op, sl_scored_plan *out)
{
	int na = s->mesh.n_axes;

	switch (k) {
	case SL_BASE_DP:
		note_add(out, "%s", _("batch split over every axis, parameters replicated"));
		break;
	case SL_BASE_ZERO1:
		zero_adjust(s, out->choice, false, out);
		note_add(out, _("data parallel plan; optimizer states (%d B/param) "
		    "divided over %d devices after evaluation"),
		    sl_recipe_state_bytes(&s->opts.recipe, SL_CAT_OPTIM), s->mesh.n_devices);
		break;
	case SL_BASE_ZERO2:
		zero_adjust(s, out->choice, true, out);
		note_add(out, _("data parallel plan; optimizer states and gradients "
		    "(%d B/param) divided over %d devices after evaluation"),
		    sl_recipe_state_bytes(&s->opts.recipe, SL_CAT_OPTIM) +
		    sl_recipe_state_bytes(&s->opts.recipe, SL_CAT_GRADS), s->mesh.n_devices);
		break;
	case SL_BASE_ZERO3:
		note_add(out, "%s", _("data parallel with +z: all parameter states sharded"));
		break;
	case SL_BASE_MEGATRON:
	case SL_BASE_MEGATRON_SP:
		if (na == 2 && s->mesh.axes[0].size > 1)
			note_add(out, _("tensor parallel %d (axis 1) x data parallel %d (axis 0)"),
			    s->mesh.axes[1].size, s->mesh.axes[0].size);
		else
			note_add(out, _("tensor parallel %d, no data parallel axis"),
			    s->mesh.axes[na - 1].size);
		if (k == SL_BASE_MEGATRON_SP)
			note_add(out, "%s", _("norm, dropout and residual regions split on the sequence"));
		break;
	default:
		break;
	}
	if (nrep > 0)
		note_add(out, ngettext("%d operator cannot take its tensor-parallel "
		    "split (%s, e.g. fewer heads than devices) and is replicated over "
		    "that axis", "%d operators cannot take their tensor-parallel split "
		    "(first: %s, e.g. fewer heads than devices) and are replicated "
		    "over that axis", nrep), nrep, rep_op);
	if (nfb > 0) {
		if (fb_op[0] != '\0')
			note_add(out, ngettext("%d operator without the preset "
			    "strategy (%s) follows its inputs", "%d operators without "
			    "the preset strategy (first: %s) follow their inputs", nfb),
			    nfb, fb_op);
		else
			note_add(out, ngettext("%d operator without the preset "
			    "strategy follows its inputs", "%d operators without the "
			    "preset strategy follow their inputs", nfb), nfb);
	}
}

int
sl_baseline_plan(const sl_space *s, sl_baseline_kind k,
    const sl_baseline_opts *o, const sl_frontier *frontier,
    sl_scored_plan *out, sl_error *err)
{
	int n = s->g->n_ops, nfb = 0, nrep = 0, rc = SL_OK;
	int *choice;
	struct layout_misfits mis = { 0, 0, "", "" };
	sl_baseline_opts def = { .mem_budget = -1, .solver = SL_SOLVER_AUTO };

	if (o == NULL)
		o = &def;
	plan_init(out, sl_baseline_name(k), sl_baseline_title(k));
	if ((int)k < 0 || k >= SL_BASE_COUNT)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("unknown baseline %d"), (int)k);
	if (k == SL_BASE_ALPA || k == SL_BASE_ALPA_BUDGET || k == SL_BASE_COLOSSAL)
		return baseline_frontier(s, k, o, frontier, out, err);

	choice = sl_xcalloc(n > 0 ? n : 1, sizeof *choice);
	switch (k) {
	case SL_BASE_DP:
	case SL_BASE_ZERO1:
	case SL_BASE_ZERO2:
		plan_dp(s, false, choice, &nfb);
		break;
	case SL_BASE_ZERO3:
		plan_dp(s, true, choice, &nfb);
		break;
	case SL_BASE_MEGATRON:
	case SL_BASE_MEGATRON_SP:
		plan_megatron(s, k == SL_BASE_MEGATRON_SP, choice, &mis);
		nfb = mis.n_fallback;
		nrep = mis.n_rep;
		break;
	default:
		break;
	}
	{
		char method[32], title[64];

		memcpy(method, out->method, sizeof method);
		memcpy(title, out->title, sizeof title);
		rc = sl_score_plan(s, choice, 0, method, title, out, err);
	}
	free(choice);
	if (rc != SL_OK)
		return rc;
	baseline_notes(s, k, nfb, mis.fb_op, nrep, mis.rep_op, out);
	return SL_OK;
}

/* ------------------------------------------------------------ comparison */

void
sl_comparison_free(sl_comparison *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->n; i++)
		sl_scored_plan_free(&c->row[i]);
	free(c->row);
	memset(c, 0, sizeof *c);
}

static int
solve_ours(const sl_space *s, double alpha, const sl_constraints *cs,
    sl_solver_kind kind, sl_scored_plan *out, sl_error *err)
{
	sl_problem *p = sl_space_problem(s, alpha, cs, err);
	sl_solution sol;
	int rc;

	plan_init(out, "ours", _("shardlab"));
	if (p == NULL)
		return err != NULL && err->code ? err->code : SL_EINTERNAL;
	sl_solution_init(&sol, p->n);
	rc = sl_space_solve(s, p, alpha, NULL, kind, NULL, &sol, err);
	sl_problem_free(p);
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL &&
	    sol.status != SL_SOLVE_FEASIBLE)
		rc = sl_error_set(err, sol.status == SL_SOLVE_INFEASIBLE ?
		    SL_EINFEASIBLE : SL_EINTERNAL, NULL, 0, 0,
		    _("no plan: solver %s"), sl_solve_status_name(sol.status));
	if (rc == SL_OK) {
		rc = sl_score_plan(s, sol.choice, alpha, "ours", _("shardlab"), out, err);
		if (rc == SL_OK) {
			note_add(out, _("alpha %g, solver %s (%s)"), alpha,
			    sl_solver_name(sol.solver), sl_solve_status_name(sol.status));
			if (sol.note[0] != '\0')
				note_add(out, "%s", sol.note);
			if (cs != NULL && cs->n > 0)
				note_add(out, ngettext("%d pin or forbid (the baselines "
				    "ignore it)", "%d pins and forbids (the baselines "
				    "ignore them)", cs->n), cs->n);
		}
	}
	sl_solution_free(&sol);
	return rc;
}

int
sl_compare(const sl_space *s, double alpha, const sl_constraints *cs,
    const sl_baseline_opts *o, sl_comparison *c, sl_error *err)
{
	sl_baseline_opts def = { .mem_budget = -1, .solver = SL_SOLVER_AUTO };
	sl_frontier f = { 0, NULL };
	bool have_f = false;
	int rc;

	if (o == NULL)
		o = &def;
	memset(c, 0, sizeof *c);
	c->alpha = alpha;
	c->row = sl_xcalloc(1 + SL_BASE_COUNT, sizeof *c->row);
	if ((rc = solve_ours(s, alpha, cs, o->solver, &c->row[0], err)) != SL_OK) {
		sl_comparison_free(c);
		return rc;
	}
	c->n = 1;
	{
		sl_error e2;
		sl_constraints hcs = { 0, 0, NULL };

		sl_error_clear(&e2);
		heavy_forbids(s, &hcs);
		have_f = sl_sweep(s, &hcs, o->solver, NULL, &f, &e2) == SL_OK;
		if (!have_f) {
			memset(&f, 0, sizeof f);
			rc = grid_frontier(s, &hcs, o->solver, &f, err);
			if (rc != SL_OK) {
				sl_constraints_free(&hcs);
				grid_frontier_free(&f);
				sl_comparison_free(c);
				return rc;
			}
		}
		sl_constraints_free(&hcs);
	}
	for (int k = 0; k < SL_BASE_COUNT; k++) {
		rc = sl_baseline_plan(s, k, o, &f, &c->row[c->n], err);
		if (rc != SL_OK)
			break;
		c->n++;
	}
	if (have_f)
		sl_frontier_free(&f);
	else
		grid_frontier_free(&f);
	if (rc != SL_OK)
		sl_comparison_free(c);
	return rc;
}
