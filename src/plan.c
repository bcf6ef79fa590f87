/*
 * plan.c: the plan file (man shardlab-plan.5).  sl_plan_write exports an
 * assignment with the evaluator's numbers, atomically; sl_plan_read reads
 * one back and sl_plan_choice maps it onto a strategy space by operator
 * and strategy name, so a saved plan can be re-evaluated, validated or
 * loaded into the explorer.
 */
#include "internal.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>

#include <jansson.h>

#define PLAN_FORMAT "shardlab-plan"
#define PLAN_VERSION 1
#define PLAN_MAX_DEVICES 65536

/* ------------------------------------------------------------------ writer */

/*
 * The plan is built as a jansson tree and written by sl_json_write (json.c),
 * whose layout keeps one device, constraint, operator or tensor per line and
 * writes reals in their shortest exact form (alpha must round-trip exactly
 * for the objective to be reproducible).
 */

static json_t *
j_dims(int n, const int64_t *v)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static json_t *
j_mem(const sl_mem *m)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
	    "total", (json_int_t)sl_mem_total(m),
	    "parameters", (json_int_t)m->params,
	    "gradients", (json_int_t)m->grads,
	    "optimizer", (json_int_t)m->optim,
	    "activations", (json_int_t)m->acts,
	    "buffers", (json_int_t)m->buffers);
}

static int64_t
comm_total(const sl_comm *c)
{
	int64_t t = 0;

	for (int k = 0; k < SL_COLL_COUNT; k++)
		t = sl_add_sat(t, c->ns[k]);
	return t;
}

/* d to six significant digits. */
static double
strtod_6g(double d)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%.6g", d);
	return strtod(buf, NULL);
}

/* A measured time in milliseconds: microseconds are all it can tell. */
static json_t *
j_ms(double ms)
{
	return json_real(isfinite(ms) ? round(ms * 1000.0) / 1000.0 : 0.0);
}

json_t *
sl_plan_recipe_json(const sl_recipe *rc, const uint8_t *layer_recompute,
    int n_layers)
{
	json_t *o = json_pack(
	    "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:s, s:b, s:b}",
	    "framework", sl_framework_name(rc->framework),
	    "attention", sl_attention_name(rc->attention),
	    "precision", sl_precision_name(rc->precision),
	    "recompute", sl_recompute_name(rc->recompute),
	    "micro_batch", (json_int_t)rc->micro_batch,
	    "global_batch", (json_int_t)rc->global_batch,
	    "seq", (json_int_t)rc->seq, "shard_states", rc->shard_states,
	    "optimizer", sl_optimizer_name(rc->optimizer),
	    "clip_grad", (int)!rc->no_clip_grad,
	    "overlap_grad_reduce", (int)!rc->no_grad_overlap);

	/* written only when fine-tuning: older plans read as pre-training */
	if (rc->finetune != SL_FT_NONE)
		json_object_set_new(o, "finetune",
		    json_string(sl_finetune_name(rc->finetune)));
	if (sl_recipe_frozen(rc)) {
		char t[64];
		json_object_set_new(o, "lora_rank", json_integer(rc->lora_rank));
		json_object_set_new(o, "lora_targets", json_string(
		    sl_lora_targets_format(rc->lora_targets, t, sizeof t)));
	}
	if (n_layers > 0) {
		json_t *a = json_array();
		for (int l = 0; l < n_layers; l++)
			json_array_append_new(a, json_string(
			    sl_recompute_name(layer_recompute[l])));
		json_object_set_new(o, "layer_recompute", a);
	}
	return o;
}

static void
add_header(json_t *root, const sl_space *s, const sl_eval *ev,
    const sl_plan_meta *meta)
{
	const sl_graph *g = s->g;
	const sl_mesh *m = &s->mesh;
	const sl_recipe *rc = &s->opts.recipe;
	int64_t shape[SL_MAX_AXES];
	char name[32];
	json_t *o, *a;

	json_object_set_new(root, "format", json_string(PLAN_FORMAT));
	json_object_set_new(root, "version", json_integer(PLAN_VERSION));

	o = json_pack("{s:o, s:o, s:o, s:I, s:I}",
	    "name", sl_json_str(g->name),
	    "source", sl_json_str(meta->model_source != NULL ?
	    meta->model_source : g->source),
	    "sha256", sl_json_str(g->sha256[0] != '\0' ? g->sha256 : NULL),
	    "parameters", (json_int_t)sl_graph_param_count(g),
	    "operators", (json_int_t)g->n_ops);
	if (meta->micro_batch > 0)
		json_object_set_new(o, "micro_batch",
		    json_integer(meta->micro_batch));
	json_object_set_new(root, "model", o);

	for (int i = 0; i < m->n_axes; i++)
		shape[i] = m->axes[i].size;
	if (m->n_axes == 2)
		snprintf(name, sizeof name, "%dx%d", m->axes[0].size,
		    m->axes[1].size);
	else
		snprintf(name, sizeof name, "%d", m->axes[0].size);
	a = json_array();
	for (int i = 0; i < m->n_axes; i++)
		json_array_append_new(a, json_pack("{s:i, s:o, s:o}",
		    "size", m->axes[i].size,
		    "bandwidth", sl_json_real(m->axes[i].link.bandwidth),
		    "latency", sl_json_real(m->axes[i].link.latency)));
	json_object_set_new(root, "mesh", json_pack(
	    "{s:o, s:s, s:i, s:o, s:o, s:o, s:I, s:I, s:I, s:o}",
	    "shape", j_dims(m->n_axes, shape), "name", name,
	    "devices", m->n_devices,
	    "hardware", sl_json_str(meta->hw_source != NULL ? meta->hw_source :
	    m->hw.name),
	    "hardware_name", sl_json_str(m->hw.name),
	    "device", sl_json_str(m->hw.device),
	    "device_memory_bytes", (json_int_t)m->hw.memory_bytes,
	    "device_capacity_bytes", (json_int_t)m->hw.capacity_bytes,
	    "device_reserve_bytes", (json_int_t)m->hw.reserve_bytes,
	    "axes", a));

	json_object_set_new(root, "options", json_pack("{s:b}", "zero",
	    (int)s->opts.zero));
	json_object_set_new(root, "recipe", sl_plan_recipe_json(rc,
	    s->layer_recompute, g->n_layers));
	json_object_set_new(root, "alpha", sl_json_real(meta->alpha));

	if (meta->sol != NULL) {
		const sl_solution *sol = meta->sol;
		json_object_set_new(root, "solver", json_pack(
		    "{s:s, s:s, s:I, s:o, s:b, s:o}",
		    "name", sl_solver_name(sol->solver),
		    "status", sl_solve_status_name(sol->status),
		    "objective", (json_int_t)sol->objective,
		    "time_ms", j_ms(sol->time_ms),
		    "confirmed", (int)sol->confirmed,
		    "note", json_string(sol->note)));
	}

	json_object_set_new(root, "objective", json_integer(ev->objective));
	json_object_set_new(root, "memory_objective_bytes",
	    json_integer(ev->mem_part));
	json_object_set_new(root, "max_memory_bytes", json_integer(ev->max_total));
	json_object_set_new(root, "devices_over_capacity",
	    json_integer(ev->n_over_capacity));
	json_object_set_new(root, "redundant_bytes", json_integer(ev->redundant));
	json_object_set_new(root, "comm_time_ns", json_integer(ev->comm_ns));
	o = json_object();
	for (int k = 0; k < SL_COLL_COUNT; k++)
		json_object_set_new(o, sl_coll_name((sl_coll)k), json_pack(
		    "{s:I, s:I}", "time_ns", (json_int_t)ev->comm.ns[k],
		    "bytes", (json_int_t)ev->comm.bytes[k]));
	json_object_set_new(root, "comm", o);
	json_object_set_new(root, "step", json_pack(
	    "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o}",
	    "time_ns", (json_int_t)ev->step_ns,
	    "compute_ns", (json_int_t)ev->compute_ns,
	    "recompute_ns", (json_int_t)ev->recompute_ns,
	    "exposed_comm_ns", (json_int_t)ev->exposed_comm_ns,
	    "exposed_accum_ns", (json_int_t)ev->exposed_accum_ns,
	    "optimizer_ns", (json_int_t)ev->optim_ns,
	    "accum_steps", (json_int_t)ev->accum_steps,
	    "tokens", (json_int_t)ev->tokens,
	    "tokens_per_s", sl_json_real(ev->tokens_per_s),
	    "model_flops", sl_json_real(ev->model_flops),
	    "hardware_flops", sl_json_real(ev->hw_flops),
	    "mfu", sl_json_real(ev->mfu),
	    "hfu", sl_json_real(ev->hfu)));
}

