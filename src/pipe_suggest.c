/*
 * pipe_suggest.c: what would make a model fit: the hybrid search run again
 * under each single change (recomputation, pipeline degree, micro-batch,
 * sequence, devices, optimizer offload), the changes ranked; and the
 * fewest devices that fit.
 */
#include "internal.h"

#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static int
suggest_one(const sl_hybrid_opts *base, sl_hybrid_opts *o, sl_fit_change *out,
    sl_error *err)
{
	sl_hybrid_result r;
	sl_error e2;
	int rc;

	(void)base;
	sl_error_clear(&e2);
	rc = sl_hybrid_search(o, &r, &e2);
	if (rc != SL_OK) {
		out->fits = false;
		if (rc != SL_EINPUT)
			return sl_error_set(err, rc, NULL, 0, 0, "%s", e2.msg);
		/* the change itself makes bad input (too short a sequence) */
		snprintf(out->why, sizeof out->why, "%.*s", (int)sizeof out->why - 1, e2.msg);
		return SL_OK;
	}
	out->fits = r.found;
	if (r.found) {
		out->max_mem = r.best.max_mem;
		out->step_ns = r.best.step_ns;
	} else if (r.have_least) {
		out->max_mem = r.least.max_mem;
		out->step_ns = r.least.step_ns;
	} else
		snprintf(out->why, sizeof out->why, "%s", r.why_none);
	sl_hybrid_result_free(&r);
	return SL_OK;
}

static int
change_cmp(const void *a, const void *b)
{
	const sl_fit_change *x = a, *y = b;

	if (x->fits != y->fits)
		return x->fits ? -1 : 1;
	if ((x->why[0] != '\0') != (y->why[0] != '\0'))
		return x->why[0] != '\0' ? 1 : -1;	/* not evaluated: last */
	if (x->fits)
		return (x->step_ns > y->step_ns) - (x->step_ns < y->step_ns);
	return (x->max_mem > y->max_mem) - (x->max_mem < y->max_mem);
}

void
sl_fit_changes_rank(sl_fit_change *ch, int n)
{
	/* stable, so that equals keep the order tried */
	for (int i = 1; i < n; i++)
		for (int q = i; q > 0 && change_cmp(&ch[q - 1], &ch[q]) > 0; q--) {
			sl_fit_change x = ch[q];
			ch[q] = ch[q - 1];
			ch[q - 1] = x;
		}
}

/*
 * Bytes that the devices together hold at least: one copy of every
 * parameter's states (the optimizer's unless offloaded); of a frozen
 * weight its weight alone, half a byte an element under QLoRA (its NF4
 * values alone, the least any weight takes).
 */
static int64_t
states_floor(const sl_hybrid_opts *o, sl_error *err)
{
	const sl_recipe *rc = &o->space.recipe;
	sl_graph *g = o->model(o->model_ctx, 1, rc->seq, err);
	int64_t p, b;

	if (g == NULL)
		return -1;
	p = sl_graph_param_count(g);
	sl_graph_free(g);
	if (rc->finetune == SL_FT_QLORA)
		return p / 2;
	if (sl_recipe_frozen(rc))
		return sl_mul_sat(p, sl_recipe_part_bytes(rc, SL_PART_WEIGHT));
	b = sl_recipe_state_bytes(rc, SL_CAT_PARAMS) +
	    sl_recipe_state_bytes(rc, SL_CAT_GRADS);
	if (!o->offload_optimizer)
		b += sl_recipe_state_bytes(rc, SL_CAT_OPTIM);
	return sl_mul_sat(p, b);
}

int
sl_hybrid_min_devices(const sl_hybrid_opts *o, int hi, int *devices,
    int *lower, sl_hybrid_result *r, sl_error *err)
{
	sl_hybrid_opts t = *o;
	int64_t floor = states_floor(o, err), cap = sl_hybrid_mem_cap(o);
	int lo;

	memset(r, 0, sizeof *r);
	*devices = 0;
	if (floor < 0)
		return err->code != SL_OK ? err->code : SL_EINPUT;
	lo = 1;
	if (cap > 0) {
		int64_t q = floor / cap + (floor % cap != 0);
		lo = q > INT32_MAX ? INT32_MAX : q < 1 ? 1 : (int)q;
	}
	*lower = lo;
	/* a count that fits lies within a few times the floor, or the
	 * memory the floor leaves out (activations) is what does not fit */
	if (hi <= 0)
		hi = lo > INT32_MAX / 4 ? INT32_MAX : lo * 4 > lo + 63 ? lo * 4 : lo + 63;
	t.topo = NULL;
	for (int n = lo; n <= hi; n++) {
		int rc;
		t.devices = n;
		if ((rc = sl_hybrid_search(&t, r, err)) != SL_OK)
			return rc;
		if (r->found) {
			*devices = n;
			return SL_OK;
		}
		sl_hybrid_result_free(r);
		memset(r, 0, sizeof *r);
	}
	return SL_OK;
}

int
sl_hybrid_suggest(const sl_hybrid_opts *o, sl_fit_change **out, int *n,
    sl_error *err)
{
	sl_fit_change *ch = sl_xcalloc(8, sizeof *ch);
	int k = 0, rc = SL_OK;
	sl_hybrid_opts t;

	/* recomputation */
	if (o->space.recipe.recompute != SL_RECOMP_FULL &&
	    o->space.recipe.recompute != SL_RECOMP_AUTO) {
		t = *o;
		t.space.recipe.recompute = SL_RECOMP_AUTO;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("recomputation chosen per stage"));
		ch[k].setting = SL_SET_RECOMPUTE;
		snprintf(ch[k].value, sizeof ch[k].value, "%s",
		    sl_recompute_name(SL_RECOMP_AUTO));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* more pipeline stages than the search allows */
	if (o->pp > 0) {
		t = *o;
		t.pp = 0;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("any pipeline degree"));
		ch[k].setting = SL_SET_PP;	/* left free */
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* the smallest micro-batch */
	if (o->micro_batch != 1) {
		t = *o;
		t.micro_batch = 1;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("micro-batch of 1 sample per data-parallel rank"));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* shorter sequence */
	{
		t = *o;
		t.space.recipe.seq = (o->space.recipe.seq > 0 ? o->space.recipe.seq :
		    o->model_seq) / 2;
		if (t.space.recipe.seq >= 1) {
			snprintf(ch[k].what, sizeof ch[k].what, _("sequence of %lld tokens"),
			    (long long)t.space.recipe.seq);
			if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
				goto out;
		}
	}
	/* more devices */
	for (int f = 2; f <= 4; f *= 2) {
		t = *o;
		t.devices = o->devices * f;
		if (o->global_batch <= 0)
			t.global_batch = o->devices;
		snprintf(ch[k].what, sizeof ch[k].what, _("%d devices"), t.devices);
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* optimizer states in host memory */
	if (!o->offload_optimizer) {
		t = *o;
		t.offload_optimizer = 1;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("optimizer states offloaded to host memory"));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	sl_fit_changes_rank(ch, k);
out:
	if (rc != SL_OK) {
		free(ch);
		*out = NULL;
		*n = 0;
		return rc;
	}
	*out = ch;
	*n = k;
	return SL_OK;
}
