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

/*
 * One change of a combination: what it sets in the search's options, in
 * plain words.  Changes of one group exclude each other (2x or 4x the
 * devices; LoRA or QLoRA; one card).
 */
typedef struct move {
	int group;
	char what[64];
	int kind;		/* MV_ */
	int64_t value;
	sl_hw hw;		/* MV_HW */
} move;

enum { MV_RECOMPUTE, MV_PP, MV_MICRO, MV_DEVICES, MV_OFFLOAD, MV_SHARD,
	MV_PRECISION, MV_FINETUNE, MV_HW };

static void
move_apply(const move *m, const sl_hybrid_opts *o, sl_hybrid_opts *t)
{
	switch (m->kind) {
	case MV_RECOMPUTE:
		t->space.recipe.recompute = SL_RECOMP_AUTO;
		break;
	case MV_PP:
		t->pp = 0;
		break;
	case MV_MICRO:
		t->micro_batch = 1;
		break;
	case MV_DEVICES:
		t->devices = (int)(o->devices * m->value);
		if (o->global_batch <= 0)	/* the same samples a step */
			t->global_batch = o->devices;
		break;
	case MV_OFFLOAD:
		t->offload_optimizer = 1;
		break;
	case MV_SHARD:
		t->space.recipe.shard_states = (int)m->value;
		break;
	case MV_PRECISION:
		t->space.recipe.precision = (sl_precision)m->value;
		break;
	case MV_FINETUNE:
		t->space.recipe.finetune = (sl_finetune)m->value;
		break;
	case MV_HW:
		t->hw = m->hw;
		break;
	}
}

/*
 * The changes a combination may make, none of them the current setting:
 * recomputation, the pipeline degree left free, the micro-batch, 2x and 4x
 * the devices, optimizer offload, the states sharded further (ZeRO-2, or
 * Megatron-LM's distributed optimizer), bf16 mixed precision, LoRA and
 * QLoRA for a full fine-tuning, and the next two larger cards of the
 * bundled profiles (when no memory limit is set, which a card would not
 * change).
 */
static int
list_moves(const sl_hybrid_opts *o, move *mv, int max)
{
	const sl_recipe *r = &o->space.recipe;
	int n = 0, g = 0;

#define MOVE(kd, val, ...) do {						\
		if (n < max) {						\
			mv[n].group = g; mv[n].kind = (kd);		\
			mv[n].value = (val);				\
			snprintf(mv[n].what, sizeof mv[n].what, __VA_ARGS__); \
			n++;						\
		}							\
	} while (0)
	if (r->recompute != SL_RECOMP_FULL && r->recompute != SL_RECOMP_AUTO)
		MOVE(MV_RECOMPUTE, 0, "%s", _("recomputation chosen per stage"));
	g++;
	if (o->pp > 0)
		MOVE(MV_PP, 0, "%s", _("any pipeline degree"));
	g++;
	/* 0: searched, 1 among the sizes: not a change */
	if (o->micro_batch > 1)
		MOVE(MV_MICRO, 0, "%s", _("micro-batch of 1 sample per data-parallel rank"));
	g++;
	if (o->topo == NULL) {
		MOVE(MV_DEVICES, 2, _("%d devices"), o->devices * 2);
		MOVE(MV_DEVICES, 4, _("%d devices"), o->devices * 4);
	}
	g++;
	if (!o->offload_optimizer)
		MOVE(MV_OFFLOAD, 0, "%s", _("optimizer states offloaded to host memory"));
	g++;
	/* Megatron-LM's distributed optimizer shards the optimizer states
	 * alone (megatron/core/distributed/distributed_data_parallel.py);
	 * DeepSpeed's ZeRO-2 and the per-operator plans the gradients too */
	if (r->framework == SL_FW_MEGATRON ? r->shard_states < 1 :
	    r->shard_states >= 0 && r->shard_states < 2 &&
	    r->framework != SL_FW_TORCHTITAN)
		MOVE(MV_SHARD, r->framework == SL_FW_MEGATRON ? 1 : 2, "%s",
		    r->framework == SL_FW_MEGATRON ?
		    _("optimizer states sharded over data parallel") :
		    _("optimizer states and gradients sharded over data parallel (ZeRO-2)"));
	g++;
	if (r->precision != SL_PREC_BF16 && !sl_recipe_frozen(r))
		MOVE(MV_PRECISION, SL_PREC_BF16, "%s",
		    _("bf16 with fp32 master weights (16 B/param)"));
	g++;
	if (r->finetune == SL_FT_FULL) {
		MOVE(MV_FINETUNE, SL_FT_LORA, _("LoRA rank %d on its targets"), r->lora_rank);
		MOVE(MV_FINETUNE, SL_FT_QLORA, _("QLoRA rank %d on its targets"), r->lora_rank);
	}
	g++;
	if (o->mem_limit <= 0) {
		const char *const *names = sl_bundled_hardware();
		int64_t last = o->hw.memory_bytes;
		for (int k = 0; k < 2 && n < max; k++) {
			sl_hw best, h;
			bool have = false;
			for (size_t i = 0; names[i] != NULL; i++) {
				sl_error e;
				sl_error_clear(&e);
				if (sl_hw_load(names[i], &h, &e) == SL_OK &&
				    h.memory_bytes > last &&
				    (!have || h.memory_bytes < best.memory_bytes)) {
					best = h;
					have = true;
				}
			}
			if (!have)
				break;
			MOVE(MV_HW, 0, _("%.40s cards (%.16s)"), best.device, best.name);
			mv[n - 1].hw = best;
			last = best.memory_bytes;
		}
	}
