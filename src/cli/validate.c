/*
 * validate.c: `shardlab validate PLAN.json`, the check of a plan's
 * prediction on local GPUs.  It rebuilds the plan's strategy space, runs the
 * GPU runner on it (vjob.c) and prints the runner's measurements beside
 * the prediction, as a table and as JSON.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Seconds of running before validate says that it is running. */
#define VAL_QUIET_S 1.0

static json_t *
val_mem_json(const sl_mem *m)
{
	json_t *o = json_object();

	json_object_set_new(o, "total", json_integer(sl_mem_total(m)));
	for (int c = 0; c < SL_CAT_COUNT; c++)
		json_object_set_new(o, sl_mem_cat_name(c), json_integer(sl_mem_get(m, c)));
	return o;
}

static int
val_write_json(const char *path, const char *plan, const sl_space *s,
    const cli_vresult *res, sl_error *err)
{
	json_t *root = json_object(), *devs = json_array(), *shape = json_array();

	json_object_set_new(root, "format", json_string("shardlab-validation"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "plan", json_string(plan));
	json_object_set_new(root, "model", json_string(s->g->name ? s->g->name : ""));
	for (int i = 0; i < s->mesh.n_axes; i++)
		json_array_append_new(shape, json_integer(s->mesh.axes[i].size));
	json_object_set_new(root, "mesh", json_pack("{s:o, s:s}", "shape", shape,
	    "hardware", s->mesh.hw.name));
	json_object_set_new(root, "gpu", json_pack("{s:s, s:i, s:I}", "name",
	    res->gpu, "count", res->n_gpus, "memory_bytes",
	    (json_int_t)res->gpu_memory));
	json_object_set_new(root, "mode", json_string(res->mode));
	json_object_set_new(root, "steps", json_integer(res->steps));
	for (int d = 0; d < res->n_devices; d++) {
		const cli_vdev *v = &res->dev[d];
		json_t *jd = json_object();

		json_object_set_new(jd, "id", json_integer(d));
		json_object_set_new(jd, "ok", json_boolean(v->ok));
		if (!v->ok)
			json_object_set_new(jd, "error", json_string(v->error));
		json_object_set_new(jd, "predicted", json_pack("{s:o, s:I}",
		    "memory_bytes", val_mem_json(&v->predicted),
		    "step_time_ns", (json_int_t)v->pred_ns));
		if (v->pred_peak > 0) {
			json_t *p = json_object_get(jd, "predicted");
			json_object_set_new(p, "step_allocated_bytes",
			    val_mem_json(&v->step_alloc));
			json_object_set_new(p, "peak_bytes", json_integer(v->pred_peak));
		}
		json_object_set_new(jd, "measured", json_pack(
		    "{s:o, s:I, s:I, s:I, s:I, s:I, s:I}",
		    "memory_bytes", val_mem_json(&v->measured),
		    "meminfo_delta_bytes", (json_int_t)v->meminfo_delta,
		    "meminfo_peak_bytes", (json_int_t)v->meminfo_peak,
		    "overhead_bytes", (json_int_t)v->overhead,
		    "step_time_ns", (json_int_t)v->step_ns,
		    "compute_time_ns", (json_int_t)v->compute_ns,
		    "comm_time_ns", (json_int_t)v->comm_ns));
		if (v->held_peak >= 0)
			json_object_set_new(json_object_get(jd, "measured"),
			    "peak_held_bytes", json_integer(v->held_peak));
		json_object_set_new(jd, "sources", json_pack("{s:s, s:s, s:s}",
		    "memory", "measured", "compute", "measured",
		    "communication", v->comm_measured ? "measured" : "modelled"));
		json_object_set_new(jd, "error_percent", json_pack("{s:f, s:f, s:f}",
		    "memory_total", cli_validate_error(sl_mem_total(cli_vdev_alloc(v)),
		    sl_mem_total(&v->measured)),
		    "device_memory", cli_validate_error(sl_mem_total(&v->predicted),
		    v->meminfo_delta),
		    "step_time", cli_validate_error(v->pred_ns, v->step_ns)));
		if (v->pred_peak > 0 && v->held_peak >= 0)
			json_object_set_new(json_object_get(jd, "error_percent"),
			    "timeline_peak", json_real(cli_validate_error(v->pred_peak,
			    v->held_peak)));
		json_array_append_new(devs, jd);
	}
	json_object_set_new(root, "devices", devs);

	return sl_json_write(root, path,
	    _("cannot write the validation report"), err);
}

/* ------------------------------------------------------------- command */

/* Opens the plan's model, mesh and space, and maps its strategies. */
static int
val_open(const char *plan, sl_plan_file *pf, sl_graph **g, sl_space **s,
    int **choice, sl_error *err)
{
	sl_hw hw;
	sl_mesh mesh;
	sl_model_opts mo;
	sl_space_opts so = { .zero = true };
	int rc;

	if (access(plan, F_OK) != 0) {
		char mp[4096];
		/* a bundled model's name where a plan was expected */
		snprintf(mp, sizeof mp, "%s/models/%s.json", sl_datadir(), plan);
		if (access(mp, R_OK) == 0)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("'%s' is a model, not a plan: validate takes a plan "
			    "file; write one with `shardlab solve %s --json plan.json` "
			    "(or e in the explorer)"), plan, plan);
	}
	if ((rc = sl_plan_read(plan, pf, err)) != SL_OK ||
	    (rc = sl_plan_whole(pf, err)) != SL_OK)
		return rc;
	/* the hardware figures the plan was made with, when it says */
	if (pf->has_hw)
		hw = pf->hw;
	else if ((rc = sl_hw_load(pf->hardware ? pf->hardware : CLI_DEFAULT_HW, &hw,
	    err)) != SL_OK)
		return rc;
	if ((rc = sl_mesh_make(&hw, pf->n_axes, pf->shape, &mesh, err)) != SL_OK)
		return rc;
	memset(&mo, 0, sizeof mo);
	mo.micro_batch = pf->micro_batch > 0 ? pf->micro_batch : 1;
	mo.devices = mesh.n_devices;
	mo.seq = pf->recipe.seq;
	*g = sl_model_open(pf->model_source ? pf->model_source : pf->model, &mo, err);
	if (!*g && pf->model_source && pf->model) {
		/* the source path may have been relative to another directory */
		sl_error_clear(err);
		*g = sl_model_open(pf->model, &mo, err);
	}
	if (!*g)
		return err->code ? err->code : SL_EINPUT;
	so.recipe = pf->recipe;
	if (pf->has_zero)
		so.zero = pf->zero;
	if (!(*s = sl_space_build(*g, &mesh, &so, err)))
		return err->code ? err->code : SL_EINTERNAL;
	for (int l = 0; l < pf->n_layer_recompute && l < (*g)->n_layers; l++)
		sl_space_set_layer_recompute(*s, l, pf->layer_recompute[l]);
	*choice = sl_xcalloc((*g)->n_ops, sizeof(**choice));
	if ((rc = sl_plan_choice(*s, pf, *choice, err)) != SL_OK)
		return rc;
	cli_plan_warn(pf, *g);
	return SL_OK;
}