static json_t *
j_devices(const sl_space *s, const sl_eval *ev)
{
	const sl_mesh *m = &s->mesh;
	json_t *a = json_array();

	for (int d = 0; d < ev->n_devices; d++) {
		int coord[SL_MAX_AXES];
		int64_t c64[SL_MAX_AXES], total = sl_mem_total(&ev->dev[d]);

		sl_mesh_coords(m, d, coord);
		for (int i = 0; i < m->n_axes; i++)
			c64[i] = coord[i];
		json_array_append_new(a, json_pack(
		    "{s:i, s:o, s:o, s:I, s:I, s:b}", "id", d,
		    "coords", j_dims(m->n_axes, c64),
		    "memory_bytes", j_mem(&ev->dev[d]),
		    "redundant_bytes", (json_int_t)(ev->dev_redundant != NULL ?
		    ev->dev_redundant[d] : 0),
		    "compute_ns", (json_int_t)(ev->dev_compute_ns != NULL ?
		    ev->dev_compute_ns[d] : 0),
		    "over_capacity", (int)(m->hw.memory_bytes > 0 &&
		    total > m->hw.memory_bytes)));
	}
	return a;
}

static json_t *
j_constraints(const sl_constraints *cs)
{
	json_t *a = json_array();

	for (int i = 0; cs != NULL && i < cs->n; i++)
		json_array_append_new(a, json_pack("{s:o, s:o, s:s}",
		    "op", sl_json_str(cs->c[i].op),
		    "strategy", sl_json_str(cs->c[i].strategy),
		    "kind", cs->c[i].pin ? "pin" : "forbid"));
	return a;
}

static json_t *
j_op(const sl_space *s, const int *choice, const sl_eval *ev,
    const sl_constraints *cs, int i)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[i];
	const sl_strategy *st = &s->ops[i].strat[choice[i]];
	int zero[SL_MAX_AXES] = { 0 };
	bool pinned = false;
	int n_slots = op->n_in + op->n_out;
	json_t *forbidden = json_array(), *tensors = json_array();

	for (int c = 0; cs != NULL && c < cs->n; c++) {
		if (strcmp(cs->c[c].op, op->name) != 0)
			continue;
		if (!cs->c[c].pin)
			json_array_append_new(forbidden,
			    sl_json_str(cs->c[c].strategy));
		else if (strcmp(cs->c[c].strategy, st->name) == 0)
			pinned = true;
	}
	for (int slot = 0; slot < n_slots; slot++) {
		int ti = slot < op->n_in ? op->in[slot] : op->out[slot - op->n_in];
		const sl_tensor *t = &g->tensors[ti];
		const sl_spec *sp = &st->spec[slot];
		int64_t local[SL_MAX_RANK];
		char spec[64];

		for (int d = 0; d < t->rank; d++)
			local[d] = sl_local_dim(&s->mesh, sp, d, t->dims[d], zero);
		json_array_append_new(tensors, json_pack(
		    "{s:o, s:s, s:s, s:s, s:o, s:o, s:s}",
		    "name", sl_json_str(t->name), "role", sl_role_name(t->role),
		    "io", slot < op->n_in ? "in" : "out",
		    "dtype", sl_dtype_name(t->dtype),
		    "shape", j_dims(t->rank, t->dims),
		    "local_shape", j_dims(t->rank, local),
		    "spec", sl_spec_format(sp, t->rank, spec, sizeof spec)));
	}
	return json_pack("{s:o, s:s, s:o, s:o, s:b, s:o, s:I, s:I, s:o}",
	    "name", sl_json_str(op->name), "kind", sl_op_kind_name(op->kind),
	    "layer", op->layer >= 0 && op->layer < g->n_layers ?
	    sl_json_str(g->layers[op->layer].name) : json_null(),
	    "strategy", sl_json_str(st->name), "pinned", (int)pinned,
	    "forbidden", forbidden,
	    "memory_bytes", (json_int_t)(ev->ops != NULL && i < ev->n_ops ?
	    sl_mem_total(&ev->ops[i].mem) : 0),
	    "comm_time_ns", (json_int_t)(ev->ops != NULL && i < ev->n_ops ?
	    comm_total(&ev->ops[i].comm) : 0),
	    "tensors", tensors);
}

/* Memory over time on device 0: the sum the solvers weigh, the timeline's
 * peak in the default and the optimised order, and that order. */