#undef MOVE
	return n;
}

/* The next combination of k of n moves, one a group (idx ascending). */
static bool
next_combo(const move *mv, int n, int k, int *idx, bool first)
{
	int i;

	if (k > n)
		return false;
	if (first) {
		for (i = 0; i < k; i++)
			idx[i] = i;
	} else {
		for (i = k - 1; i >= 0 && idx[i] == n - k + i; i--)
			;
		if (i < 0)
			return false;
		idx[i]++;
		for (int j = i + 1; j < k; j++)
			idx[j] = idx[j - 1] + 1;
	}
	for (;;) {
		bool ok = true;
		for (i = 1; i < k && ok; i++)
			for (int j = 0; j < i; j++)
				if (mv[idx[i]].group == mv[idx[j]].group)
					ok = false;
		if (ok)
			return true;
		for (i = k - 1; i >= 0 && idx[i] == n - k + i; i--)
			;
		if (i < 0)
			return false;
		idx[i]++;
		for (int j = i + 1; j < k; j++)
			idx[j] = idx[j - 1] + 1;
	}
}

/* The most combined searches one suggestion runs: each is a hybrid search. */
#define MAX_COMBO_SEARCHES 48
/* The changes listed at most. */
#define MAX_LISTED 10

/*
 * The changes not tried alone yet (sharding, precision, LoRA, a card),
 * then combinations of two and then three changes, each size tried only
 * while none of fewer changes fits: the fewest changes that reach a fit,
 * ranked by step time.  ch has room for cap entries, *k in use.
 */
static int
suggest_combos(const sl_hybrid_opts *o, sl_fit_change **chp, int *k, int *cap,
    sl_error *err)
{
	move mv[16];
	int n = list_moves(o, mv, 16), searches = 0, rc;

	for (int size = 1; size <= 3 && searches < MAX_COMBO_SEARCHES; size++) {
		int idx[3];
		bool fit = false;
		for (int i = 0; i < *k; i++)
			fit = fit || (*chp)[i].fits;
		if (fit)
			break;
		for (bool first = true; next_combo(mv, n, size, idx, first) &&
		    searches < MAX_COMBO_SEARCHES; first = false) {
			sl_hybrid_opts t = *o;
			sl_fit_change *c;
			size_t len = 0;
			/* alone, these were tried by sl_hybrid_suggest */
			if (size == 1 && mv[idx[0]].kind <= MV_OFFLOAD)
				continue;
			if (*k == *cap) {
				*cap *= 2;
				*chp = sl_xrealloc(*chp, *cap * sizeof **chp);
			}
			c = &(*chp)[*k];
			memset(c, 0, sizeof *c);
			for (int i = 0; i < size; i++) {
				move_apply(&mv[idx[i]], o, &t);
				len += (size_t)snprintf(c->what + len, len < sizeof c->what ?
				    sizeof c->what - len : 0, "%s%s", i ? " + " : "",
				    mv[idx[i]].what);
				if (len >= sizeof c->what)
					len = sizeof c->what - 1;
			}
			if (size == 1 && mv[idx[0]].kind == MV_HW) {
				c->setting = SL_SET_HW;
				snprintf(c->value, sizeof c->value, "%s", mv[idx[0]].hw.name);
				snprintf(c->what, sizeof c->what, _("%.40s cards"),
				    mv[idx[0]].hw.device);
			}
			searches++;
			if ((rc = suggest_one(o, &t, c, err)) != SL_OK)
				return rc;
			(*k)++;
		}
	}
	return SL_OK;
}

int
sl_hybrid_suggest(const sl_hybrid_opts *o, sl_fit_change **out, int *n,
    sl_error *err)
{
	int cap = 16;
	sl_fit_change *ch = sl_xcalloc(cap, sizeof *ch);
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
	/* the smallest micro-batch (0: searched, 1 among the sizes tried) */
	if (o->micro_batch > 1) {
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
	/* none fits alone: changes together */
	if ((rc = suggest_combos(o, &ch, &k, &cap, err)) != SL_OK)
		goto out;
	sl_fit_changes_rank(ch, k);
	/* with changes that fit, those that do not are noise; a change not
	 * evaluated still says why */
	if (k > 0 && ch[0].fits) {
		int w = 0;
		for (int i = 0; i < k; i++)
			if (ch[i].fits || ch[i].why[0] != '\0')
				ch[w++] = ch[i];
		k = w;
	}
	if (k > MAX_LISTED)
		k = MAX_LISTED;
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
