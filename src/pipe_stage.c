/*
 * pipe_stage.c: the stages of a pipeline and their plans.  A stage type is
 * the sub-problem of the operators of some layers of a space (pipe_space.c)
 * and the edges between them, with what the stage adds: the transfers
 * across its boundaries and the states of a parameter another stage owns.
 * Stages alike in layer count, position class (first, middle, last) and
 * layer classes share one type; a type keeps its solver and the plans it
 * found, each the fastest that fits a budget of states and activations.
 * The cache of graphs, spaces and types (hyb) is freed here.
 */
#include "pipe_internal.h"

#include <math.h>
#include <stdlib.h>

/* One point-to-point transfer of bytes over a link. */
static int64_t
p2p_ns(int64_t bytes, const sl_link *l)
{
	double s;

	if (bytes <= 0)
		return 0;
	if (!(l->bandwidth > 0))
		return INT64_MAX / 4;
	s = (double)bytes / l->bandwidth + l->latency;
	return (int64_t)llround(s * 1e9);
}

/*
 * One transfer between stages of a tensor a device holds bytes of under
 * spec.  Where the sub-mesh's devices along an axis hold the same shard
 * (a tensor-parallel group without sequence parallelism), each sends a
 * share and the receivers all-gather it over that axis: Megatron-LM's
 * scatter-gather (Narayanan et al. SC21, section 4.1;
 * --scatter-gather-tensors-in-pipeline, on by default) and DeepSpeed's
 * pipe_partitioned; torchtitan's pipeline sends the tensor whole.
 */
static int64_t
stage_send_ns(const hyb *h, const sl_space *sp, const sl_spec *spec,
    const sl_tensor *ts, int64_t bytes, const sl_link *pl)
{
	const sl_mesh *m = &sp->mesh;
	uint8_t split = 0;
	int parts = 1;
	int64_t t;

	if (h->o->space.recipe.framework == SL_FW_TORCHTITAN)
		return p2p_ns(bytes, pl);
	for (int d = 0; d < ts->rank; d++)
		split |= spec->split[d];
	for (int a = 0; a < m->n_axes; a++)
		if (!(split & (1u << a)) && m->axes[a].size > 1)
			parts *= m->axes[a].size;
	t = p2p_ns(sl_ceil_div(bytes, parts), pl);
	for (int a = 0; a < m->n_axes; a++)
		if (!(split & (1u << a)) && m->axes[a].size > 1)
			t = sl_add_sat(t, sl_coll_time(SL_COLL_ALL_GATHER,
			    m->axes[a].size, bytes, &m->axes[a].link));
	return t;
}