static void
add_timeline(json_t *root, const sl_space *s, const int *choice)
{
	sl_timeline tl;
	char name[128];
	json_t *order;

	if (sl_timeline_build(s, choice, 0, true, &tl, NULL) != SL_OK)
		return;
	order = json_array();
	for (int p = 0; p < tl.n_tasks; p++)
		json_array_append_new(order, json_string(sl_task_name(s,
		    &tl.task[tl.order[p]], name, sizeof name)));
	json_object_set_new(root, "memory_over_time", json_pack(
	    "{s:i, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:o}", "device", 0,
	    "sum", (json_int_t)tl.sum, "peak_default", (json_int_t)tl.peak_default,
	    "peak", (json_int_t)tl.peak, "gap", (json_int_t)(tl.peak - tl.sum),
	    "order_exact", (int)tl.exact,
	    "allocated_peak", (json_int_t)tl.alloc_peak,
	    "reserved_peak", (json_int_t)tl.reserved_peak, "order", order));
	sl_timeline_free(&tl);
}

int
sl_plan_write(const sl_space *s, const int *choice, const sl_eval *ev,
    const sl_plan_meta *meta, const char *path, sl_error *err)
{
	static const sl_plan_meta none;
	json_t *root, *ops;

	if (s == NULL || s->g == NULL || choice == NULL || ev == NULL ||
	    path == NULL)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("plan export: missing space, assignment or evaluation"));
	if (meta == NULL)
		meta = &none;
	/* check everything before a byte is written */
	for (int i = 0; i < s->g->n_ops; i++)
		if (choice[i] < 0 || choice[i] >= s->ops[i].n_strat)
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("plan export: operator \"%s\" has no strategy %d"),
			    s->g->ops[i].name, choice[i]);
	if (ev->n_devices != s->mesh.n_devices || ev->dev == NULL)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("plan export: the evaluation is for %d devices, the "
		    "mesh has %d"), ev->n_devices, s->mesh.n_devices);

	root = json_object();
	add_header(root, s, ev, meta);
	json_object_set_new(root, "devices", j_devices(s, ev));
	json_object_set_new(root, "constraints", j_constraints(meta->cs));
	add_timeline(root, s, choice);
	ops = json_array();
	for (int i = 0; i < s->g->n_ops; i++)
		json_array_append_new(ops, j_op(s, choice, ev, meta->cs, i));
	json_object_set_new(root, "ops", ops);
	/* the figures the plan was made with, for reopening it as it was
	 * (last: the lines above stay where they were) */
	json_object_set_new(root, "hardware_profile", sl_hw_json(&s->mesh.hw));
	return sl_json_write(root, path, _("cannot write the plan"), err);
}

/* ------------------------------------------------------------------ reader */

typedef struct plan_rd {
	const sl_json *j;	/* the values and their positions */
	sl_error *err;
} plan_rd;

/*
 * The node at path (json.h, "ops[3].strategy"), or the deepest ancestor
 * that exists: a missing member is reported at its object.
 */
#define rd_node(r, path) sl_json_node((r)->j, (path))
#define rd_fail(r, path, ...) sl_json_fail((r)->j, (r)->err, (path), __VA_ARGS__)

/* A string member of obj (at path at); *out points into the JSON value. */
static int
rd_string(const plan_rd *r, json_t *obj, const char *key, const char *at,
    bool required, const char **out)
{
	json_t *v = json_object_get(obj, key);
	char path[256];

	*out = NULL;
	if (v == NULL) {
		if (!required)
			return SL_OK;
		return rd_fail(r, at, _("missing field \"%s\""), key);
	}
	snprintf(path, sizeof path, "%s%s%s", at, *at ? "." : "", key);
	if (!json_is_string(v) || (required && json_string_length(v) == 0))
		return rd_fail(r, path, _("\"%s\" must be a non-empty string"),
		    key);
	*out = json_string_value(v);
	return SL_OK;
}

static int
rd_mesh(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *mesh = json_object_get(root, "mesh"), *shape, *v;
	const char *hw;
	int64_t prod = 1;
	int rc;

	if (mesh == NULL)
		return rd_fail(r, "", "%s", _("missing field \"mesh\""));
	if (!json_is_object(mesh))
		return rd_fail(r, "mesh", "%s",
		    _("\"mesh\" must be an object with \"shape\""));
	shape = json_object_get(mesh, "shape");
	if (!json_is_array(shape) || json_array_size(shape) < 1 ||
	    json_array_size(shape) > SL_MAX_AXES)
		return rd_fail(r, "mesh.shape", "%s", _("\"shape\" must be an "
		    "array of 1 or 2 axis sizes, e.g. [2, 4]"));
	pf->n_axes = (int)json_array_size(shape);
	for (int a = 0; a < SL_MAX_AXES; a++)
		pf->shape[a] = 1;
	for (int a = 0; a < pf->n_axes; a++) {
		char path[64];

		v = json_array_get(shape, (size_t)a);
		snprintf(path, sizeof path, "mesh.shape[%d]", a);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > PLAN_MAX_DEVICES)
			return rd_fail(r, path, _("a mesh axis must be a whole "
			    "number of devices from 1 to %d"), PLAN_MAX_DEVICES);
		pf->shape[a] = (int)json_integer_value(v);
		prod *= pf->shape[a];
	}
	if (prod > PLAN_MAX_DEVICES)
		return rd_fail(r, "mesh.shape", _("the mesh has more than %d "
		    "devices"), PLAN_MAX_DEVICES);
	if ((rc = rd_string(r, mesh, "hardware", "mesh", false, &hw)) != SL_OK)
		return rc;
	pf->hardware = hw != NULL ? sl_xstrdup(hw) : NULL;
	{
		const jp_node *n = rd_node(r, "mesh.shape");
		pf->mesh_line = n ? n->line : 0;
		pf->mesh_col = n ? n->col : 0;
	}
	return SL_OK;
}

