/*
 * pipe_ctx.c: a pipeline kept for re-use by the explorer.
 */
#include "pipe_internal.h"

#include <stdlib.h>

/*
 * The explorer re-evaluates one pipeline after every key: the graphs,
 * spaces, stage problems and plans of earlier evaluations stay cached in
 * the context, so moving a boundary solves only the stages it changed.
 * Pins and forbids hold inside every stage: an operator outside the
 * repeated layers by its name, a layer's operator at its position in every
 * layer (stages of equal length over alike layers share one problem, as
 * the layers share one plan under folding).  A strategy name the stage
 * sub-mesh lacks is skipped and counted.
 */
struct sl_pipe_ctx {
	hyb h;
	sl_constraints cs;
	int n_done, cap_done;
	stage_type **done;	/* types constrained under cs */
};

sl_pipe_ctx *
sl_pipe_ctx_new(const sl_hybrid_opts *o)
{
	sl_pipe_ctx *c = sl_xcalloc(1, sizeof *c);

	c->h.o = o;
	return c;
}

void
sl_pipe_ctx_free(sl_pipe_ctx *c)
{
	if (c == NULL)
		return;
	hyb_free(&c->h);
	sl_constraints_free(&c->cs);
	free(c->done);
	free(c);
}

/* Applies the constraints to a stage type's problem; its cached plans
 * were solved under others. */
static void
ctx_constrain_type(const sl_pipe_ctx *c, stage_type *t)
{
	const sl_space *sp = t->se->sp;
	const sl_graph *g = sp->g;
	sl_problem *p = t->prob;

	type_allow_roles(&c->h, t);
	/* a constraint names one operator; a type whose layers a constraint
	 * names serves only its own layers (sl_pipe_ctx_eval) */
	for (int i = 0; i < c->cs.n; i++) {
		const sl_constraint *k = &c->cs.c[i];
		int v = sl_graph_find_op(g, k->op), s;

		if (v < t->a || v >= t->b ||
		    (s = sl_space_find_strategy(sp, v, k->strategy)) < 0)
			continue;
		if (k->pin)
			for (int q = 0; q < sp->ops[v].n_strat; q++)
				p->allowed[v - t->a][q] = q == s;
		else
			p->allowed[v - t->a][s] = 0;
	}
	for (int i = 0; i < t->n_plan; i++)
		free(t->plan[i].choice);
	t->n_plan = 0;
	for (int r = 0; r < N_RECOMP; r++) {
		free(t->fast[r]);
		t->fast[r] = NULL;
	}
}

void
sl_pipe_ctx_constrain(sl_pipe_ctx *c, const sl_constraints *cs)
{
	sl_constraints_free(&c->cs);
	sl_constraints_copy(&c->cs, cs);
	/* every type is constrained again when next used (a type constrained
	 * before and not used now keeps stale allowed sets until then) */
	c->n_done = 0;
}

int
sl_pipe_ctx_eval(sl_pipe_ctx *c, const sl_pipe_config *cfg, sl_pipeline *pl,
    int *skipped, sl_error *err)
{
	int rc, l0 = 0, ns = cfg->pp * (cfg->virt > 0 ? cfg->virt : 1), n_ty = 0;
	stage_type **ty;
	space_entry *se;

	/* a constraint on one layer's operator holds in that layer only: the
	 * stages then do not share types across layers */
	if ((se = hyb_space(&c->h, cfg->graph_batch, cfg->outer, cfg->inner,
	    hyb_rep(&c->h, cfg->dp_replicate), err)) == NULL) {
		memset(pl, 0, sizeof *pl);
		return err->code ? err->code : SL_EINTERNAL;
	}
	c->h.own_layers = false;
	for (int i = 0; i < c->cs.n && !c->h.own_layers; i++) {
		int op = sl_graph_find_op(se->sp->g, c->cs.c[i].op);
		c->h.own_layers = op >= 0 && se->sp->g->ops[op].layer >= 0;
	}
	ty = sl_xcalloc(ns > 0 ? ns : 1, sizeof *ty);
	/* the stage types of this configuration, constrained before solving */
	for (int j = 0; j < ns && cfg->layers[j] >= 1; j++) {
		stage_type *t = hyb_type(&c->h, cfg->graph_batch, cfg->outer,
		    cfg->inner, hyb_rep(&c->h, cfg->dp_replicate), l0,
		    cfg->layers[j], err);
		bool seen = false;

		if (t == NULL) {
			free(ty);
			memset(pl, 0, sizeof *pl);
			return err->code ? err->code : SL_EINTERNAL;
		}
		l0 += cfg->layers[j];
		ty[n_ty++] = t;
		for (int i = 0; i < c->n_done && !seen; i++)
			seen = c->done[i] == t;
		if (seen)
			continue;
		ctx_constrain_type(c, t);
		if (c->n_done == c->cap_done) {
			c->cap_done = c->cap_done ? 2 * c->cap_done : 16;
			c->done = sl_xrealloc(c->done, c->cap_done * sizeof *c->done);
		}
		c->done[c->n_done++] = t;
	}
	/* constraints that name nothing inside these stages */
	if (skipped != NULL) {
		*skipped = 0;
		for (int i = 0; i < c->cs.n && n_ty > 0; i++) {
			const sl_space *sp = ty[0]->se->sp;
			int v = sl_graph_find_op(sp->g, c->cs.c[i].op);
			bool hit = false;
			for (int j = 0; j < n_ty && !hit; j++)
				hit = v >= ty[j]->a && v < ty[j]->b &&
				    sl_space_find_strategy(sp, v, c->cs.c[i].strategy) >= 0;
			if (!hit)
				(*skipped)++;
		}
	}
	free(ty);
	rc = pipeline_eval(&c->h, cfg, pl, err);
	if (rc != SL_OK)
		sl_pipeline_free(pl);
	return rc;
}