static void
free_rows(int64_t **x, int n)
{
	if (x == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(x[i]);
	free(x);
}

static void
type_free(stage_type *t)
{
	int nops = t->b - t->a;

	for (int r = 0; r < N_RECOMP; r++) {
		free(t->fast[r]);
		free_rows(t->xmem[r], nops);
		free(t->view_cost[r]);
		free(t->prim[r]);
	}
	free_rows(t->xp2p, nops);
	free(t->view_ecost);
	free(t->eprim);
	if (t->prob != NULL) {
		t->prob->cost = t->own_cost;
		t->prob->ecost = t->own_ecost;
	}
	for (int i = 0; i < t->n_plan; i++)
		free(t->plan[i].choice);
	free(t->plan);
	free(t->ex);
	free(t->edge);
	sl_dp_free(t->dp);
	sl_problem_free(t->prob);
	free(t);
}

/*
 * Frees the space of micro-batch graph batch on sub-mesh outer x inner
 * and its stage types, if it exists: a search done with a configuration
 * gives its memory to the next.  A later call for it builds it again.
 */
void
hyb_drop_space(hyb *h, int64_t batch, int outer, int inner, int rep)
{
	space_entry **pe, *e;

	rep = rep > 1 ? rep : 1;
	for (pe = &h->spaces; *pe != NULL; pe = &(*pe)->next)
		if ((*pe)->batch == batch && (*pe)->outer == outer &&
		    (*pe)->inner == inner && (*pe)->rep == rep)
			break;
	if ((e = *pe) == NULL)
		return;
	*pe = e->next;
	for (stage_type **pt = &h->types; *pt != NULL;) {
		stage_type *t = *pt;
		if (t->se == e) {
			*pt = t->next;
			type_free(t);
		} else
			pt = &t->next;
	}
	space_free(e);
}

void
hyb_free(hyb *h)
{
	for (stage_type *t = h->types, *n; t != NULL; t = n) {
		n = t->next;
		type_free(t);
	}
	for (space_entry *e = h->spaces, *n; e != NULL; e = n) {
		n = e->next;
		space_free(e);
	}
	for (graph_entry *e = h->graphs, *n; e != NULL; e = n) {
		n = e->next;
		sl_graph_free(e->g);
		free(e->last_reader);
		free(e);
	}
	sl_dp_pool_free(h->pool);
	memset(h, 0, sizeof *h);
}

/* Operators of the stage holding layers [l0, l0 + n) of L. */
void
stage_ops(const sl_graph *g, int l0, int n, int *a, int *b)
{
	int L = g->n_layers;

	*a = l0 == 0 ? 0 : g->layers[l0].first_op;
	*b = l0 + n >= L ? g->n_ops : g->layers[l0 + n].first_op;
}

/* Whether a type built on layers t->l0... serves the n layers from l0. */
static bool
type_serves(const stage_type *t, int l0, int n, bool plain)
{
	const space_entry *se = t->se;

	if (plain)
		return t->l0 == l0;
	if (se->uniform || t->l0 == l0)
		return true;
	for (int i = 0; i < n; i++)
		if (se->lcls[t->l0 + i] != se->lcls[l0 + i])
			return false;
	return true;
}

/*
 * The edge rows of stage t: an edge whose tables equal an earlier edge's of
 * the stage (erep) shares its row; eprim lists the rows that stay.  Under a
 * framework (fw) nothing is solved: the stage takes the framework's plan
 * (type_fw_plan), and no row is allocated.
 */
static void
type_edges(stage_type *t, bool plain, bool fw)
{
	space_entry *se = t->se;
	sl_problem *p = t->prob;
	int m = p->m, *first;

	first = sl_xmalloc((se->sp->n_edges ? se->sp->n_edges : 1) * sizeof *first);
	for (int e = 0; e < m; e++)
		first[se->erep[t->edge[e]]] = -1;
	if (plain)
		for (int e = 0; e < m; e++)
			first[t->edge[e]] = -1;
	t->own_ecost = p->ecost;	/* rows of its own: none */
	t->view_ecost = sl_xmalloc((m ? m : 1) * sizeof *t->view_ecost);
	t->eprim = sl_xmalloc((m ? m : 1) * sizeof *t->eprim);
	for (int e = 0; e < m; e++) {
		int key = plain ? t->edge[e] : se->erep[t->edge[e]];
		if (fw) {
			t->view_ecost[e] = NULL;
			continue;
		}
		if (first[key] < 0) {
			first[key] = e;
			t->eprim[t->neprim++] = e;
			if (se->erow[key] == NULL)
				se->erow[key] = sl_xcalloc((size_t)p->k[p->edge[e][0]] *
				    p->k[p->edge[e][1]], sizeof **se->erow);
		}
		t->view_ecost[e] = se->erow[key];
	}
	free(first);
	p->ecost = t->view_ecost;
}

stage_type *
hyb_type(hyb *h, int64_t batch, int outer, int inner, int rep, int l0, int n,
    sl_error *err)
{
	const sl_graph *g;
	const sl_space *sp;
	space_entry *se;
	stage_type *t;
	bool first = l0 == 0, last;
	int a, b, *k, (*ends)[2], ne = 0, cap = 8;

	if ((se = hyb_space(h, batch, outer, inner, rep, err)) == NULL)
		return NULL;
	sp = se->sp;
	g = sp->g;
	last = l0 + n >= g->n_layers;
	if (l0 < 0 || n < 1 || l0 + n > g->n_layers) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the stages hold %d layers; the model has %d"), l0 + n, g->n_layers);
		return NULL;
	}
	for (t = se->by_n[n]; t != NULL; t = t->snext)
		if (t->first == first && t->last == last &&
		    type_serves(t, l0, n, h->o->plain || h->own_layers))
			return t;
	t = sl_xcalloc(1, sizeof *t);
	t->se = se;
	t->first = first;
	t->last = last;
	t->l0 = l0;
	t->n_layers = n;
	stage_ops(g, l0, n, &a, &b);
	t->a = a;
	t->b = b;
	k = sl_xmalloc((b - a) * sizeof *k);
	for (int v = a; v < b; v++)
		k[v - a] = sp->ops[v].n_strat;
	ends = sl_xmalloc((sp->n_edges ? sp->n_edges : 1) * sizeof *ends);
	t->edge = sl_xmalloc((sp->n_edges ? sp->n_edges : 1) * sizeof *t->edge);
	for (int e = 0; e < sp->n_edges; e++) {
		int u = sp->edges[e].src, v = sp->edges[e].dst;
		if (u >= a && u < b && v >= a && v < b) {
			ends[ne][0] = u - a;
			ends[ne][1] = v - a;
			t->edge[ne++] = e;
		}
	}
	/* edges get rows below: only those the view keeps (type_edges) */
	t->prob = sl_problem_new_rows(b - a, k, 0, NULL, false);
	free(k);
	if (t->prob == NULL) {
		free(ends);
		free(t->edge);
		free(t);
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, _("cannot build the problem"));
		return NULL;
	}
	free(t->prob->edge);
	free(t->prob->ecost);
	t->prob->m = ne;
	t->prob->edge = sl_xmalloc((ne ? ne : 1) * sizeof *t->prob->edge);
	memcpy(t->prob->edge, ends, ne * sizeof *ends);
	t->prob->ecost = sl_xcalloc(ne ? ne : 1, sizeof *t->prob->ecost);
	free(ends);
	type_edges(t, h->o->plain, h->o->space.recipe.framework != SL_FW_FREE);
	type_allow_roles(h, t);
	for (int v = a; v < b; v++) {
		t->prob->layer[v - a] = g->ops[v].layer;
		t->prob->pos[v - a] = g->ops[v].pos;
	}
	/* a row of its own only where a view keeps one (type_views) */
	t->own_cost = t->prob->cost;
	/* the slots that cost extra; read: tensors some earlier operator of
	 * the stage reads */
	{
		const int *last = hyb_graph_entry(h, g)->last_reader;
		bool *read = sl_xcalloc(g->n_tensors ? g->n_tensors : 1, sizeof *read);

		t->ex = sl_xmalloc(cap * sizeof *t->ex);
		for (int v = a; v < b; v++) {
			const sl_op *op = &g->ops[v];
			for (int i = 0; i < sl_op_nslots(op); i++) {
				int ti = sl_op_slot_tensor(op, i);
				const sl_tensor *ts = &g->tensors[ti];
				bool p2p = false, foreign = false;

				if (i < op->n_in && ts->role == SL_ROLE_ACTIVATION &&
				    ts->producer < a) {
					/* the first reader receives it, sends its gradient */
					p2p = !read[ti];
				} else if (i >= op->n_in && sp->consumed[ti]) {
					/* made here, read by a later stage */
					p2p = last[ti] >= b;
				} else if (i < op->n_in && ts->role == SL_ROLE_PARAMETER &&
				    (sp->owner[ti] < a || sp->owner[ti] >= b)) {
					foreign = !read[ti];
				}
				if (!p2p && !foreign)
					continue;
				if (t->n_extra == cap) {
					cap *= 2;
					t->ex = sl_xrealloc(t->ex, cap * sizeof *t->ex);
				}
				t->ex[t->n_extra].op = v - a;
				t->ex[t->n_extra].slot = i;
				t->ex[t->n_extra].p2p = p2p;
				t->n_extra++;
			}
			for (int q = 0; q < op->n_in; q++)
				read[op->in[q]] = true;
		}
		free(read);
	}
	t->next = h->types;
	h->types = t;
	t->snext = se->by_n[n];
	se->by_n[n] = t;
	return t;
}

