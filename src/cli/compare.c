/*
 * compare.c: `shardlab compare`, ours against the baselines, as a table or
 * JSON.  It is thin: the engine builds the plans (baseline.c); this file
 * parses, prints and writes files.
 */
#include "cli.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>

/* a / b as "0.52", or "-" when undefined. */
static const char *
ratio(int64_t a, int64_t b, char *buf)
{
	if (b <= 0 || a < 0)
		snprintf(buf, 16, "-");
	else
		snprintf(buf, 16, "%.2f", (double)a / (double)b);
	return buf;
}

static json_t *
ratio_json(int64_t a, int64_t b)
{
	return b > 0 && a >= 0 ? json_real((double)a / (double)b) : json_null();
}

static json_t *
mem_json(const sl_mem *m)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
	    "total", (json_int_t)sl_mem_total(m), "parameters", (json_int_t)m->params,
	    "gradients", (json_int_t)m->grads, "optimizer", (json_int_t)m->optim,
	    "activations", (json_int_t)m->acts, "buffers", (json_int_t)m->buffers);
}

static json_t *
compare_json(const cli_session *s, const sl_comparison *c)
{
	const sl_scored_plan *ours = &c->row[0];
	json_t *root, *rows, *shape;

	shape = json_array();
	for (int a = 0; a < s->mesh.n_axes; a++)
		json_array_append_new(shape, json_integer(s->mesh.axes[a].size));
	rows = json_array();
	for (int i = 0; i < c->n; i++) {
		const sl_scored_plan *p = &c->row[i];
		json_t *r = json_pack("{s:s, s:s, s:b, s:s}", "method", p->method,
		    "title", p->title, "applicable", p->applicable, "note", p->note);

		if (p->applicable) {
			int dmax = 0;
			json_t *comm = json_object();

			for (int d = 0; d < p->ev.n_devices; d++)
				if (sl_mem_total(&p->ev.dev[d]) > sl_mem_total(&p->ev.dev[dmax]))
					dmax = d;
			for (int k = 0; k < SL_COLL_COUNT; k++)
				json_object_set_new(comm, sl_coll_name(k),
				    json_integer(p->ev.comm.ns[k]));
			json_object_set_new(r, "max_memory_bytes", json_integer(p->max_mem));
			json_object_set_new(r, "mean_memory_bytes", json_integer(p->mean_mem));
			json_object_set_new(r, "over_capacity",
			    json_boolean(p->ev.n_over_capacity > 0));
			json_object_set_new(r, "max_device", json_integer(dmax));
			json_object_set_new(r, "memory_bytes", mem_json(&p->ev.dev[dmax]));
			json_object_set_new(r, "redundant_bytes", json_integer(p->redundant));
			json_object_set_new(r, "comm_time_ns", json_integer(p->comm_ns));
			json_object_set_new(r, "comm_by_collective_ns", comm);
			json_object_set_new(r, "step_time_ns", json_integer(p->ev.step_ns));
			json_object_set_new(r, "compute_ns", json_integer(p->ev.compute_ns));
			json_object_set_new(r, "exposed_comm_ns",
			    json_integer(p->ev.exposed_comm_ns));
			json_object_set_new(r, "tokens_per_s", json_real(p->ev.tokens_per_s));
			json_object_set_new(r, "mfu", json_real(p->ev.mfu));
			json_object_set_new(r, "memory_ours_over_theirs",
			    ratio_json(ours->max_mem, p->max_mem));
			json_object_set_new(r, "memory_theirs_over_ours",
			    ratio_json(p->max_mem, ours->max_mem));
			json_object_set_new(r, "comm_ours_over_theirs",
			    ratio_json(ours->comm_ns, p->comm_ns));
			json_object_set_new(r, "comm_theirs_over_ours",
			    ratio_json(p->comm_ns, ours->comm_ns));
		}
		json_array_append_new(rows, r);
	}
	root = json_pack("{s:s, s:i, s:{s:s, s:s, s:I}, s:{s:o, s:s, s:I}, s:f, s:o}",
	    "format", "shardlab-compare", "version", 1,
	    "model", "name", s->g->name, "source", s->source,
	    "parameters", (json_int_t)sl_graph_param_count(s->g),
	    "mesh", "shape", shape, "hardware", s->mesh.hw.name,
	    "device_memory_bytes", (json_int_t)s->mesh.hw.memory_bytes,
	    "alpha", c->alpha, "methods", rows);
	return root;
}