static int
cmd_validate(int argc, char **argv)
{
	cli_opts o;
	sl_error err;
	sl_plan_file pf;
	sl_graph *g = NULL;
	sl_space *s = NULL;
	int *choice = NULL;
	cli_vjob job;
	cli_vresult res;
	int rc;

	sl_error_clear(&err);
	memset(&pf, 0, sizeof(pf));
	memset(&res, 0, sizeof(res));
	if ((rc = cli_parse(argc, argv, &o, &err)) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1) {
		rc = sl_error_set(&err, SL_EINPUT, NULL, 0, 0, o.n_args == 0 ?
		    _("usage: shardlab validate PLAN.json [--emulate] [--steps N] "
		    "[--json FILE|-]") : _("one plan at a time: unexpected '%s'"),
		    o.n_args > 1 ? o.args[1] : "");
		goto out;
	}
	if ((rc = val_open(o.args[0], &pf, &g, &s, &choice, &err)) != SL_OK)
		goto out;
	if ((rc = cli_validate_start(s, choice, o.emulate, o.steps, &job,
	    &err)) != SL_OK)
		goto out;
	/*
	 * Say that it runs only once it has run a while: a runner that finds no
	 * GPU answers at once, and its answer should be all the user reads.
	 */
	{
		struct timespec t0, t1, nap = { 0, 20 * 1000 * 1000 };
		bool said = o.quiet;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while ((rc = cli_validate_poll(&job, false, &res, &err)) == 1) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (!said && (t1.tv_sec - t0.tv_sec) +
			    (t1.tv_nsec - t0.tv_nsec) / 1e9 >= VAL_QUIET_S) {
				fprintf(stderr, _("shardlab: running the plan on the GPU "
				    "(%d steps per device)...\n"), o.steps);
				said = true;
			}
			nanosleep(&nap, NULL);
		}
	}
	if (rc != SL_OK)
		goto out;
	if (!o.json || strcmp(o.json, "-") != 0)
		cli_validate_print(stdout, o.args[0], s, &res);
	if (o.json)
		rc = val_write_json(o.json, o.args[0], s, &res, &err);
	for (int d = 0; rc == SL_OK && d < res.n_devices; d++)
		if (!res.dev[d].ok)
			rc = sl_error_set(&err, SL_EINTERNAL, NULL, 0, 0,
			    _("device %d could not run: %s"), d, res.dev[d].error);
out:
	if (rc != SL_OK)
		cli_report(&err);
	cli_vresult_free(&res);
	free(choice);
	sl_space_free(s);
	sl_graph_free(g);
	sl_plan_file_free(&pf);
	cli_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_validate = {
	.name = "validate",
	.bit = CLI_C_VALIDATE,
	.usage = N_("validate PLAN [--emulate] [--steps N] [--json FILE|-]"),
	.help = N_("run a plan's training step on local GPUs and compare with the prediction"),
	.run = cmd_validate,
};