void
type_allow_roles(const hyb *h, stage_type *t)
{
	const sl_space *sp = t->se->sp;
	sl_problem *p = t->prob;

	for (int v = 0; v < p->n; v++) {
		int any = 0;
		for (int s = 0; s < p->k[v]; s++) {
			p->allowed[v][s] = !roles_bind(h) || sl_strategy_roles_ok(sp,
			    v + t->a, &sp->ops[v + t->a].strat[s], t->se->role);
			any |= p->allowed[v][s];
		}
		/* an operator no strategy of which keeps the contract keeps
		 * them all (the framework's plan says which it takes) */
		if (!any)
			memset(p->allowed[v], 1, (size_t)p->k[v]);
	}
}

/* Keeps plan p of type t as found for (r, ks, k, cap), the key the cache
 * of type_plan looks it up by. */
static const stage_plan *
type_keep(stage_type *t, stage_plan *p, int r, int64_t ks, int64_t k,
    int64_t cap)
{
	p->r = r;
	p->ks = ks;
	p->k = k;
	p->cap = cap;
	if (t->n_plan == t->cap_plan) {
		t->cap_plan = t->cap_plan ? 2 * t->cap_plan : 8;
		t->plan = sl_xrealloc(t->plan, t->cap_plan * sizeof *t->plan);
	}
	t->plan[t->n_plan] = *p;
	return &t->plan[t->n_plan++];
}