static int
rd_model(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *model = json_object_get(root, "model"), *mb, *cnt;
	const char *name, *src, *sha;
	int rc;

	if (model == NULL)
		return rd_fail(r, "", "%s", _("missing field \"model\""));
	if (!json_is_object(model))
		return rd_fail(r, "model", "%s",
		    _("\"model\" must be an object with \"name\""));
	if ((rc = rd_string(r, model, "name", "model", true, &name)) != SL_OK ||
	    (rc = rd_string(r, model, "source", "model", false, &src)) != SL_OK)
		return rc;
	pf->model = sl_xstrdup(name);
	pf->model_source = src != NULL && *src != '\0' ? sl_xstrdup(src) : NULL;
	if ((rc = rd_string(r, model, "sha256", "model", false, &sha)) != SL_OK)
		return rc;
	if (sha != NULL) {
		const jp_node *n = rd_node(r, "model.sha256");
		size_t k = strspn(sha, "0123456789abcdef");
		if (strlen(sha) != 64 || k != 64)
			return rd_fail(r, "model.sha256", "%s", _("\"sha256\" "
			    "must be 64 lowercase hexadecimal digits"));
		memcpy(pf->sha256, sha, 65);
		pf->sha_line = n ? n->line : 0;
		pf->sha_col = n ? n->col : 0;
	}
	cnt = json_object_get(model, "operators");
	if (cnt != NULL) {
		const jp_node *n = rd_node(r, "model.operators");
		if (!json_is_integer(cnt) || json_integer_value(cnt) < 1 ||
		    json_integer_value(cnt) > INT32_MAX)
			return rd_fail(r, "model.operators", "%s",
			    _("\"operators\" must be a whole number of at least 1"));
		pf->model_ops = (int)json_integer_value(cnt);
		pf->count_line = n ? n->line : 0;
		pf->count_col = n ? n->col : 0;
	}
	mb = json_object_get(model, "micro_batch");
	if (mb != NULL) {
		if (!json_is_integer(mb) || json_integer_value(mb) < 1)
			return rd_fail(r, "model.micro_batch", "%s",
			    _("\"micro_batch\" must be a whole number of at "
			    "least 1"));
		pf->micro_batch = json_integer_value(mb);
	}
	return SL_OK;
}

/* "recipe": how the plan's step is trained; absent in older plans. */
static int
rd_recipe(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	static const char *const names[] = { "attention", "precision", "recompute",
	    "framework" };
	json_t *o = json_object_get(root, "recipe"), *v, *arr;
	char at[64];

	sl_recipe_default(&pf->recipe);
	pf->has_recipe = false;
	if (o == NULL)
		return SL_OK;
	if (!json_is_object(o))
		return rd_fail(r, "recipe", "%s", _("\"recipe\" must be an object"));
	for (int i = 0; i < 4; i++) {
		static const char *const expect[] = { "flash, naive",
		    "bf16, megatron, amp, fp32, fp8, fp16", "none, selective, full, auto",
		    "megatron, torchtitan, deepspeed, free" };
		const char *sv;
		int k;
		snprintf(at, sizeof at, "recipe.%s", names[i]);
		v = json_object_get(o, names[i]);
		if (v == NULL)
			continue;
		sv = json_string_value(v);
		k = i == 0 ? sl_attention_from_name(sv) : i == 1 ?
		    sl_precision_from_name(sv) : i == 2 ?
		    sl_recompute_from_name(sv) : sl_framework_from_name(sv);
		if (k < 0)
			return rd_fail(r, at, _("unknown %s %s (expected %s)"), names[i],
			    sv ? sv : "?", expect[i]);
		if (i == 0)
			pf->recipe.attention = (sl_attention)k;
		else if (i == 1)
			pf->recipe.precision = (sl_precision)k;
		else if (i == 2)
			pf->recipe.recompute = (sl_recompute)k;
		else
			pf->recipe.framework = (sl_framework)k;
	}
	v = json_object_get(o, "shard_states");
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 2)
			return rd_fail(r, "recipe.shard_states", "%s",
			    _("\"shard_states\" must be 0, 1 or 2"));
		pf->recipe.shard_states = (int)json_integer_value(v);
	}
	for (int i = 0; i < 3; i++) {
		static const char *const nk[] = { "micro_batch", "global_batch", "seq" };
		int64_t *dst[] = { &pf->recipe.micro_batch, &pf->recipe.global_batch,
		    &pf->recipe.seq };
		snprintf(at, sizeof at, "recipe.%s", nk[i]);
		v = json_object_get(o, nk[i]);
		if (v == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < (i == 0 ? 1 : 0) ||
		    json_integer_value(v) > INT32_MAX)
			return rd_fail(r, at, _("\"%s\" must be a whole number from %d to %d"),
			    nk[i], i == 0 ? 1 : 0, INT32_MAX);
		*dst[i] = json_integer_value(v);
	}
	v = json_object_get(o, "finetune");
	if (v != NULL) {
		int k = sl_finetune_from_name(json_string_value(v));
		if (k < 0)
			return rd_fail(r, "recipe.finetune", "%s",
			    _("expected none, full, lora or qlora"));
		pf->recipe.finetune = (sl_finetune)k;
	}
	v = json_object_get(o, "lora_rank");
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 65536)
			return rd_fail(r, "recipe.lora_rank", "%s",
			    _("\"lora_rank\" must be a whole number from 1 to 65536"));
		pf->recipe.lora_rank = (int)json_integer_value(v);
	}
	v = json_object_get(o, "lora_targets");
	if (v != NULL) {
		char why[160];
		if (!json_is_string(v) || !sl_lora_targets_parse(json_string_value(v),
		    &pf->recipe.lora_targets, why, sizeof why))
			return rd_fail(r, "recipe.lora_targets", "%s",
			    json_is_string(v) ? why : _("expected a list such as \"q,v\""));
	}
	v = json_object_get(o, "optimizer");
	if (v != NULL) {
		int k = sl_optimizer_from_name(json_string_value(v));
		if (k < 0)
			return rd_fail(r, "recipe.optimizer", "%s",
			    _("unknown optimizer (expected fused, foreach)"));
		pf->recipe.optimizer = (sl_optimizer)k;
	}
	for (int i = 0; i < 2; i++) {
		static const char *const bk[] = { "clip_grad", "overlap_grad_reduce" };
		bool *dst[] = { &pf->recipe.no_clip_grad, &pf->recipe.no_grad_overlap };
		snprintf(at, sizeof at, "recipe.%s", bk[i]);
		v = json_object_get(o, bk[i]);
		if (v == NULL)
			continue;
		if (!json_is_boolean(v))
			return rd_fail(r, at, _("\"%s\" must be true or false"), bk[i]);
		*dst[i] = !json_is_true(v);
	}
	arr = json_object_get(o, "layer_recompute");
	if (arr != NULL) {
		size_t i;
		if (!json_is_array(arr))
			return rd_fail(r, "recipe.layer_recompute", "%s",
			    _("\"layer_recompute\" must be a list such as [\"none\", \"full\"]"));
		pf->n_layer_recompute = (int)json_array_size(arr);
		pf->layer_recompute = sl_xcalloc(pf->n_layer_recompute + 1, 1);
		json_array_foreach(arr, i, v) {
			int k = sl_recompute_from_name(json_string_value(v));
			snprintf(at, sizeof at, "recipe.layer_recompute[%zu]", i);
			if (k < 0 || k == SL_RECOMP_AUTO)
				return rd_fail(r, at, "%s", _("expected none, selective or full"));
			pf->layer_recompute[i] = (uint8_t)k;
		}
	}
	if (pf->micro_batch > 0 && json_object_get(o, "micro_batch") == NULL)
		pf->recipe.micro_batch = pf->micro_batch;
	pf->has_recipe = true;
	return SL_OK;
}

