/*
 * runner_main.c: shardlab-runner, the GPU validation runner that `shardlab
 * validate` starts.  It reads a launch list (the JSON of sl_launch_write_json),
 * runs it on the local GPUs (runner_cuda.cu) and writes the measurements as
 * JSON on standard output or into --out FILE.  Exit status 3 when no GPU can
 * be used ("no CUDA device found"), 2 for bad usage or a bad launch list.
 *
 *   shardlab-runner [--steps N] [--warmup N] [--emulate] [--out FILE] LAUNCH.json
 *   shardlab-runner --probe        prints the GPUs; status 3 when there are none
 *   shardlab-runner --profile [--out FILE]
 *                                  measures the local GPUs for `shardlab
 *                                  profile` (format shardlab-profile-run)
 *   shardlab-runner --dry-run LAUNCH.json
 *                                  reads the list and prints what it would
 *                                  allocate and launch, touching no GPU
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "runner.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int
rn_usage(void)
{
	fprintf(stderr, "usage: shardlab-runner [--steps N] [--warmup N] "
	    "[--emulate] [--out FILE] LAUNCH.json\n"
	    "       shardlab-runner --probe\n"
	    "       shardlab-runner --profile [--out FILE]\n"
	    "       shardlab-runner --dry-run LAUNCH.json\n");
	return RN_EXIT_USAGE;
}

static int64_t
rn_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static void
rn_str(json_t *o, const char *key, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(o, key));

	snprintf(buf, len, "%s", s ? s : "");
}

static json_t *rn_mem_json(const sl_mem *m);

static int
rn_coll_from_name(const char *s)
{
	for (int c = 0; c < SL_COLL_COUNT; c++)
		if (s && strcmp(s, sl_coll_name((sl_coll)c)) == 0)
			return c;
	return -1;
}

/* What a run would do, per device, read back from the list. */
static json_t *
rn_dry_json(const sl_launch *l)
{
	json_t *devs = json_array();

	for (int d = 0; d < l->n_devices; d++) {
		const sl_launch_dev *dv = &l->dev[d];
		int64_t n[3] = { 0, 0, 0 }, flops = 0;

		for (int i = 0; i < dv->n_items; i++) {
			n[dv->item[i].kind]++;
			flops += dv->item[i].kind == SL_ITEM_GEMM ? dv->item[i].flops : 0;
		}
		json_t *jd = json_pack("{s:i, s:i, s:o, s:o, s:I, s:I, s:I, s:I}",
		    "id", dv->id, "allocations", dv->n_alloc,
		    "allocated_bytes", rn_mem_json(&dv->alloc_sum),
		    "predicted_bytes", rn_mem_json(&dv->predicted),
		    "gemms", (json_int_t)n[SL_ITEM_GEMM],
		    "memory_kernels", (json_int_t)n[SL_ITEM_MEMORY],
		    "collectives", (json_int_t)n[SL_ITEM_COLL],
		    "flops", (json_int_t)flops);
		if (dv->n_event > 0) {
			/* what replaying the events would hold */
			json_object_set_new(jd, "events", json_integer(dv->n_event));
			json_object_set_new(jd, "step_allocated_bytes",
			    rn_mem_json(&dv->tbuf_sum));
			json_object_set_new(jd, "timeline_peak_bytes",
			    json_integer(dv->tl_peak));
			json_object_set_new(jd, "replay_peak_bytes",
			    json_integer(sl_launch_replay_peak(dv)));
		}
		json_array_append_new(devs, jd);
	}
	return json_pack("{s:s, s:i, s:o}", "format", "shardlab-runner-dry-run",
	    "version", 1, "devices", devs);
}

static int
rn_mem_read(json_t *o, sl_mem *m)
{
	memset(m, 0, sizeof(*m));
	if (!json_is_object(o))
		return -1;
	for (int c = 0; c < SL_CAT_COUNT; c++)
		sl_mem_add(m, c, rn_int(o, sl_mem_cat_name(c)));
	return 0;
}

/*
 * The timeline's buffers and events of a device (version 2; none in version
 * 1): each event before an item (at most n_items), a buffer allocated once
 * before it is released, all in item order.
 */