/*
 * The stage's plan as its framework runs it: the framework's strategy for
 * each operator (space_fw_choice), whatever the budget; ok when it fits.
 */
static const stage_plan *
type_fw_plan(hyb *h, stage_type *t, int r, int64_t ks, int64_t k,
    int64_t cap, sl_error *err)
{
	const int *fc = space_fw_choice(h, t->se, err);
	int n = t->b - t->a;
	stage_plan p;

	if (fc == NULL)
		return NULL;
	memset(&p, 0, sizeof p);
	p.choice = sl_xmalloc((n ? n : 1) * sizeof(int));
	memcpy(p.choice, fc + t->a, n * sizeof(int));
	type_extras(h, t, r);
	stage_plan_totals(t, space_tab(h, t->se, r), r, p.choice, &p);
	p.ok = stage_plan_mem(&p, ks, k) <= cap;
	if (t->fast[r] == NULL) {
		t->fast[r] = sl_xmalloc((n ? n : 1) * sizeof(int));
		memcpy(t->fast[r], p.choice, n * sizeof(int));
	}
	return type_keep(t, &p, r, ks, k, cap);
}

/* The extras of a stage under r: memory (foreign states) and p2p time. */
void
type_extras(const hyb *h, stage_type *t, int r)
{
	const sl_space *sp = t->se->sp;
	const sl_graph *g = sp->g;
	int nops = t->b - t->a;
	sl_link pl;

	if (t->xmem[r] != NULL)
		return;
	pl = pp_link(h, t->se->outer, t->se->inner);
	t->xmem[r] = sl_xcalloc(nops, sizeof *t->xmem[r]);
	if (t->xp2p == NULL)
		t->xp2p = sl_xcalloc(nops, sizeof *t->xp2p);
	for (int x = 0; x < t->n_extra; x++) {
		int v = t->ex[x].op, opi = v + t->a, i = t->ex[x].slot;
		const sl_op *op = &g->ops[opi];
		const sl_tensor *ts = &g->tensors[sl_op_slot_tensor(op, i)];
		int k = sp->ops[opi].n_strat;
		bool need_p2p = t->ex[x].p2p;

		if (t->xmem[r][v] == NULL)
			t->xmem[r][v] = sl_xcalloc(k, sizeof(int64_t));
		if (t->xp2p[v] == NULL)
			t->xp2p[v] = sl_xcalloc(k, sizeof(int64_t));
		for (int s = 0; s < k; s++) {
			const sl_spec *spec = &sp->ops[opi].strat[s].spec[i];
			int64_t el = sl_local_elems(&sp->mesh, spec, ts, NULL);
			if (need_p2p) {
				if (r == 0)
					t->xp2p[v][s] += 2 * stage_send_ns(h, sp,
					    spec, ts, sl_mul_sat(el,
					    sl_elem_bytes(sp, ts)), &pl);
			} else {
				int64_t per = 0;
				for (int c = SL_CAT_PARAMS; c <= SL_CAT_OPTIM; c++)
					if (!(c == SL_CAT_OPTIM && h->o->offload_optimizer))
						per += sl_recipe_state_bytes(&sp->opts.recipe, c);
				/* a frozen weight (LoRA) is its weight alone */
				if (sl_recipe_frozen(&sp->opts.recipe))
					per = sl_recipe_part_bytes(&sp->opts.recipe,
					    SL_PART_WEIGHT);
				t->xmem[r][v][s] += sl_mul_sat(el, per);
			}
		}
	}
	if (r != 0 && t->xmem[0] == NULL)
		type_extras(h, t, 0);	/* p2p is filled on r = 0 */
}