static void
print_compare(const cli_session *s, const sl_comparison *c)
{
	const sl_scored_plan *ours = &c->row[0];
	char b[9][32], cap[128];

	{
		double np = (double)sl_graph_param_count(s->g);
		char mn[256];
		cli_model_str(s->g, mn, sizeof mn);
		if (np >= 1e9)
			printf(_("model %s: %.2f B parameters; mesh "), mn, np / 1e9);
		else
			printf(_("model %s: %.2f M parameters; mesh "), mn, np / 1e6);
	}
	if (s->mesh.n_axes == 1)
		printf("%d", s->mesh.axes[0].size);
	else
		printf("%dx%d", s->mesh.axes[0].size, s->mesh.axes[1].size);
	printf(_(" on %s, per device %s; ours at alpha %g\n\n"), sl_esc(s->mesh.hw.name),
	    sl_hw_memory_text(&s->mesh.hw, cap, sizeof cap), c->alpha);
	cli_fprintf(stdout, "%-14s %12s %12s %12s %12s %9s %9s %9s %11s %9s %6s\n",
	    _("method"), _("max mem/dev"), _("mean mem/dev"), _("redundant"),
	    _("comm/step"), _("ours/thr"), _("thr/ours"), _("comm t/o"),
	    _("step time"), _("tokens/s"), _("MFU"));
	for (int i = 0; i < c->n; i++) {
		const sl_scored_plan *p = &c->row[i];

		if (!p->applicable) {
			cli_fprintf(stdout, "%-14s %12s %12s %12s %12s %9s %9s %9s %11s %9s %6s\n",
			    p->method, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		cli_fprintf(stdout, "%-14s %12s %12s %12s %12s %9s %9s %9s %11s %9s %5.1f%%%s\n",
		    p->method,
		    cli_bytes(p->max_mem, b[0]), cli_bytes(p->mean_mem, b[1]), cli_bytes(p->redundant, b[2]),
		    cli_ns(p->comm_ns, b[3]), ratio(ours->max_mem, p->max_mem, b[4]),
		    ratio(p->max_mem, ours->max_mem, b[5]),
		    ratio(p->comm_ns, ours->comm_ns, b[6]), cli_ns(p->ev.step_ns, b[7]),
		    sl_format_rate(p->ev.tokens_per_s, b[8], sizeof b[8]),
		    100 * p->ev.mfu,
		    p->ev.n_over_capacity > 0 ? _("  over capacity") : "");
	}
	printf("\n%s\n", _("ours/thr: our max memory per device over theirs (the paper's "
	    "Table 2 ratio); thr/ours its inverse; comm t/o: their communication "
	    "time over ours; step time, tokens/s and MFU: one optimizer step "
	    "(doc/cost-model.md)."));
	for (int i = 0; i < c->n; i++) {
		const sl_scored_plan *p = &c->row[i];

		if (p->needs != SL_SET_NONE)
			printf("  %-14s %s: %s (%s)\n", p->method, p->title, sl_esc(p->note),
			    cli_setting_option(p->needs));
		else
			printf("  %-14s %s: %s\n", p->method, p->title,
			    sl_esc(p->note));
	}
}

static int
cmd_compare(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_comparison c;
	sl_baseline_opts bo;
	sl_error err;
	int rc;

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK || s.is_iopddl) {
		if (rc == SL_OK)
			rc = sl_error_set(&err, SL_EINPUT, s.source, 0, 0, "%s",
			    _("compare needs a model: an IOPDDL problem has no baselines"));
		cli_close(&s);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	bo.mem_budget = o.mem_limit;
	bo.solver = o.solver;
	if ((rc = sl_compare(s.space, o.alpha, &o.cs, &bo, &c, &err)) != SL_OK) {
		rc = cli_report(&err);
		goto out;
	}
	if (o.json != NULL) {
		rc = sl_json_write(compare_json(&s, &c), o.json,
		    _("cannot write the comparison"), &err);
		if (rc != SL_OK)
			rc = cli_report(&err);
	}
	if (rc == SL_OK && !(o.json != NULL && strcmp(o.json, "-") == 0) && !o.quiet)
		print_compare(&s, &c);
	sl_comparison_free(&c);
out:
	cli_close(&s);
	cli_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_compare = {
	.name = "compare",
	.bit = CLI_C_COMPARE,
	.usage = N_("compare MODEL [OPTIONS] [--json FILE|-]"),
	.help = N_("our plan against data parallel, ZeRO, Megatron-LM, Alpa and Colossal-Auto"),
	.run = cmd_compare,
};