static int
rd_constraints(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *arr = json_object_get(root, "constraints"), *c;
	size_t i;

	if (arr == NULL)
		return SL_OK;
	if (!json_is_array(arr))
		return rd_fail(r, "constraints", "%s",
		    _("\"constraints\" must be an array"));
	json_array_foreach(arr, i, c) {
		const char *op, *st, *kind;
		char at[64], kp[80];
		int rc;

		snprintf(at, sizeof at, "constraints[%zu]", i);
		if (!json_is_object(c))
			return rd_fail(r, at, "%s", _("a constraint must be an "
			    "object with \"op\", \"strategy\" and \"kind\""));
		if ((rc = rd_string(r, c, "op", at, true, &op)) != SL_OK ||
		    (rc = rd_string(r, c, "strategy", at, true, &st)) != SL_OK ||
		    (rc = rd_string(r, c, "kind", at, true, &kind)) != SL_OK)
			return rc;
		if (strcmp(kind, "pin") != 0 && strcmp(kind, "forbid") != 0) {
			snprintf(kp, sizeof kp, "%s.kind", at);
			return rd_fail(r, kp, _("constraint kind \"%s\": "
			    "expected \"pin\" or \"forbid\""), kind);
		}
		sl_constraints_add(&pf->cs, op, st, strcmp(kind, "pin") == 0);
	}
	return SL_OK;
}

static int
rd_ops(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *arr = json_object_get(root, "ops"), *o;
	sl_names seen = { 0 };
	size_t i;

	if (arr == NULL)
		return rd_fail(r, "", "%s", _("missing field \"ops\""));
	if (!json_is_array(arr))
		return rd_fail(r, "ops", "%s",
		    _("\"ops\" must be an array of operators"));
	pf->n_ops = (int)json_array_size(arr);
	{
		const jp_node *n = rd_node(r, "ops");
		pf->ops_line = n ? n->line : 0;
		pf->ops_col = n ? n->col : 0;
	}
	pf->op_name = sl_xcalloc((size_t)pf->n_ops, sizeof *pf->op_name);
	pf->strategy = sl_xcalloc((size_t)pf->n_ops, sizeof *pf->strategy);
	pf->pinned = sl_xcalloc((size_t)pf->n_ops, sizeof *pf->pinned);
	pf->op_line = sl_xcalloc((size_t)pf->n_ops, sizeof *pf->op_line);
	pf->op_col = sl_xcalloc((size_t)pf->n_ops, sizeof *pf->op_col);
	json_array_foreach(arr, i, o) {
		const char *name, *st;
		char at[64], sp[80];
		const jp_node *n;
		json_t *pin;
		int rc;

		snprintf(at, sizeof at, "ops[%zu]", i);
		if (!json_is_object(o)) {
			sl_names_free(&seen);
			return rd_fail(r, at, "%s", _("an operator must be an "
			    "object with \"name\" and \"strategy\""));
		}
		if ((rc = rd_string(r, o, "name", at, true, &name)) != SL_OK ||
		    (rc = rd_string(r, o, "strategy", at, true, &st)) != SL_OK) {
			sl_names_free(&seen);
			return rc;
		}
		if (sl_names_get(&seen, name) >= 0) {
			sl_names_free(&seen);
			return rd_fail(r, at, _("operator \"%s\" appears "
			    "twice"), sl_esc(name));
		}
		pin = json_object_get(o, "pinned");
		if (pin != NULL && !json_is_boolean(pin)) {
			sl_names_free(&seen);
			snprintf(sp, sizeof sp, "%s.pinned", at);
			return rd_fail(r, sp, "%s",
			    _("\"pinned\" must be true or false"));
		}
		pf->op_name[i] = sl_xstrdup(name);
		sl_names_add(&seen, pf->op_name[i], (int)i);
		pf->strategy[i] = sl_xstrdup(st);
		pf->pinned[i] = json_is_true(pin);
		snprintf(sp, sizeof sp, "%s.strategy", at);
		n = rd_node(r, sp);
		pf->op_line[i] = n ? n->line : 0;
		pf->op_col[i] = n ? n->col : 0;
	}
	sl_names_free(&seen);
	return SL_OK;
}

/* A positive integer member of obj at path (at "" for the root). */
static int
rd_count(const plan_rd *r, json_t *obj, const char *key, const char *at,
    int64_t max, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	char path[128];

	snprintf(path, sizeof path, "%s%s%s", at, *at ? "." : "", key);
	if (v == NULL)
		return rd_fail(r, at, _("missing field \"%s\""), key);
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > max)
		return rd_fail(r, path, _("\"%s\" must be a whole number from 1 to %lld"),
		    key, (long long)max);
	*out = json_integer_value(v);
	return SL_OK;
}

/* A list of axis role names at path into role[]; its length into *n. */
static int
rd_roles(const plan_rd *r, json_t *arr, const char *path, int max,
    sl_axis_role *role, int *n)
{
	json_t *v;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) < 1 ||
	    json_array_size(arr) > (size_t)max)
		return rd_fail(r, path, _("\"axes\" must be a list of 1 to %d of "
		    "\"pp\", \"dp\", \"tp\" and \"cp\""), max);
	json_array_foreach(arr, i, v) {
		int k = -1;
		char at[96];
		for (int q = 0; q < SL_AXIS_ROLE_COUNT; q++)
			if (json_is_string(v) && strcmp(json_string_value(v),
			    sl_axis_role_name((sl_axis_role)q)) == 0)
				k = q;
		snprintf(at, sizeof at, "%s[%zu]", path, i);
		if (k < 0)
			return rd_fail(r, at, "%s", _("expected \"pp\", \"dp\", \"tp\" "
			    "or \"cp\""));
		role[i] = (sl_axis_role)k;
	}
	*n = (int)json_array_size(arr);
	return SL_OK;
}

/*
 * How a pipeline plan was made (pipe_export.c, pipe_setup_json): present
 * together or not at all (older plans).
 */