static int64_t
x_at(int64_t **x, int v, int s)
{
	return x != NULL && x[v] != NULL ? x[v][s] : 0;
}

/* Totals of a choice under the tables. */
void
stage_plan_totals(const stage_type *t, const stage_tab *tb, int r,
    const int *c, stage_plan *sp)
{
	const sl_space *s = t->se->sp;

	memset(&sp->states, 0, sizeof sp->states);
	sp->acts = sp->compute = sp->comm = sp->p2p = sp->bwd = 0;
	sp->sync = sp->optim = sp->pelems = 0;
	for (int v = 0; v < t->b - t->a; v++) {
		int o = v + t->a;
		const sl_mem *m = &tb->mem[o][c[v]];
		sp->states.params += m->params;
		sp->states.grads += m->grads;
		sp->states.optim += m->optim + x_at(t->xmem[r], v, c[v]);
		/* moments are held one at a time: the largest */
		if (m->buffers > sp->states.buffers)
			sp->states.buffers = m->buffers;
		sp->acts += m->acts;
		const op_time *ot = &tb->time[o][c[v]];
		sp->compute += ot->compute;
		sp->comm += ot->comm;
		sp->bwd += ot->bwd;
		sp->sync += ot->sync;
		sp->optim += ot->optim;
		sp->pelems += ot->pelems;
		sp->p2p += x_at(t->xp2p, v, c[v]);
	}
	for (int e = 0; e < t->prob->m; e++) {
		int se = t->edge[e];
		int idx = c[t->prob->edge[e][0]] * t->prob->k[t->prob->edge[e][1]] +
		    c[t->prob->edge[e][1]];
		/* a resharding copy lives around its reader's task alone */
		if (s->edge_mem[se][idx] > sp->states.buffers)
			sp->states.buffers = s->edge_mem[se][idx];
		sp->comm += s->edge_ns[se][idx];
	}
}

/* ks chunks' states, k micro-batches' activations, one moment. */
int64_t
stage_plan_mem(const stage_plan *p, int64_t ks, int64_t k)
{
	return sl_add_sat(sl_add_sat(sl_mul_sat(ks, sl_mem_total(&p->states) -
	    p->states.buffers), sl_mul_sat(k, p->acts)), p->states.buffers);
}

int64_t
stage_plan_micro(const stage_plan *p)
{
	return sl_add_sat(sl_add_sat(p->compute, p->comm), p->p2p);
}

int64_t
stage_plan_once(const stage_plan *p)
{
	return sl_add_sat(p->sync, p->optim);
}

/*
 * The node view of stage t under r: an operator without extras whose rows
 * equal another's (tb->rep) points at the first such operator's row of the
 * stage; prim lists the rows that stay.
 */