static int
rn_read_events(json_t *jd, sl_launch_dev *dv, const char *path, int d,
    char *why, size_t len)
{
	json_t *jb = json_object_get(jd, "timeline_buffers");
	json_t *je = json_object_get(jd, "events");
	char *state;
	int last = 0;

	if (!json_is_array(je) || json_array_size(je) == 0)
		return 0;
	dv->n_tbuf = (int)json_array_size(jb);
	dv->tbuf = calloc(dv->n_tbuf + 1, sizeof(*dv->tbuf));
	for (int i = 0; i < dv->n_tbuf; i++) {
		json_t *x = json_array_get(jb, i);
		const char *cat = json_string_value(json_object_get(x, "category"));
		sl_alloc *al = &dv->tbuf[i];

		rn_str(x, "name", al->name, sizeof(al->name));
		al->cat = cat ? sl_mem_cat_from_name(cat) : -1;
		al->bytes = rn_int(x, "bytes");
		al->op = al->kind = -1;
		if (al->cat < 0 || al->bytes < 0) {
			snprintf(why, len, "%s: device %d: bad timeline buffer %d",
			    path, d, i);
			return -1;
		}
		sl_mem_add(&dv->tbuf_sum, al->cat, al->bytes);
	}
	dv->n_event = (int)json_array_size(je);
	dv->event = calloc(dv->n_event, sizeof(*dv->event));
	state = calloc(dv->n_tbuf + 1, 1);
	for (int e = 0; e < dv->n_event; e++) {
		json_t *x = json_array_get(je, e);
		json_t *a = json_object_get(x, "alloc"), *f = json_object_get(x, "free");
		sl_launch_event *ev = &dv->event[e];

		ev->at = (int)rn_int(x, "at");
		ev->release = f != NULL;
		ev->buf = (int)json_integer_value(f ? f : a);
		if (!json_is_integer(f ? f : a) || (a && f) || ev->at < last ||
		    ev->at > dv->n_items || ev->buf < 0 || ev->buf >= dv->n_tbuf ||
		    state[ev->buf] != (ev->release ? 1 : 0)) {
			snprintf(why, len, "%s: device %d: bad event %d", path, d, e);
			free(state);
			return -1;
		}
		state[ev->buf]++;
		last = ev->at;
	}
	free(state);
	dv->tl_peak = rn_int(jd, "timeline_peak_bytes");
	return 0;
}

/* The mesh: its shape, each axis's link, the hardware. */
static int
rn_read_mesh(json_t *mesh, sl_launch *l, const char *path, char *why, size_t len)
{
	json_t *shape = json_object_get(mesh, "shape");
	json_t *axes = json_object_get(mesh, "axes");

	l->mesh.n_axes = (int)json_array_size(shape);
	if (l->mesh.n_axes < 1 || l->mesh.n_axes > SL_MAX_AXES) {
		snprintf(why, len, "%s: bad mesh shape", path);
		return -1;
	}
	l->mesh.n_devices = 1;
	for (int a = 0; a < l->mesh.n_axes; a++) {
		json_t *ax = json_array_get(axes, a);
		l->mesh.axes[a].size = (int)json_integer_value(json_array_get(shape, a));
		l->mesh.axes[a].link.bandwidth =
		    json_number_value(json_object_get(ax, "bandwidth"));
		l->mesh.axes[a].link.latency =
		    json_number_value(json_object_get(ax, "latency"));
		if (l->mesh.axes[a].size < 1 || l->mesh.axes[a].size > 4096) {
			snprintf(why, len, "%s: bad mesh shape", path);
			return -1;
		}
		l->mesh.n_devices *= l->mesh.axes[a].size;
	}
	rn_str(mesh, "hardware", l->hardware, sizeof(l->hardware));
	rn_str(mesh, "device", l->mesh.hw.device, sizeof(l->mesh.hw.device));
	l->mesh.hw.flops = json_number_value(json_object_get(mesh, "flops"));
	return 0;
}

/* Device d's plan buffers ("allocations"). */
static int
rn_read_allocs(json_t *ja, sl_launch_dev *dv, const char *path, int d,
    char *why, size_t len)
{
	dv->n_alloc = (int)json_array_size(ja);
	dv->alloc = calloc(dv->n_alloc + 1, sizeof(*dv->alloc));
	for (int i = 0; i < dv->n_alloc; i++) {
		json_t *x = json_array_get(ja, i);
		const char *cat = json_string_value(json_object_get(x, "category"));
		sl_alloc *al = &dv->alloc[i];

		rn_str(x, "name", al->name, sizeof(al->name));
		al->cat = cat ? sl_mem_cat_from_name(cat) : -1;
		al->bytes = rn_int(x, "bytes");
		al->op = -1;
		if (al->cat < 0 || al->bytes <= 0) {
			snprintf(why, len, "%s: device %d: bad allocation %d",
			    path, d, i);
			return -1;
		}
		sl_mem_add(&dv->alloc_sum, al->cat, al->bytes);
	}
	return 0;
}

