/*
 * planfile.c: a plan reopened (the explorer's --plan, timeline --plan)
 * takes how it was made from its file: model, mesh, hardware, recipe,
 * batches and options.  A flag that says the same is welcome; one that
 * contradicts the file is an error naming the flag, the file and what the
 * file says, never silently preferred.
 */
#include "cli.h"

#include <stdlib.h>

static int
contradicts_at(const sl_plan_file *pf, int line, int col, const char *flag,
    const char *given, const char *file, sl_error *err)
{
	return sl_error_set(err, SL_EINPUT, pf->path, line, col,
	    _("%s %s contradicts the plan, which was made with %s; leave the flag "
	    "out to reopen the plan as it was made"), flag, sl_esc(given),
	    sl_esc(file));
}

static int
contradicts(const sl_plan_file *pf, const char *flag, const char *given,
    const char *file, sl_error *err)
{
	return contradicts_at(pf, 0, 0, flag, given, file, err);
}

/* "2x4" or "8" */
static void
shape_str(int n, const int *shape, char *buf, size_t len)
{
	if (n == 2)
		snprintf(buf, len, "%dx%d", shape[0], shape[1]);
	else
		snprintf(buf, len, "%d", shape[0]);
}

/* One recipe setting: the flag's value when given (must match), else the
 * file's. */
#define PLAN_SETTING(flag, field, name_fn)					\
	do {								\
		if (!pf->has_recipe)					\
			break;						\
		if (cli_given(o, flag + 2)) {				\
			if (o->recipe.field != pf->recipe.field)	\
				return contradicts(pf, flag,		\
				    name_fn(o->recipe.field),		\
				    name_fn(pf->recipe.field), err);	\
		} else							\
			o->recipe.field = pf->recipe.field;		\
	} while (0)

static const char *
targets_str(unsigned t)
{
	static _Thread_local char buf[64];

	return sl_lora_targets_format(t, buf, sizeof buf);
}

static const char *
i64_str(int64_t v)
{
	static _Thread_local char buf[4][32];
	static _Thread_local int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%lld", (long long)v);
	return buf[k];
}

int
cli_plan_apply(cli_opts *o, const sl_plan_file *pf, sl_error *err)
{
	char a[32], b[32];

	/* the mesh: a whole-model plan's, or every device of a pipeline's */
	if (pf->n_stages > 0) {
		int sub = pf->shape[0] * (pf->n_axes == 2 ? pf->shape[1] : 1);
		int all = pf->has_setup ? pf->devices : pf->pp * sub;
		if (o->mesh_set) {
			int given = o->shape[0] * (o->n_axes == 2 ? o->shape[1] : 1);
			if (given != all) {
				snprintf(b, sizeof b, _("%d devices"), all);
				return contradicts_at(pf, pf->mesh_line, pf->mesh_col,
				    "--mesh/--devices", o->mesh_arg ? o->mesh_arg : "?",
				    b, err);
			}
		}
		o->n_axes = 1;
		o->shape[0] = all;
		o->mesh_set = true;
	} else if (pf->n_axes > 0) {
		if (o->mesh_set && (o->n_axes != pf->n_axes || o->shape[0] != pf->shape[0] ||
		    (pf->n_axes == 2 && o->shape[1] != pf->shape[1]))) {
			shape_str(o->n_axes, o->shape, a, sizeof a);
			shape_str(pf->n_axes, pf->shape, b, sizeof b);
			return contradicts_at(pf, pf->mesh_line, pf->mesh_col,
			    "--mesh", a, b, err);
		}
		o->n_axes = pf->n_axes;
		for (int i = 0; i < pf->n_axes; i++)
			o->shape[i] = pf->shape[i];
		o->mesh_set = true;
	}
	if (pf->hardware != NULL) {
		if (cli_given(o, "hw") && strcmp(o->hw, pf->hardware) != 0)
			return contradicts(pf, "--hw", o->hw, pf->hardware, err);
		o->hw = pf->hardware;
	}
	/* the profile's figures as they were (the file may have changed) */
	if (pf->has_hw)
		o->hw_figures = &pf->hw;
	if (pf->n_stages == 0) {
		if (cli_given(o, "alpha") && o->alpha != pf->alpha) {
			snprintf(a, sizeof a, "%g", o->alpha);
			snprintf(b, sizeof b, "alpha %g", pf->alpha);
			return contradicts(pf, "--alpha", a, b, err);
		}
		o->alpha = pf->alpha;
	}
	if (pf->micro_batch > 0 && pf->n_stages == 0) {
		if (o->micro_batch_set && o->micro_batch != pf->micro_batch)
			return contradicts(pf, "--micro-batch", i64_str(o->micro_batch),
			    i64_str(pf->micro_batch), err);
		o->micro_batch = o->recipe.micro_batch = pf->micro_batch;
	}
	if (pf->has_zero && cli_given(o, "no-zero") && pf->zero)
		return contradicts(pf, "--no-zero", "", _("ZeRO-3 strategies"), err);
	if (pf->has_zero)
		o->no_zero = !pf->zero;
	PLAN_SETTING("--framework", framework, sl_framework_name);
	PLAN_SETTING("--attention", attention, sl_attention_name);
	PLAN_SETTING("--precision", precision, sl_precision_name);
	PLAN_SETTING("--recompute", recompute, sl_recompute_name);
	PLAN_SETTING("--global-batch", global_batch, i64_str);
	PLAN_SETTING("--finetune", finetune, sl_finetune_name);
	PLAN_SETTING("--lora-rank", lora_rank, i64_str);
	PLAN_SETTING("--lora-targets", lora_targets, targets_str);
	/* as cli_parse says without a plan file */
	if (!sl_recipe_frozen(&o->recipe) &&
	    (cli_given(o, "lora-rank") || cli_given(o, "lora-targets")))
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("--lora-rank and --lora-targets need --finetune lora or qlora"));
	PLAN_SETTING("--optimizer", optimizer, sl_optimizer_name);
	if (pf->has_recipe) {
		/* the framework, precision and state sharding are the plan's,
		 * not the defaults of a new plan (cli_hybrid_opts) */
		o->recipe_from_plan = true;
		if (cli_given(o, "no-clip-grad") && !pf->recipe.no_clip_grad)
			return contradicts(pf, "--no-clip-grad", "",
			    _("gradient clipping"), err);
		o->recipe.no_clip_grad = pf->recipe.no_clip_grad;
		if (cli_given(o, "no-overlap-grad-reduce") &&
		    !pf->recipe.no_grad_overlap)
			return contradicts(pf, "--no-overlap-grad-reduce", "",
			    _("the gradient reduction overlapped"), err);
		o->recipe.no_grad_overlap = pf->recipe.no_grad_overlap;
		o->recipe.shard_states = pf->recipe.shard_states;
		if (cli_given(o, "seq") && pf->recipe.seq > 0 &&
		    o->seq != pf->recipe.seq)
			return contradicts(pf, "--seq", i64_str(o->seq),
			    i64_str(pf->recipe.seq), err);
		if (pf->recipe.seq > 0)
			o->seq = o->recipe.seq = pf->recipe.seq;
	}
	return SL_OK;
}