static int
rd_pipe_setup(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *prof = json_object_get(root, "hardware_profile"), *mesh, *opt, *v;
	const char *hw;
	int64_t x;
	int n, rc;

	if (prof == NULL)
		return SL_OK;
	if ((rc = rd_model(r, root, pf)) != SL_OK ||
	    (rc = rd_string(r, root, "hardware", "", true, &hw)) != SL_OK)
		return rc;
	pf->hardware = sl_xstrdup(hw);
	if (!json_is_object(prof))
		return rd_fail(r, "hardware_profile", "%s", _("\"hardware_profile\" "
		    "must be a hardware profile object"));
	if ((rc = sl_hw_parse_json(r->j, "hardware_profile", prof, &pf->hw,
	    r->err)) != SL_OK)
		return rc;
	pf->has_hw = true;
	if ((rc = rd_count(r, root, "devices", "", PLAN_MAX_DEVICES, &x)) != SL_OK)
		return rc;
	pf->devices = (int)x;
	mesh = json_object_get(root, "mesh");
	if ((rc = rd_count(r, mesh, "outer", "mesh", PLAN_MAX_DEVICES, &x)) != SL_OK)
		return rc;
	pf->outer = (int)x;
	if ((rc = rd_count(r, mesh, "inner", "mesh", PLAN_MAX_DEVICES, &x)) != SL_OK)
		return rc;
	pf->inner = (int)x;
	/* HSDP's replicate degree (sl_pipe_config.dp_replicate); plans made
	 * before it was recorded shard over all of data parallel */
	pf->dp_replicate = 1;
	if (json_object_get(mesh, "replicate") != NULL) {
		if ((rc = rd_count(r, mesh, "replicate", "mesh", PLAN_MAX_DEVICES,
		    &x)) != SL_OK)
			return rc;
		pf->dp_replicate = (int)x;
	}
	if ((rc = rd_roles(r, json_object_get(mesh, "axes"), "mesh.axes",
	    SL_MAX_AXES, pf->role, &n)) != SL_OK)
		return rc;
	if (n != pf->n_axes)
		return rd_fail(r, "mesh.axes", "%s", _("one role per axis of "
		    "\"shape\""));
	v = json_object_get(mesh, "topology");
	if (v != NULL) {
		json_t *sh = json_object_get(v, "shape");
		if (!json_is_object(v) || !json_is_array(sh))
			return rd_fail(r, "mesh.topology", "%s", _("\"topology\" "
			    "must be an object with \"shape\" and \"axes\""));
		if ((rc = rd_roles(r, json_object_get(v, "axes"), "mesh.topology.axes",
		    SL_MAX_TOPO_AXES, pf->topo_role, &pf->n_topo)) != SL_OK)
			return rc;
		if (json_array_size(sh) != (size_t)pf->n_topo)
			return rd_fail(r, "mesh.topology.shape", "%s", _("one size "
			    "per axis of \"axes\""));
		for (int a = 0; a < pf->n_topo; a++) {
			json_t *e = json_array_get(sh, (size_t)a);
			char at[64];
			snprintf(at, sizeof at, "mesh.topology.shape[%d]", a);
			if (!json_is_integer(e) || json_integer_value(e) < 1 ||
			    json_integer_value(e) > PLAN_MAX_DEVICES)
				return rd_fail(r, at, _("a mesh axis must be a whole "
				    "number of devices from 1 to %d"), PLAN_MAX_DEVICES);
			pf->topo_shape[a] = (int)json_integer_value(e);
		}
	}
	opt = json_object_get(root, "options");
	if (!json_is_object(opt) || !json_is_boolean(json_object_get(opt, "zero")) ||
	    !json_is_boolean(json_object_get(opt, "offload_optimizer")))
		return rd_fail(r, opt ? "options" : "", "%s", _("\"options\" must "
		    "be an object with \"zero\" and \"offload_optimizer\" (true or "
		    "false) and \"mem_limit_bytes\""));
	pf->zero = json_is_true(json_object_get(opt, "zero"));
	pf->has_zero = true;
	pf->offload_optimizer = json_is_true(json_object_get(opt, "offload_optimizer"));
	v = json_object_get(opt, "mem_limit_bytes");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			return rd_fail(r, "options.mem_limit_bytes", "%s",
			    _("\"mem_limit_bytes\" must be a whole number of bytes or "
			    "null"));
		pf->mem_limit = json_integer_value(v);
	}
	if ((rc = rd_count(r, root, "global_batch", "", INT32_MAX,
	    &pf->global_batch)) != SL_OK)
		return rc;
	pf->has_setup = true;
	return SL_OK;
}

/* A pipeline plan: its schedule, degree, sub-mesh, micro-batches and the
 * layers and recomputation of each stage. */