/* Item i of device d's launch list. */
static int
rn_read_item(json_t *x, const sl_launch *l, sl_launch_item *it,
    const char *path, int d, int i, char *why, size_t len)
{
	const char *kind = json_string_value(json_object_get(x, "kind"));
	const char *ph = json_string_value(json_object_get(x, "phase"));

	rn_str(x, "name", it->name, sizeof(it->name));
	it->op = (int)rn_int(x, "op");
	it->phase = ph && strcmp(ph, "bwd") == 0 ? SL_PHASE_BWD : SL_PHASE_FWD;
	it->batch = rn_int(x, "batch");
	it->m = rn_int(x, "m");
	it->n = rn_int(x, "n");
	it->k = rn_int(x, "k");
	it->flops = rn_int(x, "flops");
	it->bytes = rn_int(x, "bytes");
	it->ns = rn_int(x, "time_ns");
	it->axis = (int)rn_int(x, "axis");
	it->group = (int)rn_int(x, "group");
	if (kind && strcmp(kind, "gemm") == 0) {
		it->kind = SL_ITEM_GEMM;
	} else if (kind && strcmp(kind, "memory") == 0) {
		it->kind = SL_ITEM_MEMORY;
	} else if (kind && strcmp(kind, "collective") == 0) {
		int c = rn_coll_from_name(json_string_value(
		    json_object_get(x, "collective")));
		it->kind = SL_ITEM_COLL;
		if (c < 0 || it->axis < 0 || it->axis >= l->mesh.n_axes) {
			snprintf(why, len, "%s: device %d: bad collective %d",
			    path, d, i);
			return -1;
		}
		it->coll = (sl_coll)c;
	} else {
		snprintf(why, len, "%s: device %d: bad launch item %d",
		    path, d, i);
		return -1;
	}
	if (it->batch < 0 || it->m < 0 || it->n < 0 || it->k < 0 ||
	    it->bytes < 0) {
		snprintf(why, len, "%s: device %d: negative size in item %d",
		    path, d, i);
		return -1;
	}
	return 0;
}

/* Device d: coordinates, prediction, buffers, launch items, events. */
static int
rn_read_device(json_t *jd, const sl_launch *l, sl_launch_dev *dv,
    const char *path, int d, char *why, size_t len)
{
	json_t *pred = json_object_get(jd, "predicted");
	json_t *ji = json_object_get(jd, "launch");
	json_t *coord = json_object_get(jd, "coord");

	dv->id = (int)rn_int(jd, "id");
	for (int a = 0; a < l->mesh.n_axes; a++) {
		dv->coord[a] = (int)json_integer_value(json_array_get(coord, a));
		if (dv->coord[a] < 0 || dv->coord[a] >= l->mesh.axes[a].size) {
			snprintf(why, len, "%s: device %d: bad coordinates", path, d);
			return -1;
		}
	}
	if (rn_mem_read(json_object_get(pred, "memory_bytes"), &dv->predicted)) {
		snprintf(why, len, "%s: device %d: no predicted memory", path, d);
		return -1;
	}
	dv->comm_ns = rn_int(pred, "comm_time_ns");
	dv->compute_ns = rn_int(pred, "compute_time_ns");
	if (rn_read_allocs(json_object_get(jd, "allocations"), dv, path, d,
	    why, len) != 0)
		return -1;
	dv->n_items = (int)json_array_size(ji);
	dv->item = calloc(dv->n_items + 1, sizeof(*dv->item));
	for (int i = 0; i < dv->n_items; i++)
		if (rn_read_item(json_array_get(ji, i), l, &dv->item[i], path, d, i,
		    why, len) != 0)
			return -1;
	return rn_read_events(jd, dv, path, d, why, len);
}

