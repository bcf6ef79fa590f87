/*
 * plan.c: the plan file (man shardlab-plan.5).  sl_plan_write exports an
 * assignment with the evaluator's numbers, atomically; sl_plan_read reads
 * one back and sl_plan_choice maps it onto a strategy space by operator
 * and strategy name, so a saved plan can be re-evaluated, validated or
 * loaded into the explorer.
 *
 * The writer prints JSON itself rather than through jansson: it keeps one
 * device, constraint or tensor per line, and prints reals in their
 * shortest form that reads back to the same double (alpha must round-trip
 * exactly for the objective to be reproducible).
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

static void
put_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (const unsigned char *p = (const unsigned char *)(s ? s : "");
	    *p != '\0'; p++) {
		switch (*p) {
		case '"':  fputs("\\\"", fp); break;
		case '\\': fputs("\\\\", fp); break;
		case '\n': fputs("\\n", fp); break;
		case '\r': fputs("\\r", fp); break;
		case '\t': fputs("\\t", fp); break;
		default:
			if (*p < 0x20)
				fprintf(fp, "\\u%04x", *p);
			else
				fputc(*p, fp);
		}
	}
	fputc('"', fp);
}

/* Shortest "%.Ng" that reads back as d; null for infinity (alpha only). */
static void
put_real(FILE *fp, double d)
{
	char buf[64];

	if (!isfinite(d)) {
		fputs("null", fp);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* keep reals recognisable as reals */
	if (strpbrk(buf, ".eEn") == NULL)
		strcat(buf, ".0");
	fputs(buf, fp);
}

static void
put_i64(FILE *fp, int64_t v)
{
	fprintf(fp, "%lld", (long long)v);
}

static void
put_dims(FILE *fp, int n, const int64_t *v)
{
	fputc('[', fp);
	for (int i = 0; i < n; i++) {
		if (i > 0)
			fputs(", ", fp);
		put_i64(fp, v[i]);
	}
	fputc(']', fp);
}

static void
put_mem(FILE *fp, const sl_mem *m)
{
	fputs("{\"total\": ", fp);
	put_i64(fp, sl_mem_total(m));
	fputs(", \"parameters\": ", fp);
	put_i64(fp, m->params);
	fputs(", \"gradients\": ", fp);
	put_i64(fp, m->grads);
	fputs(", \"optimizer\": ", fp);
	put_i64(fp, m->optim);
	fputs(", \"activations\": ", fp);
	put_i64(fp, m->acts);
	fputs(", \"buffers\": ", fp);
	put_i64(fp, m->buffers);
	fputc('}', fp);
}

static int64_t
comm_total(const sl_comm *c)
{
	int64_t t = 0;

	for (int k = 0; k < SL_COLL_COUNT; k++)
		t = sl_add_sat(t, c->ns[k]);
	return t;
}

static void
put_shape_str(FILE *fp, const sl_mesh *m)
{
	char buf[32];

	if (m->n_axes == 2)
		snprintf(buf, sizeof buf, "%dx%d", m->axes[0].size,
		    m->axes[1].size);
	else
		snprintf(buf, sizeof buf, "%d", m->axes[0].size);
	put_str(fp, buf);
}

static void
write_header(FILE *fp, const sl_space *s, const sl_eval *ev,
    const sl_plan_meta *meta)
{
	const sl_graph *g = s->g;
	const sl_mesh *m = &s->mesh;
	int64_t shape[SL_MAX_AXES];

	fprintf(fp, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n",
	    PLAN_FORMAT, PLAN_VERSION);

	fputs("  \"model\": {\"name\": ", fp);
	put_str(fp, g->name);
	fputs(", \"source\": ", fp);
	put_str(fp, meta->model_source != NULL ? meta->model_source :
	    g->source);
	fputs(", \"sha256\": ", fp);
	if (g->sha256[0] != '\0')
		put_str(fp, g->sha256);
	else
		fputs("null", fp);
	fputs(", \"parameters\": ", fp);
	put_i64(fp, sl_graph_param_count(g));
	fputs(", \"operators\": ", fp);
	put_i64(fp, g->n_ops);
	if (meta->micro_batch > 0) {
		fputs(", \"micro_batch\": ", fp);
		put_i64(fp, meta->micro_batch);
	}
	fputs("},\n", fp);

	for (int a = 0; a < m->n_axes; a++)
		shape[a] = m->axes[a].size;
	fputs("  \"mesh\": {\"shape\": ", fp);
	put_dims(fp, m->n_axes, shape);
	fputs(", \"name\": ", fp);
	put_shape_str(fp, m);
	fputs(", \"devices\": ", fp);
	put_i64(fp, m->n_devices);
	fputs(", \"hardware\": ", fp);
	put_str(fp, meta->hw_source != NULL ? meta->hw_source : m->hw.name);
	fputs(", \"hardware_name\": ", fp);
	put_str(fp, m->hw.name);
	fputs(", \"device\": ", fp);
	put_str(fp, m->hw.device);
	fputs(", \"device_memory_bytes\": ", fp);
	put_i64(fp, m->hw.memory_bytes);
	fputs(",\n    \"axes\": [", fp);
	for (int a = 0; a < m->n_axes; a++) {
		fputs(a > 0 ? ", " : "", fp);
		fprintf(fp, "{\"size\": %d, \"bandwidth\": ", m->axes[a].size);
		put_real(fp, m->axes[a].link.bandwidth);
		fputs(", \"latency\": ", fp);
		put_real(fp, m->axes[a].link.latency);
		fputc('}', fp);
	}
	fputs("]},\n", fp);

	fprintf(fp, "  \"options\": {\"zero\": %s},\n",
	    s->opts.zero ? "true" : "false");
	{
		const sl_recipe *rc = &s->opts.recipe;
		fprintf(fp, "  \"recipe\": {\"attention\": \"%s\", \"precision\": \"%s\", "
		    "\"recompute\": \"%s\", \"micro_batch\": %lld, \"global_batch\": %lld, "
		    "\"seq\": %lld,\n    \"layer_recompute\": [",
		    sl_attention_name(rc->attention), sl_precision_name(rc->precision),
		    sl_recompute_name(rc->recompute), (long long)rc->micro_batch,
		    (long long)rc->global_batch, (long long)rc->seq);
		for (int l = 0; l < g->n_layers; l++)
			fprintf(fp, "%s\"%s\"", l ? ", " : "",
			    sl_recompute_name(s->layer_recompute[l]));
		fputs("]},\n", fp);
	}
	fputs("  \"alpha\": ", fp);
	put_real(fp, meta->alpha);
	fputs(",\n", fp);

	if (meta->sol != NULL) {
		const sl_solution *sol = meta->sol;
		fputs("  \"solver\": {\"name\": ", fp);
		put_str(fp, sl_solver_name(sol->solver));
		fputs(", \"status\": ", fp);
		put_str(fp, sl_solve_status_name(sol->status));
		fputs(", \"objective\": ", fp);
		put_i64(fp, sol->objective);
		/* a measured time: microseconds are all it can tell */
		fprintf(fp, ", \"time_ms\": %.3f", isfinite(sol->time_ms) ?
		    sol->time_ms : 0.0);
		fprintf(fp, ", \"confirmed\": %s, \"note\": ",
		    sol->confirmed ? "true" : "false");
		put_str(fp, sol->note);
		fputs("},\n", fp);
	}

	fputs("  \"objective\": ", fp);
	put_i64(fp, ev->objective);
	fputs(",\n  \"memory_objective_bytes\": ", fp);
	put_i64(fp, ev->mem_part);
	fputs(",\n  \"max_memory_bytes\": ", fp);
	put_i64(fp, ev->max_total);
	fputs(",\n  \"devices_over_capacity\": ", fp);
	put_i64(fp, ev->n_over_capacity);
	fputs(",\n  \"redundant_bytes\": ", fp);
	put_i64(fp, ev->redundant);
	fputs(",\n  \"comm_time_ns\": ", fp);
	put_i64(fp, ev->comm_ns);
	fputs(",\n  \"comm\": {", fp);
	for (int k = 0; k < SL_COLL_COUNT; k++) {
		fputs(k > 0 ? ", " : "", fp);
		put_str(fp, sl_coll_name((sl_coll)k));
		fputs(": {\"time_ns\": ", fp);
		put_i64(fp, ev->comm.ns[k]);
		fputs(", \"bytes\": ", fp);
		put_i64(fp, ev->comm.bytes[k]);
		fputc('}', fp);
	}
	fputs("},\n  \"step\": {\"time_ns\": ", fp);
	put_i64(fp, ev->step_ns);
	fputs(", \"compute_ns\": ", fp);
	put_i64(fp, ev->compute_ns);
	fputs(", \"recompute_ns\": ", fp);
	put_i64(fp, ev->recompute_ns);
	fputs(", \"exposed_comm_ns\": ", fp);
	put_i64(fp, ev->exposed_comm_ns);
	fputs(", \"accum_steps\": ", fp);
	put_i64(fp, ev->accum_steps);
	fputs(", \"tokens\": ", fp);
	put_i64(fp, ev->tokens);
	fputs(", \"tokens_per_s\": ", fp);
	put_real(fp, ev->tokens_per_s);
	fputs(", \"model_flops\": ", fp);
	put_real(fp, ev->model_flops);
	fputs(", \"mfu\": ", fp);
	put_real(fp, ev->mfu);
	fputs("},\n", fp);
}

static void
write_devices(FILE *fp, const sl_space *s, const sl_eval *ev)
{
	const sl_mesh *m = &s->mesh;

	fputs("  \"devices\": [", fp);
	for (int d = 0; d < ev->n_devices; d++) {
		int coord[SL_MAX_AXES];
		int64_t c64[SL_MAX_AXES], total = sl_mem_total(&ev->dev[d]);

		sl_mesh_coords(m, d, coord);
		for (int a = 0; a < m->n_axes; a++)
			c64[a] = coord[a];
		fprintf(fp, "%s\n    {\"id\": %d, \"coords\": ", d > 0 ? "," : "",
		    d);
		put_dims(fp, m->n_axes, c64);
		fputs(", \"memory_bytes\": ", fp);
		put_mem(fp, &ev->dev[d]);
		fputs(", \"redundant_bytes\": ", fp);
		put_i64(fp, ev->dev_redundant != NULL ? ev->dev_redundant[d] : 0);
		fputs(", \"compute_ns\": ", fp);
		put_i64(fp, ev->dev_compute_ns != NULL ? ev->dev_compute_ns[d] : 0);
		fprintf(fp, ", \"over_capacity\": %s}",
		    m->hw.memory_bytes > 0 && total > m->hw.memory_bytes ?
		    "true" : "false");
	}
	fputs(ev->n_devices > 0 ? "\n  ],\n" : "],\n", fp);
}

static void
write_constraints(FILE *fp, const sl_constraints *cs)
{
	int n = cs != NULL ? cs->n : 0;

	fputs("  \"constraints\": [", fp);
	for (int i = 0; i < n; i++) {
		fprintf(fp, "%s\n    {\"op\": ", i > 0 ? "," : "");
		put_str(fp, cs->c[i].op);
		fputs(", \"strategy\": ", fp);
		put_str(fp, cs->c[i].strategy);
		fprintf(fp, ", \"kind\": \"%s\"}", cs->c[i].pin ? "pin" : "forbid");
	}
	fputs(n > 0 ? "\n  ],\n" : "],\n", fp);
}

static void
write_op(FILE *fp, const sl_space *s, const int *choice, const sl_eval *ev,
    const sl_constraints *cs, int i)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[i];
	const sl_strategy *st = &s->ops[i].strat[choice[i]];
	int zero[SL_MAX_AXES] = { 0 };
	bool pinned = false, any = false;
	int n_slots = op->n_in + op->n_out;

	fputs("    {\"name\": ", fp);
	put_str(fp, op->name);
	fputs(", \"kind\": ", fp);
	put_str(fp, sl_op_kind_name(op->kind));
	fputs(", \"layer\": ", fp);
	if (op->layer >= 0 && op->layer < g->n_layers)
		put_str(fp, g->layers[op->layer].name);
	else
		fputs("null", fp);
	fputs(", \"strategy\": ", fp);
	put_str(fp, st->name);
	for (int c = 0; cs != NULL && c < cs->n; c++)
		if (cs->c[c].pin && strcmp(cs->c[c].op, op->name) == 0 &&
		    strcmp(cs->c[c].strategy, st->name) == 0)
			pinned = true;
	fprintf(fp, ", \"pinned\": %s, \"forbidden\": [",
	    pinned ? "true" : "false");
	for (int c = 0; cs != NULL && c < cs->n; c++) {
		if (cs->c[c].pin || strcmp(cs->c[c].op, op->name) != 0)
			continue;
		fputs(any ? ", " : "", fp);
		put_str(fp, cs->c[c].strategy);
		any = true;
	}
	fputs("],\n     \"memory_bytes\": ", fp);
	put_i64(fp, ev->ops != NULL && i < ev->n_ops ?
	    sl_mem_total(&ev->ops[i].mem) : 0);
	fputs(", \"comm_time_ns\": ", fp);
	put_i64(fp, ev->ops != NULL && i < ev->n_ops ?
	    comm_total(&ev->ops[i].comm) : 0);
	fputs(",\n     \"tensors\": [", fp);
	for (int slot = 0; slot < n_slots; slot++) {
		int ti = slot < op->n_in ? op->in[slot] : op->out[slot - op->n_in];
		const sl_tensor *t = &g->tensors[ti];
		const sl_spec *sp = &st->spec[slot];
		int64_t local[SL_MAX_RANK];
		char spec[64];

		for (int d = 0; d < t->rank; d++)
			local[d] = sl_local_dim(&s->mesh, sp, d, t->dims[d], zero);
		fprintf(fp, "%s\n       {\"name\": ", slot > 0 ? "," : "");
		put_str(fp, t->name);
		fputs(", \"role\": ", fp);
		put_str(fp, sl_role_name(t->role));
		fprintf(fp, ", \"io\": \"%s\", \"dtype\": ",
		    slot < op->n_in ? "in" : "out");
		put_str(fp, sl_dtype_name(t->dtype));
		fputs(", \"shape\": ", fp);
		put_dims(fp, t->rank, t->dims);
		fputs(", \"local_shape\": ", fp);
		put_dims(fp, t->rank, local);
		fputs(", \"spec\": ", fp);
		put_str(fp, sl_spec_format(sp, t->rank, spec, sizeof spec));
		fputc('}', fp);
	}
	fputs(n_slots > 0 ? "\n     ]}" : "]}", fp);
}