static void
type_views(stage_type *t, const stage_tab *tb, int r, bool plain)
{
	const space_entry *se = t->se;
	int n = t->prob->n;
	int *first;

	if (t->view_cost[r] != NULL)
		return;
	first = sl_xmalloc((se->sp->g->n_ops ? se->sp->g->n_ops : 1) * sizeof *first);
	for (int v = 0; v < n; v++)
		first[tb->rep[v + t->a]] = -1;
	t->view_cost[r] = sl_xmalloc((n ? n : 1) * sizeof *t->view_cost[r]);
	t->prim[r] = sl_xmalloc((n ? n : 1) * sizeof *t->prim[r]);
	for (int v = 0; v < n; v++) {
		int key = tb->rep[v + t->a];
		bool extra = plain || (t->xmem[r] != NULL && t->xmem[r][v] != NULL) ||
		    (t->xp2p != NULL && t->xp2p[v] != NULL);
		if (extra || first[key] < 0) {
			if (!extra)
				first[key] = v;
			t->prim[r][t->nprim[r]++] = v;
			if (t->own_cost[v] == NULL)
				t->own_cost[v] = sl_xcalloc(t->prob->k[v], sizeof **t->own_cost);
			t->view_cost[r][v] = t->own_cost[v];
		} else
			t->view_cost[r][v] = t->own_cost[first[key]];
	}
	free(first);
}

/* Solves the stage at memory weight wm and time weight wt. */
static int
type_solve(hyb *h, stage_type *t, const stage_tab *tb, int r, int64_t ks,
    int64_t k, int64_t m, double wm, double wt, int *choice, sl_error *err)
{
	sl_problem *p = t->prob;
	const sl_space *sps = t->se->sp;
	sl_solution sol;
	int rc;

	type_views(t, tb, r, h->o->plain);
	p->cost = t->view_cost[r];
	p->ecost = t->view_ecost;
	for (int i = 0; i < t->nprim[r]; i++) {
		int v = t->prim[r][i], o = v + t->a;
		for (int s = 0; s < p->k[v]; s++) {
			const sl_mem *mm = &tb->mem[o][s];
			double mem = (double)ks * (double)(sl_mem_total(mm) - mm->acts +
			    x_at(t->xmem[r], v, s)) + (double)k * (double)mm->acts;
			const op_time *ot = &tb->time[o][s];
			double ns = (double)m * (double)(ot->compute +
			    ot->comm + x_at(t->xp2p, v, s)) +
			    (double)(ot->sync + ot->optim);
			p->cost[v][s] = (int64_t)(wm * mem + wt * ns + 0.5);
		}
	}
	for (int i = 0; i < t->neprim; i++) {
		int e = t->eprim[i];
		int n = p->k[p->edge[e][0]] * p->k[p->edge[e][1]], se = t->edge[e];
		for (int j = 0; j < n; j++)
			p->ecost[e][j] = (int64_t)(wm * (double)sps->edge_mem[se][j] +
			    wt * (double)m * (double)sps->edge_ns[se][j] + 0.5);
	}
	sl_solution_init(&sol, p->n);
	h->solves++;
	if (t->dp == NULL && (t->dp = sl_dp_new(p, NULL, NULL)) != NULL && !h->o->plain) {
		if (h->pool == NULL)
			h->pool = sl_dp_pool_new();
		sl_dp_set_pool(t->dp, h->pool);
	}
	if (t->dp != NULL)
		rc = sl_dp_resolve(t->dp, p, NULL, &sol, err);
	else
		rc = sl_solve(p, SL_SOLVER_AUTO, NULL, &sol, err);
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL)
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("stage solve ended %s"), sl_solve_status_name(sol.status));
	if (rc == SL_OK)
		memcpy(choice, sol.choice, p->n * sizeof *choice);
	sl_solution_free(&sol);
	return rc;
}

/* The stage as fit.c's search sees it: its time against its memory with
 * ks chunks' states and k micro-batches in flight. */
typedef struct stage_probe {
	hyb *h;
	stage_type *t;
	const stage_tab *tb;
	int r;
	int64_t ks, k, m;
	stage_plan p;		/* scratch for measuring */
} stage_probe;

static int
stage_probe_solve(void *ctx, double wm, double wc, int *choice, sl_error *err)
{
	stage_probe *sp = ctx;

	return type_solve(sp->h, sp->t, sp->tb, sp->r, sp->ks, sp->k, sp->m, wm,
	    wc, choice, err);
}