/* Reads the launch list; -1 with why on a malformed file. */
static int
rn_read_launch(const char *path, sl_launch *l, char *why, size_t len)
{
	sl_json j;
	sl_error err;
	json_t *root, *devs;

	sl_error_clear(&err);
	if (sl_json_read_file(&j, path, 0, SL_EINPUT, &err) != SL_OK) {
		memset(l, 0, sizeof(*l));
		if (err.line > 0)
			snprintf(why, len, "%s:%d:%d: %.300s", path, err.line,
			    err.column, err.msg);
		else
			snprintf(why, len, "%.300s", err.msg);
		return -1;
	}
	/* the values outlive the positions, which no message here needs */
	root = j.root;
	j.root = NULL;
	sl_json_free(&j);
	memset(l, 0, sizeof(*l));
	const char *fmt = json_string_value(json_object_get(root, "format"));
	if (!fmt || strcmp(fmt, "shardlab-launch") != 0 ||
	    rn_int(root, "version") < 1 || rn_int(root, "version") > SL_LAUNCH_VERSION) {
		snprintf(why, len, "%s: not a shardlab launch list (version 1 to %d)",
		    path, SL_LAUNCH_VERSION);
		goto bad;
	}
	rn_str(root, "model", l->model, sizeof(l->model));
	if (rn_read_mesh(json_object_get(root, "mesh"), l, path, why, len) != 0)
		goto bad;
	l->eval_comm_ns = rn_int(root, "comm_time_ns");
	devs = json_object_get(root, "devices");
	l->n_devices = (int)json_array_size(devs);
	if (l->n_devices != l->mesh.n_devices) {
		snprintf(why, len, "%s: %d devices listed, the mesh has %d", path,
		    l->n_devices, l->mesh.n_devices);
		goto bad;
	}
	l->dev = calloc(l->n_devices, sizeof(*l->dev));
	for (int d = 0; d < l->n_devices; d++)
		if (rn_read_device(json_array_get(devs, d), l, &l->dev[d], path, d,
		    why, len) != 0)
			goto bad;
	json_decref(root);
	return 0;
bad:
	json_decref(root);
	sl_launch_free(l);
	return -1;
}

static json_t *
rn_mem_json(const sl_mem *m)
{
	json_t *o = json_object();

	json_object_set_new(o, "total", json_integer(sl_mem_total(m)));
	for (int c = 0; c < SL_CAT_COUNT; c++)
		json_object_set_new(o, sl_mem_cat_name(c), json_integer(sl_mem_get(m, c)));
	return o;
}