/* Memory over time on device 0: the sum the solvers weigh, the timeline's
 * peak in the default and the optimised order, and that order. */
static void
write_timeline(FILE *fp, const sl_space *s, const int *choice)
{
	sl_timeline tl;
	char name[128];

	if (sl_timeline_build(s, choice, 0, true, &tl, NULL) != SL_OK)
		return;
	fprintf(fp, "  \"memory_over_time\": {\"device\": 0, \"sum\": %lld, "
	    "\"peak_default\": %lld, \"peak\": %lld, \"gap\": %lld, "
	    "\"order_exact\": %s, \"allocated_peak\": %lld, "
	    "\"reserved_peak\": %lld,\n    \"order\": [",
	    (long long)tl.sum, (long long)tl.peak_default, (long long)tl.peak,
	    (long long)(tl.peak - tl.sum), tl.exact ? "true" : "false",
	    (long long)tl.alloc_peak, (long long)tl.reserved_peak);
	for (int p = 0; p < tl.n_tasks; p++) {
		fputs(p ? (p % 8 ? ", " : ",\n      ") : "", fp);
		put_str(fp, sl_task_name(s, &tl.task[tl.order[p]], name, sizeof name));
	}
	fputs("]},\n", fp);
	sl_timeline_free(&tl);
}