static void
stage_probe_measure(void *ctx, const int *choice, int64_t *mem,
    int64_t *weighed, double *cost)
{
	stage_probe *sp = ctx;

	stage_plan_totals(sp->t, sp->tb, sp->r, choice, &sp->p);
	*mem = stage_plan_mem(&sp->p, sp->ks, sp->k);
	*cost = (double)sp->m * (double)stage_plan_micro(&sp->p) +
	    (double)stage_plan_once(&sp->p);
}

/*
 * The fastest plan of the stage whose memory with k micro-batches in flight
 * fits cap, over the vertices of its memory / time frontier (fit.c's
 * search, as every plan under a memory limit): the least-time plan when
 * it fits, else between it and the least-memory plan.
 */
const stage_plan *
type_plan(hyb *h, stage_type *t, int r, int64_t ks, int64_t k, int64_t m,
    int64_t cap, sl_error *err)
{
	stage_tab *tb;
	stage_plan hi;
	stage_probe sp;
	sl_fit_probe pr;
	sl_fit_found f;
	const stage_plan *warm = NULL;
	int n = t->b - t->a;

	for (int i = 0; i < t->n_plan; i++)
		if (t->plan[i].r == r && t->plan[i].ks == ks && t->plan[i].k == k &&
		    t->plan[i].cap == cap) {
			h->hits++;
			return &t->plan[i];
		}
	if (h->o->space.recipe.framework != SL_FW_FREE)
		return type_fw_plan(h, t, r, ks, k, cap, err);
	tb = space_tab(h, t->se, r);
	type_extras(h, t, r);
	/* the fastest plan does not depend on k or cap: solved once per r */
	if (t->fast[r] == NULL) {
		t->fast[r] = sl_xmalloc(n * sizeof(int));
		if (type_solve(h, t, tb, r, 1, 1, m, 1e-9, 1.0, t->fast[r], err) != SL_OK) {
			free(t->fast[r]);
			t->fast[r] = NULL;
			return NULL;
		}
	} else
		h->hits++;
	/*
	 * A plan that fit with more micro-batches in flight fits with k: the
	 * closest such starts the search instead of the least-memory plan
	 * (when the fastest does not fit already).
	 */
	for (int i = 0; i < t->n_plan; i++) {
		const stage_plan *q = &t->plan[i];
		if (q->r == r && q->ks == ks && q->cap == cap && q->ok && q->k > k &&
		    (warm == NULL || q->k < warm->k))
			warm = q;
	}
	sp = (stage_probe){ .h = h, .t = t, .tb = tb, .r = r, .ks = ks, .k = k,
	    .m = m };
	pr = (sl_fit_probe){ .n = n, .solve = stage_probe_solve,
	    .measure = stage_probe_measure, .ctx = &sp, .terms = n + t->prob->m,
	    .fast = t->fast[r], .frugal = warm != NULL ? warm->choice : NULL };
	if (sl_fit_search(&pr, cap, &f, err) != SL_OK)
		return NULL;
	if (warm != NULL && !(f.fits && memcmp(f.choice, t->fast[r],
	    n * sizeof(int)) == 0))
		h->hits++;
	memset(&hi, 0, sizeof hi);
	hi.choice = f.choice;
	stage_plan_totals(t, tb, r, hi.choice, &hi);
	hi.ok = f.fits;
	return type_keep(t, &hi, r, ks, k, cap);
}

/*
 * Drops the stage types' solvers: what they found stays (the types' plans
 * are cached apart from them), and a type solved again gets a new one.
 * Called once a configuration is searched: its types serve no other
 * configuration of one chunk per device, and the memory they free serves
 * the next instead of memory touched for the first time (peak RSS of
 * bench_plan gpt3 64: 728 -> 545 MB, minor faults 181k -> 136k).
 */
void
hyb_drop_solvers(hyb *h)
{
	for (stage_type *t = h->types; t != NULL; t = t->next) {
		sl_dp_free(t->dp);
		t->dp = NULL;
	}
}