static int
rd_pipeline(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *v, *stages, *st;
	const char *name;
	int64_t pp, virt, x;
	size_t i;
	int rc, s;

	v = json_object_get(root, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return rd_fail(r, "version", "%s", _("unsupported plan version: "
		    "expected \"version\": 1"));
	if ((rc = rd_string(r, root, "schedule", "", true, &name)) != SL_OK)
		return rc;
	if ((s = sl_schedule_from_name(name)) < 0)
		return rd_fail(r, "schedule", "%s", _("\"schedule\" must be "
		    "\"1f1b\", \"gpipe\" or \"interleaved\""));
	pf->schedule = s;
	if ((rc = rd_count(r, root, "pp", "", PLAN_MAX_DEVICES, &pp)) != SL_OK ||
	    (rc = rd_count(r, root, "virtual_stages", "", 64, &virt)) != SL_OK ||
	    (rc = rd_count(r, root, "micro_batches", "", INT32_MAX,
	    &pf->micro_batches)) != SL_OK ||
	    (rc = rd_count(r, root, "graph_batch", "", INT32_MAX,
	    &pf->graph_batch)) != SL_OK ||
	    (rc = rd_mesh(r, root, pf)) != SL_OK)
		return rc;
	/* every device of the pipeline: pp sub-meshes (whose product
	 * rd_mesh bounded) within the engine's mesh bound too */
	if (pp * (int64_t)pf->shape[0] * pf->shape[1] > PLAN_MAX_DEVICES)
		return rd_fail(r, "pp", _("%lld pipeline stages of %lld devices "
		    "each are more than %d devices"), (long long)pp,
		    (long long)pf->shape[0] * pf->shape[1], PLAN_MAX_DEVICES);
	pf->pp = (int)pp;
	pf->virt = (int)virt;
	if ((rc = rd_recipe(r, root, pf)) != SL_OK ||
	    (rc = rd_pipe_setup(r, root, pf)) != SL_OK)
		return rc;
	stages = json_object_get(root, "stages");
	if (!json_is_array(stages) || json_array_size(stages) != (size_t)(pp * virt))
		return rd_fail(r, stages ? "stages" : "", _("\"stages\" must be an "
		    "array of %lld stages (pp x virtual_stages)"), (long long)(pp * virt));
	pf->n_stages = (int)(pp * virt);
	pf->stage_layers = sl_xcalloc((size_t)pf->n_stages, sizeof *pf->stage_layers);
	pf->stage_recompute = sl_xcalloc((size_t)pf->n_stages, sizeof *pf->stage_recompute);
	json_array_foreach(stages, i, st) {
		char at[64], path[96];
		int rk;

		snprintf(at, sizeof at, "stages[%zu]", i);
		if (!json_is_object(st))
			return rd_fail(r, at, "%s", _("a stage must be an object "
			    "with \"layers\" and \"recompute\""));
		if ((rc = rd_count(r, st, "layers", at, 1 << 20, &x)) != SL_OK ||
		    (rc = rd_string(r, st, "recompute", at, true, &name)) != SL_OK)
			return rc;
		rk = sl_recompute_from_name(name);
		if (rk != SL_RECOMP_NONE && rk != SL_RECOMP_SELECTIVE &&
		    rk != SL_RECOMP_FULL) {
			snprintf(path, sizeof path, "%s.recompute", at);
			return rd_fail(r, path, "%s", _("\"recompute\" must be "
			    "\"none\", \"selective\" or \"full\""));
		}
		pf->stage_layers[i] = (int)x;
		pf->stage_recompute[i] = (sl_recompute)rk;
	}
	return SL_OK;
}

static int
rd_plan(const plan_rd *r, json_t *root, sl_plan_file *pf)
{
	json_t *v;
	int rc;

	if (!json_is_object(root))
		return rd_fail(r, "", "%s", _("a plan must be a JSON object "
		    "with \"format\": \"shardlab-plan\""));
	v = json_object_get(root, "format");
	if (json_is_string(v) && strcmp(json_string_value(v), "shardlab-pipeline") == 0)
		return rd_pipeline(r, root, pf);
	if (!json_is_string(v) || strcmp(json_string_value(v), PLAN_FORMAT) != 0)
		return rd_fail(r, "format", "%s", _("not a shardlab plan: "
		    "expected \"format\": \"shardlab-plan\""));
	v = json_object_get(root, "version");
	if (!json_is_integer(v) || json_integer_value(v) != PLAN_VERSION)
		return rd_fail(r, "version", "%s", _("unsupported plan version: "
		    "expected \"version\": 1"));
	if ((rc = rd_model(r, root, pf)) != SL_OK ||
	    (rc = rd_mesh(r, root, pf)) != SL_OK ||
	    (rc = rd_recipe(r, root, pf)) != SL_OK)
		return rc;
	v = json_object_get(root, "hardware_profile");
	if (v != NULL) {
		if (!json_is_object(v))
			return rd_fail(r, "hardware_profile", "%s", _("\"hardware_profile\" "
			    "must be a hardware profile object"));
		if ((rc = sl_hw_parse_json(r->j, "hardware_profile", v, &pf->hw,
		    r->err)) != SL_OK)
			return rc;
		pf->has_hw = true;
	}
	v = json_object_get(root, "options");
	if (json_is_object(v) && json_is_boolean(json_object_get(v, "zero"))) {
		pf->zero = json_is_true(json_object_get(v, "zero"));
		pf->has_zero = true;
	}
	v = json_object_get(root, "alpha");
	if (v == NULL)
		pf->alpha = 0;
	else if (json_is_null(v))
		pf->alpha = INFINITY;
	else if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
	    !isfinite(json_number_value(v)))
		return rd_fail(r, "alpha", "%s",
		    _("\"alpha\" must be a number of at least 0"));
	else
		pf->alpha = json_number_value(v);
	if ((rc = rd_constraints(r, root, pf)) != SL_OK ||
	    (rc = rd_ops(r, root, pf)) != SL_OK)
		return rc;
	return SL_OK;
}

int
sl_plan_read(const char *path, sl_plan_file *pf, sl_error *err)
{
	sl_json j;
	plan_rd r;
	char *text;
	size_t len;
	int rc;

	memset(pf, 0, sizeof *pf);
	pf->model_ops = -1;
	text = sl_read_file(path, &len, err);
	if (text == NULL)
		return err != NULL && err->code != SL_OK ? err->code : SL_EINPUT;
	pf->path = sl_xstrdup(path);
	r.j = &j;
	r.err = err;
	if (len == 0)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("empty file: expected a shardlab plan"));
	else if (memchr(text, '\0', len) != NULL)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("not a shardlab plan: the file holds binary data"));
	else if ((rc = sl_json_read(&j, path, text, len, 0, SL_EINPUT,
	    err)) == SL_OK) {
		rc = rd_plan(&r, j.root, pf);
		sl_json_free(&j);
	}
	free(text);
	if (rc != SL_OK)
		sl_plan_file_free(pf);
	return rc;
}

void
sl_plan_file_free(sl_plan_file *pf)
{
	if (pf == NULL)
		return;
	for (int i = 0; i < pf->n_ops; i++) {
		if (pf->op_name != NULL)
			free(pf->op_name[i]);
		if (pf->strategy != NULL)
			free(pf->strategy[i]);
	}
	free(pf->op_name);
	free(pf->strategy);
	free(pf->pinned);
	free(pf->op_line);
	free(pf->op_col);
	free(pf->layer_recompute);
	free(pf->stage_layers);
	free(pf->stage_recompute);
	free(pf->model);
	free(pf->model_source);
	free(pf->hardware);
	free(pf->path);
	sl_constraints_free(&pf->cs);
	memset(pf, 0, sizeof *pf);
}

static void
shape_name(int n_axes, const int *shape, char *buf, size_t len)
{
	if (n_axes == 2)
		snprintf(buf, len, "%dx%d", shape[0], shape[1]);
	else
		snprintf(buf, len, "%d", shape[0]);
}

int
sl_plan_pipe_setup(const sl_plan_file *pf, sl_hybrid_opts *o, sl_topo *topo,
    sl_pipe_config *c, sl_error *err)
{
	if (pf->n_stages <= 0 || !pf->has_setup)
		return sl_error_set(err, SL_EINPUT, pf->path, 0, 0, "%s",
		    _("the pipeline plan does not say how it was made (hardware, "
		    "devices, options): it was written by an older shardlab; make it "
		    "again"));
	sl_hybrid_opts_default(o);
	o->hw = pf->hw;
	o->hw_source = pf->hardware;
	o->model_source = pf->model_source != NULL ? pf->model_source : pf->model;
	o->devices = pf->devices;
	o->space.zero = pf->zero;
	o->space.recipe = pf->recipe;
	o->space.recipe.micro_batch = 1;
	o->global_batch = pf->global_batch;
	o->schedule = (sl_schedule)pf->schedule;
	o->virt = pf->virt;
	o->pp = pf->pp;
	o->offload_optimizer = pf->offload_optimizer;
	o->mem_limit = pf->mem_limit;
	if (pf->n_topo > 0) {
		if (sl_topo_make(&pf->hw, pf->n_topo, pf->topo_shape, pf->topo_role,
		    topo, err) != SL_OK)
			return err->code;
		o->topo = topo;
	}
	*c = (sl_pipe_config){ .pp = pf->pp, .virt = pf->virt, .outer = pf->outer,
	    .inner = pf->inner, .dp_replicate = pf->dp_replicate,
	    .graph_batch = pf->graph_batch,
	    .micro_batches = pf->micro_batches, .layers = pf->stage_layers,
	    .recompute = pf->stage_recompute };
	return SL_OK;
}