static json_t *
rn_result_json(const sl_launch *l, const rn_result *r)
{
	json_t *root = json_object(), *devs = json_array();

	json_object_set_new(root, "format", json_string("shardlab-validation-run"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "model", json_string(l->model));
	json_object_set_new(root, "gpu", json_pack("{s:s, s:i, s:I}",
	    "name", r->gpu_name, "count", r->n_gpus,
	    "memory_bytes", (json_int_t)r->gpu_memory));
	json_object_set_new(root, "cuda_runtime", json_integer(r->cuda_runtime));
	json_object_set_new(root, "cuda_driver", json_integer(r->cuda_driver));
	json_object_set_new(root, "nccl", json_integer(r->nccl_version));
	json_object_set_new(root, "mode", json_string(r->mode == RN_MODE_NCCL ?
	    "nccl" : "emulated"));
	json_object_set_new(root, "steps", json_integer(r->steps));
	json_object_set_new(root, "warmup", json_integer(r->warmup));
	for (int d = 0; d < r->n_devices; d++) {
		const rn_dev_result *x = &r->dev[d];
		json_t *jd = json_object();

		json_object_set_new(jd, "id", json_integer(x->id));
		json_object_set_new(jd, "gpu", json_integer(x->gpu));
		json_object_set_new(jd, "ok", json_boolean(x->ok));
		if (!x->ok)
			json_object_set_new(jd, "error", json_string(x->error));
		json_object_set_new(jd, "memory_bytes", rn_mem_json(&x->alloc));
		json_object_set_new(jd, "allocations", json_integer(x->n_alloc));
		json_object_set_new(jd, "overhead_bytes", json_integer(x->overhead_bytes));
		json_object_set_new(jd, "meminfo_delta_bytes", json_integer(x->meminfo_delta));
		json_object_set_new(jd, "meminfo_peak_bytes", json_integer(x->meminfo_peak));
		if (x->replayed)
			json_object_set_new(jd, "peak_held_bytes",
			    json_integer(x->held_peak));
		json_object_set_new(jd, "step_time_ns", json_integer(x->step_ns));
		json_object_set_new(jd, "step_min_ns", json_integer(x->step_min_ns));
		json_object_set_new(jd, "compute_time_ns", json_integer(x->compute_ns));
		json_object_set_new(jd, "comm_time_ns", json_integer(x->comm_ns));
		json_object_set_new(jd, "comm", json_string(x->comm_measured ?
		    "measured" : "modelled"));
		json_array_append_new(devs, jd);
	}
	json_object_set_new(root, "devices", devs);
	return root;
}

static json_t *
rn_profile_json(const rn_profile *p)
{
	json_t *root = json_object(), *g = json_array(), *ar = json_array();

	json_object_set_new(root, "format", json_string("shardlab-profile-run"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "gpu", json_pack("{s:s, s:i, s:I}",
	    "name", p->gpu_name, "count", p->n_gpus,
	    "memory_bytes", (json_int_t)p->gpu_memory));
	json_object_set_new(root, "cuda_runtime", json_integer(p->cuda_runtime));
	json_object_set_new(root, "cuda_driver", json_integer(p->cuda_driver));
	json_object_set_new(root, "nccl", json_integer(p->nccl_version));
	for (int i = 0; i < p->n_gemm; i++)
		json_array_append_new(g, json_pack("{s:I, s:I, s:I, s:f}",
		    "m", (json_int_t)p->gemm_m[i], "n", (json_int_t)p->gemm_n[i],
		    "k", (json_int_t)p->gemm_k[i], "s", p->gemm_s[i]));
	json_object_set_new(root, "gemm", g);
	json_object_set_new(root, "copy", json_pack("{s:I, s:f}",
	    "bytes", (json_int_t)p->copy_bytes, "s", p->copy_s));
	json_object_set_new(root, "launch_s", json_real(p->launch_s));
	for (int i = 0; i < p->n_allreduce; i++)
		json_array_append_new(ar, json_pack("{s:I, s:f}",
		    "bytes", (json_int_t)p->ar_bytes[i], "s", p->ar_s[i]));
	json_object_set_new(root, "all_reduce", ar);
	return root;
}

/* Writes root to out (atomically) or stdout; an exit status. */
static int
rn_write(json_t *root, const char *out)
{
	sl_error err;

	/* a file is written whole, then renamed: a reader never sees half of it */
	sl_error_clear(&err);
	if (sl_json_write(json_incref(root), out ? out : "-",
	    "cannot write the JSON text", &err) == SL_OK)
		return RN_EXIT_OK;
	fprintf(stderr, "shardlab-runner: cannot write %s: %s\n", out ? out :
	    "the standard output", err.msg);
	return RN_EXIT_FAIL;
}

int
main(int argc, char **argv)
{
	rn_opts o = { 10, 3, false };
	const char *path = NULL, *out = NULL;
	bool probe = false, dry = false, profile = false;
	char why[512] = "";
	sl_launch l;
	rn_result r;
	int rc, ngpu;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			o.steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
			o.warmup = atoi(argv[++i]);
		else if (strcmp(argv[i], "--emulate") == 0)
			o.emulate = true;
		else if (strcmp(argv[i], "--probe") == 0)
			probe = true;
		else if (strcmp(argv[i], "--profile") == 0)
			profile = true;
		else if (strcmp(argv[i], "--dry-run") == 0)
			dry = true;
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1] != '\0')
			return rn_usage();
		else if (!path)
			path = argv[i];
		else
			return rn_usage();
	}
	if ((!path && !probe && !profile) || o.steps < 1 || o.steps > 100000 || o.warmup < 0 ||
	    o.warmup > 100000)
		return rn_usage();

	if (dry) {
		if (rn_read_launch(path, &l, why, sizeof(why)) != 0) {
			fprintf(stderr, "shardlab-runner: %s\n", why);
			return RN_EXIT_USAGE;
		}
		json_t *root = rn_dry_json(&l);
		rc = rn_write(root, NULL);
		json_decref(root);
		sl_launch_free(&l);
		return rc;
	}
	ngpu = rn_gpu_count(why, sizeof(why));
	if (ngpu <= 0) {
		fprintf(stderr, "shardlab-runner: no CUDA device found (%s)\n", why);
		return RN_EXIT_FAIL;
	}
	if (probe) {
		printf("%d\n", ngpu);
		return RN_EXIT_OK;
	}
	if (profile) {
		rn_profile p;
		json_t *root;

		if (rn_profile_run(&p, why, sizeof(why)) != RN_EXIT_OK) {
			fprintf(stderr, "shardlab-runner: %s\n", why);
			return RN_EXIT_FAIL;
		}
		root = rn_profile_json(&p);
		rc = rn_write(root, out);
		json_decref(root);
		return rc;
	}
	if (rn_read_launch(path, &l, why, sizeof(why)) != 0) {
		fprintf(stderr, "shardlab-runner: %s\n", why);
		return RN_EXIT_USAGE;
	}
	rc = rn_run(&l, &o, &r, why, sizeof(why));
	if (rc != RN_EXIT_OK) {
		fprintf(stderr, "shardlab-runner: %s\n", why);
		free(r.dev);
		sl_launch_free(&l);
		return rc;
	}
	json_t *root = rn_result_json(&l, &r);
	rc = rn_write(root, out);
	json_decref(root);
	free(r.dev);
	sl_launch_free(&l);
	return rc;
}