int
sl_plan_write(const sl_space *s, const int *choice, const sl_eval *ev,
    const sl_plan_meta *meta, const char *path, sl_error *err)
{
	static const sl_plan_meta none;
	sl_atomic a;
	int rc;

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

	if ((rc = sl_atomic_open(&a, path, err)) != SL_OK)
		return rc;
	write_header(a.fp, s, ev, meta);
	write_devices(a.fp, s, ev);
	write_constraints(a.fp, meta->cs);
	write_timeline(a.fp, s, choice);
	fputs("  \"ops\": [", a.fp);
	for (int i = 0; i < s->g->n_ops; i++) {
		fputs(i > 0 ? ",\n" : "\n", a.fp);
		write_op(a.fp, s, choice, ev, meta->cs, i);
	}
	fputs(s->g->n_ops > 0 ? "\n  ]\n}\n" : "]\n}\n", a.fp);
	return sl_atomic_commit(&a, err);
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
	static const char *const names[] = { "attention", "precision", "recompute" };
	json_t *o = json_object_get(root, "recipe"), *v, *arr;
	char at[64];

	sl_recipe_default(&pf->recipe);
	pf->has_recipe = false;
	if (o == NULL)
		return SL_OK;
	if (!json_is_object(o))
		return rd_fail(r, "recipe", "%s", _("\"recipe\" must be an object"));
	for (int i = 0; i < 3; i++) {
		const char *sv;
		int k;
		snprintf(at, sizeof at, "recipe.%s", names[i]);
		v = json_object_get(o, names[i]);
		if (v == NULL)
			continue;
		sv = json_string_value(v);
		k = i == 0 ? sl_attention_from_name(sv) : i == 1 ?
		    sl_precision_from_name(sv) : sl_recompute_from_name(sv);
		if (k < 0)
			return rd_fail(r, at, _("unknown %s %s (expected %s)"), names[i],
			    sv ? sv : "?", i == 0 ? "flash, naive" : i == 1 ?
			    "bf16, megatron, amp, fp32" : "none, selective, full, auto");
		if (i == 0)
			pf->recipe.attention = (sl_attention)k;
		else if (i == 1)
			pf->recipe.precision = (sl_precision)k;
		else
			pf->recipe.recompute = (sl_recompute)k;
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
	pf->pp = (int)pp;
	pf->virt = (int)virt;
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
	text = sl_read_file(path, &len, false, err);
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
sl_plan_choice(const sl_space *s, const sl_plan_file *pf, int *choice,
    sl_error *err)
{
	const sl_graph *g = s->g;
	const char *file = pf->path;
	int mesh_shape[SL_MAX_AXES];

	for (int a = 0; a < s->mesh.n_axes; a++)
		mesh_shape[a] = s->mesh.axes[a].size;
	if (pf->n_axes != s->mesh.n_axes ||
	    memcmp(pf->shape, mesh_shape, (size_t)pf->n_axes * sizeof(int)) != 0) {
		char want[32], have[32];
		shape_name(pf->n_axes, pf->shape, want, sizeof want);
		shape_name(s->mesh.n_axes, mesh_shape, have, sizeof have);
		return sl_error_set(err, SL_EINPUT, file, pf->mesh_line,
		    pf->mesh_col, _("the plan was made for a mesh of %s, not %s (use "
		    "--mesh %s)"), want, have, want);
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
	sl_atomic a;
	bool bounded = sol->bound != INT64_MIN && sol->bound != INT64_MAX;
	int rc;

	if (p == NULL || sol == NULL || sol->choice == NULL || sol->n != p->n)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("plan export: missing problem or assignment"));
	if ((rc = sl_atomic_open(&a, path, err)) != SL_OK)
		return rc;
	fprintf(a.fp, "{\n  \"format\": \"%s-problem\",\n  \"version\": %d,\n",
	    PLAN_FORMAT, PLAN_VERSION);
	fputs("  \"problem\": ", a.fp);
	put_str(a.fp, p->name);
	fprintf(a.fp, ",\n  \"solver\": \"%s\",\n  \"status\": \"%s\",\n",
	    sl_solver_name(sol->solver), sl_solve_status_name(sol->status));
	fprintf(a.fp, "  \"cost\": %lld,\n", (long long)sol->objective);
	if (bounded) {
		fprintf(a.fp, "  \"bound\": %lld,\n", (long long)sol->bound);
		fprintf(a.fp, "  \"gap\": %.6g,\n", sol->objective > 0 ?
		    ((double)sol->objective - (double)sol->bound) /
		    (double)sol->objective : 0.0);
	} else
		fputs("  \"bound\": null,\n  \"gap\": null,\n", a.fp);
	if (p->usage_limit >= 0)
		fprintf(a.fp, "  \"usage_limit\": %lld,\n", (long long)p->usage_limit);
	else
		fputs("  \"usage_limit\": null,\n", a.fp);
	fprintf(a.fp, "  \"peak_usage\": %lld,\n",
	    (long long)sl_problem_peak_usage(p, sol->choice));
	fprintf(a.fp, "  \"time_ms\": %.3f,\n  \"first_plan_ms\": %.3f,\n",
	    sol->time_ms, sol->first_ms >= 0 ? sol->first_ms : sol->time_ms);
	fputs("  \"strategies\": [", a.fp);
	for (int v = 0; v < p->n; v++)
		fprintf(a.fp, "%s%d", v == 0 ? "" : v % 32 == 0 ? ",\n    " : ", ",
		    sol->choice[v]);
	fputs("]\n}\n", a.fp);
	return sl_atomic_commit(&a, err);
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