int
sl_plan_whole(const sl_plan_file *pf, sl_error *err)
{
	if (pf->n_stages <= 0)
		return SL_OK;
	sl_error_set(err, SL_EINPUT, pf->path, 0, 0, "%s",
	    _("a pipeline plan (\"format\": \"shardlab-pipeline\") plans each "
	    "stage, not the whole model on one mesh"));
	return sl_error_fix(err, SL_SET_PLAN, NULL);
}

int
sl_plan_choice(const sl_space *s, const sl_plan_file *pf, int *choice,
    sl_error *err)
{
	const sl_graph *g = s->g;
	const char *file = pf->path;
	int mesh_shape[SL_MAX_AXES];
	int rc;

	if ((rc = sl_plan_whole(pf, err)) != SL_OK)
		return rc;
	for (int a = 0; a < s->mesh.n_axes; a++)
		mesh_shape[a] = s->mesh.axes[a].size;
	if (pf->n_axes != s->mesh.n_axes ||
	    memcmp(pf->shape, mesh_shape, (size_t)pf->n_axes * sizeof(int)) != 0) {
		char want[32], have[32];
		shape_name(pf->n_axes, pf->shape, want, sizeof want);
		shape_name(s->mesh.n_axes, mesh_shape, have, sizeof have);
		sl_error_set(err, SL_EINPUT, file, pf->mesh_line, pf->mesh_col,
		    _("the plan was made for a mesh of %s, not %s"), want, have);
		return sl_error_fix(err, SL_SET_MESH, want);
	}
	if (pf->model_ops >= 0 && pf->model_ops != g->n_ops)
		return sl_error_set(err, SL_EINPUT, file, pf->count_line,
		    pf->count_col, _("the plan was made for a model of %d "
		    "operators; model \"%s\" has %d"), pf->model_ops,
		    sl_esc(g->name), g->n_ops);
	for (int i = 0; i < g->n_ops; i++)
		choice[i] = -1;
	for (int j = 0; j < pf->n_ops; j++) {
		int line = pf->op_line ? pf->op_line[j] : 0;
		int col = pf->op_col ? pf->op_col[j] : 0;
		int op = sl_graph_find_op(g, pf->op_name[j]), st;

		if (op < 0)
			return sl_error_set(err, SL_EINPUT, file, line, col,
			    _("operator \"%s\" is not in model \"%s\""),
			    sl_esc(pf->op_name[j]), sl_esc(g->name));
		st = sl_space_find_strategy(s, op, pf->strategy[j]);
		if (st < 0) {
			char list[512] = "";
			const sl_space_op *so = &s->ops[op];
			for (int k = 0; k < so->n_strat; k++) {
				if (strlen(list) + strlen(so->strat[k].name) + 8 >=
				    sizeof list) {
					strcat(list, ", ...");
					break;
				}
				if (k > 0)
					strcat(list, ", ");
				strcat(list, so->strat[k].name);
			}
			return sl_error_set(err, SL_EINPUT, file, line, col,
			    _("operator \"%s\" has no strategy \"%s\" on this "
			    "mesh (it has: %s)"), sl_esc(pf->op_name[j]),
			    sl_esc(pf->strategy[j]), sl_esc(list));
		}
		choice[op] = st;
	}
	for (int i = 0; i < g->n_ops; i++)
		if (choice[i] < 0)
			return sl_error_set(err, SL_EINPUT, file, pf->ops_line,
			    pf->ops_col, _("the plan gives no strategy for operator \"%s\" "
			    "of model \"%s\""), sl_esc(g->ops[i].name),
			    sl_esc(g->name));
	return SL_OK;
}

/* ---------------------------------------------------- IOPDDL problem plans */

/*
 * A plan of a problem without a model (an IOPDDL file): the strategy index
 * per node, as the contest reads it, with the objective, the lower bound
 * and the usage peak.  man shardlab-plan.5, "PROBLEM PLANS".
 */
int
sl_problem_plan_write(const sl_problem *p, const sl_solution *sol,
    const char *path, sl_error *err)
{
	bool bounded;
	json_t *root, *st;

	if (p == NULL || sol == NULL || sol->choice == NULL || sol->n != p->n)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("plan export: missing problem or assignment"));
	bounded = sol->bound != INT64_MIN && sol->bound != INT64_MAX;
	st = json_array();
	for (int v = 0; v < p->n; v++)
		json_array_append_new(st, json_integer(sol->choice[v]));
	root = json_pack("{s:s, s:i, s:o, s:s, s:s, s:I}",
	    "format", PLAN_FORMAT "-problem", "version", PLAN_VERSION,
	    "problem", sl_json_str(p->name),
	    "solver", sl_solver_name(sol->solver),
	    "status", sl_solve_status_name(sol->status),
	    "cost", (json_int_t)sol->objective);
	json_object_set_new(root, "bound", bounded ?
	    json_integer(sol->bound) : json_null());
	/* the relative gap to six digits, as solvers print it */
	json_object_set_new(root, "gap", !bounded ? json_null() :
	    json_real(sol->objective > 0 ? strtod_6g(((double)sol->objective -
	    (double)sol->bound) / (double)sol->objective) : 0.0));
	json_object_set_new(root, "usage_limit", p->usage_limit >= 0 ?
	    json_integer(p->usage_limit) : json_null());
	json_object_set_new(root, "peak_usage",
	    json_integer(sl_problem_peak_usage(p, sol->choice)));
	json_object_set_new(root, "time_ms", j_ms(sol->time_ms));
	json_object_set_new(root, "first_plan_ms", j_ms(sol->first_ms >= 0 ?
	    sol->first_ms : sol->time_ms));
	json_object_set_new(root, "strategies", st);
	return sl_json_write(root, path, _("cannot write the plan"), err);
}

bool
sl_plan_model_changed(const sl_plan_file *pf, const sl_graph *g, char *warn,
    size_t len)
{
	if (pf->sha256[0] == '\0' || g->sha256[0] == '\0' ||
	    strcmp(pf->sha256, g->sha256) == 0)
		return false;
	snprintf(warn, len, _("%s:%d:%d: the model changed since the plan was "
	    "made (sha256 %.12s..., now %.12s...); its operators still match"),
	    pf->path ? pf->path : "", pf->sha_line, pf->sha_col, pf->sha256,
	    g->sha256);
	return true;
}
