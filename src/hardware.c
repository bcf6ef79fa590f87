/*
 * hardware.c: hardware profiles (JSON, man shardlab-plan.5 HARDWARE
 * PROFILES): reading them, writing them, and filling one from what the GPU
 * runner measured (`shardlab profile`); device meshes built on them, and
 * the ring-collective time formulas every cost in the engine goes through.
 */
#include "internal.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#define SL_MAX_DEVICES 65536

static const char *const bundled_hw[] = {
	"h100-nvlink", "h100-2node-ib", "h200-nvlink", "h100-pcie",
	"b200-nvlink", "a100-pcie", "a100-sxm", "a100-40gb-sxm", "l40s-pcie",
	"l4-pcie", "rtx4090-pcie", "v100-nvlink", NULL
};

const char *const *
sl_bundled_hardware(void)
{
	return bundled_hw;
}

/* ---------------------------------------------------------------- profiles */

/* What one profile parse needs to report an error at a value. */
typedef struct hw_ctx {
	const sl_json *j;	/* the values and their positions */
	sl_error *err;
	json_t *root;		/* the profile (j's root, or a member of it) */
	const char *prefix;	/* the path of root in j; NULL: j's root */
} hw_ctx;

/* "parent.key", or "key" at the top. */
static const char *
hw_path(char *buf, size_t len, const char *parent, const char *key)
{
	if (parent != NULL && key != NULL)
		snprintf(buf, len, "%s.%s", parent, key);
	else
		snprintf(buf, len, "%s", parent ? parent : key ? key : "");
	return buf;
}

/* path inside the profile as a path in the document. */
static const char *
hw_at(const hw_ctx *c, const char *path, char *buf, size_t len)
{
	if (c->prefix == NULL)
		return path;
	if (path == NULL || *path == '\0')
		return c->prefix;
	snprintf(buf, len, "%s.%s", c->prefix, path);
	return buf;
}

/* Error at the value of path (json.h), or at its parent if absent. */
#define hw_fail(c, path, ...) sl_json_fail((c)->j, (c)->err, \
	hw_at((c), (path), (char[320]){ 0 }, 320), __VA_ARGS__)

static bool
hw_known(const char *key, const char *const *known)
{
	for (; *known != NULL; known++)
		if (strcmp(key, *known) == 0)
			return true;
	return false;
}

/* Rejects members not in known: a misspelt field would silently be lost. */
static int
hw_check_keys(const hw_ctx *c, json_t *obj, const char *parent,
    const char *const *known)
{
	const char *key;
	json_t *v;
	char p[256];

	json_object_foreach(obj, key, v) {
		if (!hw_known(key, known))
			return hw_fail(c, hw_path(p, sizeof p, parent, key),
			    _("unknown field \"%s\"%s%s"), key,
			    parent ? _(" in ") : "", parent ? parent : "");
	}
	return SL_OK;
}

static json_t *
hw_member(const hw_ctx *c, json_t *obj, const char *parent, const char *key,
    bool required, int *rc)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL && required)
		*rc = hw_fail(c, parent, _("missing field \"%s\"%s%s"), key,
		    parent ? _(" in ") : "", parent ? parent : "");
	return v;
}

static int
hw_string(const hw_ctx *c, json_t *obj, const char *parent, const char *key,
    bool required, char *out, size_t size)
{
	char p[256];
	int rc = SL_OK;
	json_t *v = hw_member(c, obj, parent, key, required, &rc);

	if (v == NULL)
		return rc;
	hw_path(p, sizeof p, parent, key);
	if (!json_is_string(v))
		return hw_fail(c, p, _("\"%s\" must be a string"), key);
	if (json_string_length(v) == 0 && required)
		return hw_fail(c, p, _("\"%s\" must not be empty"), key);
	if (json_string_length(v) >= size)
		return hw_fail(c, p, _("\"%s\" is longer than %zu bytes"),
		    key, size - 1);
	snprintf(out, size, "%s", json_string_value(v));
	return SL_OK;
}

/*
 * Plausible ranges of a profile's physical values (shardlab(1) lists them):
 * from a slow network link to far beyond any interconnect, from a
 * microcontroller to far beyond any accelerator.
 */
#define HW_MIN_BANDWIDTH 1e6	/* bytes/s */
#define HW_MAX_BANDWIDTH 1e15
#define HW_MIN_LATENCY 1e-9	/* seconds, or 0 */
#define HW_MAX_LATENCY 1.0
#define HW_MIN_MEMORY 1048576.0	/* bytes */
#define HW_MAX_MEMORY 1e15
#define HW_MIN_FLOPS 1e9	/* per second */
#define HW_MAX_FLOPS 1e19

/*
 * A positive finite number (integer or real); min_zero allows 0.  Physical
 * quantities are bounded to a plausible range [min, max] (min applies to a
 * value other than 0): a bandwidth of 1e-300 would saturate every time.
 */
static int
hw_number(const hw_ctx *c, json_t *obj, const char *parent, const char *key,
    bool min_zero, double min, double max, double *out)
{
	char p[256];
	int rc = SL_OK;
	json_t *v = hw_member(c, obj, parent, key, true, &rc);
	double d;

	if (v == NULL)
		return rc;
	hw_path(p, sizeof p, parent, key);
	if (!json_is_number(v))
		return hw_fail(c, p, _("\"%s\" must be a number"), key);
	d = json_number_value(v);
	if (!isfinite(d) || d < 0 || (!min_zero && d == 0))
		return hw_fail(c, p, min_zero ?
		    _("\"%s\" must not be negative") :
		    _("\"%s\" must be greater than zero"), key);
	if (d > max || (d != 0 && d < min))
		return hw_fail(c, p, _("\"%s\" is %g, outside the plausible "
		    "range: at least %g and at most %g"), key, d, min, max);
	*out = d;
	return SL_OK;
}

/* A positive whole number; JSON reals such as 80e9 are accepted when whole. */
static int
hw_count(const hw_ctx *c, json_t *obj, const char *parent, const char *key,
    double min, double max, int64_t *out)
{
	char p[256];
	json_t *v;
	double d;
	int rc;

	if ((rc = hw_number(c, obj, parent, key, false, 0, INFINITY, &d)) != SL_OK)
		return rc;
	v = json_object_get(obj, key);
	if (d != floor(d))
		return hw_fail(c, hw_path(p, sizeof p, parent, key),
		    _("\"%s\" must be a whole number"), key);
	if (d < min || d > max)
		return hw_fail(c, hw_path(p, sizeof p, parent, key),
		    _("\"%s\" is %g, outside the plausible range: at least %g and at most %g"),
		    key, d, min, max);
	*out = json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)d;
	return SL_OK;
}

static int
hw_link(const hw_ctx *c, json_t *root, const char *key, bool required,
    sl_link *l)
{
	static const char *const known[] = { "bandwidth", "latency", NULL };
	int rc = SL_OK;
	json_t *o = hw_member(c, root, NULL, key, required, &rc);

	memset(l, 0, sizeof *l);
	if (o == NULL)
		return rc;
	if (!json_is_object(o))
		return hw_fail(c, key, _("\"%s\" must be an object with "
		    "\"bandwidth\" (bytes/s) and \"latency\" (seconds)"), key);
	if ((rc = hw_check_keys(c, o, key, known)) != SL_OK ||
	    (rc = hw_number(c, o, key, "bandwidth", false, HW_MIN_BANDWIDTH, HW_MAX_BANDWIDTH,
	    &l->bandwidth)) != SL_OK ||
	    (rc = hw_number(c, o, key, "latency", true, HW_MIN_LATENCY, HW_MAX_LATENCY,
	    &l->latency)) != SL_OK)
		return rc;
	return SL_OK;
}

/* An optional number: absent leaves *out as it is. */
static int
hw_opt_number(const hw_ctx *c, json_t *obj, const char *parent,
    const char *key, bool min_zero, double min, double max, double *out)
{
	if (json_object_get(obj, key) == NULL)
		return SL_OK;
	return hw_number(c, obj, parent, key, min_zero, min, max, out);
}

static int
gemm_point_cmp(const void *a, const void *b)
{
	const sl_gemm_point *x = a, *y = b;

	return (x->flops > y->flops) - (x->flops < y->flops);
}

/* Sorts points by size and merges those of one size into one at their
 * mean time; returns how many are left. */
static int
merge_points(sl_gemm_point *pts, int n)
{
	int k = 0;

	qsort(pts, n, sizeof pts[0], gemm_point_cmp);
	for (int a = 0; a < n;) {
		int b = a;
		double secs = 0, f = pts[a].flops;
		while (b < n && pts[b].flops == f)
			secs += f / pts[b++].achieved;
		pts[k].flops = f;
		pts[k].achieved = f * (b - a) / secs;
		k++;
		a = b;
	}
	return k;
}

/* A table of measured points: how its shape members make the FLOPs. */
typedef struct hw_table {
	const char *key;		/* "gemm", "attention" */
	const char *const *dims;	/* shape members, NULL-terminated */
	double flops_per;		/* FLOPs = flops_per x product of dims */
	const char *const *known;
} hw_table;

static const char *const gemm_dims[] = { "m", "n", "k", NULL };
static const char *const gemm_known[] = { "m", "n", "k", "flops", "tflops", NULL };
static const char *const attn_dims[] = { "batch", "heads", "seq", "seq2", "dim", NULL };
static const char *const attn_known[] = { "batch", "heads", "seq", "dim", "flops",
    "tflops", NULL };

/* gemm: 2mnk.  Causal attention forward and backward: 3.5 x 4 b h s^2 d / 2
 * (doc/cost-model.md); "seq2" stands for the second factor of s. */
static const hw_table hw_tables[] = {
	{ "gemm", gemm_dims, 2.0, gemm_known },
	{ "attention", attn_dims, 7.0, attn_known },
	{ "gemm_fp8", gemm_dims, 2.0, gemm_known },
};

/*
 * device.gemm and device.attention: measured points, each its problem's
 * shape and "tflops" achieved, or {"flops", "tflops"}.  Sorted by size;
 * points of the same size are merged into their mean time.
 */
static int
hw_points(const hw_ctx *c, json_t *dev, const hw_table *tb, sl_gemm_point *pts,
    int *n_out, double peak)
{
	json_t *arr = json_object_get(dev, tb->key), *pt;
	char base[64];
	size_t i;
	int n = 0, rc;

	if (arr == NULL)
		return SL_OK;
	snprintf(base, sizeof base, "device.%s", tb->key);
	if (!json_is_array(arr) || json_array_size(arr) == 0)
		return hw_fail(c, base, _("\"%s\" must be a non-empty array of "
		    "measured points, each with \"tflops\""), tb->key);
	if (json_array_size(arr) > SL_MAX_GEMM_POINTS)
		return hw_fail(c, base, _("\"%s\" has %zu points; at most %d "
		    "are supported"), tb->key, json_array_size(arr),
		    SL_MAX_GEMM_POINTS);
	json_array_foreach(arr, i, pt) {
		char p[96], q[112];
		double tf, f;

		snprintf(p, sizeof p, "%s[%zu]", base, i);
		if (!json_is_object(pt))
			return hw_fail(c, p, _("a point of \"%s\" must be an "
			    "object with its shape or \"flops\", and \"tflops\""),
			    tb->key);
		if ((rc = hw_check_keys(c, pt, p, tb->known)) != SL_OK)
			return rc;
		if (json_object_get(pt, "flops") != NULL) {
			if (json_object_size(pt) != 2)
				return hw_fail(c, p, _("a point gives either "
				    "\"flops\" or its shape, not both"));
			if ((rc = hw_number(c, pt, p, "flops", false, 1, 1e18,
			    &f)) != SL_OK)
				return rc;
		} else {
			f = tb->flops_per;
			for (const char *const *d = tb->dims; *d != NULL; d++) {
				int64_t v;
				const char *k = strcmp(*d, "seq2") == 0 ? "seq" : *d;
				if ((rc = hw_count(c, pt, p, k, 1, 1e7, &v)) != SL_OK)
					return rc;
				f *= (double)v;
			}
		}
		if ((rc = hw_number(c, pt, p, "tflops", false, 1e-6, 1e9, &tf)) != SL_OK)
			return rc;
		if (tf * 1e12 > peak * 1.0001) {
			snprintf(q, sizeof q, "%s.tflops", p);
			return hw_fail(c, q, _("measured %g TFLOP/s is above the "
			    "device's peak \"flops\" (%g TFLOP/s)"), tf,
			    peak / 1e12);
		}
		pts[n].flops = f;
		pts[n].achieved = tf * 1e12;
		n++;
	}
	*n_out = merge_points(pts, n);
	return SL_OK;
}

/* The compute figures of device (all optional; doc/cost-model.md). */
static int
hw_compute(const hw_ctx *c, json_t *dev, sl_hw *hw)
{
	int rc;

	if ((rc = hw_opt_number(c, dev, "device", "memory_bandwidth", false,
	    HW_MIN_BANDWIDTH, 1e15, &hw->mem_bandwidth)) != SL_OK ||
	    (rc = hw_opt_number(c, dev, "device", "optimizer_bandwidth", false,
	    HW_MIN_BANDWIDTH, 1e15, &hw->optim_bandwidth)) != SL_OK ||
	    (rc = hw_opt_number(c, dev, "device", "matmul_efficiency", false,
	    1e-3, 1.0, &hw->matmul_efficiency)) != SL_OK ||
	    (rc = hw_opt_number(c, dev, "device", "attention_flops", false,
	    HW_MIN_FLOPS, hw->flops, &hw->attention_flops)) != SL_OK ||
	    (rc = hw_opt_number(c, dev, "device", "launch_overhead", true,
	    1e-9, 1e-2, &hw->launch_overhead)) != SL_OK ||
	    (rc = hw_opt_number(c, dev, "device", "unvectorized_bandwidth",
	    false, HW_MIN_BANDWIDTH, 1e15, &hw->unvec_bandwidth)) != SL_OK ||
	    (rc = hw_opt_number(c, dev, "device", "unaligned_matmul_flops",
	    false, HW_MIN_FLOPS, hw->flops, &hw->unaligned_flops)) != SL_OK)
		return rc;
	if ((rc = hw_points(c, dev, &hw_tables[0], hw->gemm, &hw->n_gemm,
	    hw->flops)) != SL_OK ||
	    (rc = hw_points(c, dev, &hw_tables[1], hw->attention,
	    &hw->n_attention, hw->flops)) != SL_OK)
		return rc;
	/* FP8 tensor cores: a peak, and optionally its measured points */
	if ((rc = hw_opt_number(c, dev, "device", "fp8_flops", false,
	    HW_MIN_FLOPS, HW_MAX_FLOPS, &hw->fp8_flops)) != SL_OK)
		return rc;
	if (json_object_get(dev, "gemm_fp8") != NULL && hw->fp8_flops <= 0)
		return hw_fail(c, "device.gemm_fp8", "%s", _("\"gemm_fp8\" needs "
		    "the device's FP8 peak, \"fp8_flops\""));
	return hw_points(c, dev, &hw_tables[2], hw->gemm_fp8, &hw->n_gemm_fp8,
	    hw->fp8_flops);
}

/*
 * device.memory_bytes is the device's memory as the driver reports it;
 * device.reserve_bytes (or the default reserve) is what plans leave to the
 * runtime: at least 0 and under the device's memory.
 */
static int
hw_memory(const hw_ctx *c, json_t *dev, sl_hw *hw)
{
	double r;
	int rc;

	if ((rc = hw_count(c, dev, "device", "memory_bytes", HW_MIN_MEMORY,
	    HW_MAX_MEMORY, &hw->capacity_bytes)) != SL_OK)
		return rc;
	hw->reserve_bytes = sl_hw_default_reserve(hw->capacity_bytes);
	if (json_object_get(dev, "reserve_bytes") != NULL) {
		if ((rc = hw_number(c, dev, "device", "reserve_bytes", true, 0,
		    HW_MAX_MEMORY, &r)) != SL_OK)
			return rc;
		if (r != floor(r) || r >= (double)hw->capacity_bytes)
			return hw_fail(c, "device.reserve_bytes", _("\"reserve_bytes\" "
			    "must be a whole number under the device's memory "
			    "(%lld bytes)"), (long long)hw->capacity_bytes);
		hw->reserve_bytes = (int64_t)r;
	}
	hw->memory_bytes = hw->capacity_bytes - hw->reserve_bytes;
	return SL_OK;
}

static int
hw_parse(const hw_ctx *c, sl_hw *hw)
{
	static const char *const known[] = { "format", "version", "name",
	    "description", "device", "devices_per_node", "intra_node",
	    "inter_node", "host_link", "host_adam", NULL };
	static const char *const dev_known[] = { "name", "memory_bytes",
	    "reserve_bytes", "flops", "fp8_flops", "memory_bandwidth",
	    "optimizer_bandwidth", "matmul_efficiency", "attention_flops",
	    "launch_overhead", "unvectorized_bandwidth",
	    "unaligned_matmul_flops", "gemm",
	    "attention", "gemm_fp8", NULL };
	json_t *root = c->root, *v;
	int64_t n;
	int rc = SL_OK;

	if (!json_is_object(root)) {
		rc = hw_fail(c, NULL, _("a hardware profile must be a JSON "
		    "object with \"format\": \"shardlab-hardware\""));
		goto out;
	}
	v = json_object_get(root, "format");
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), "shardlab-hardware") != 0) {
		rc = hw_fail(c, "format", _("not a hardware profile: expected "
		    "\"format\": \"shardlab-hardware\""));
		goto out;
	}
	v = json_object_get(root, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1) {
		rc = hw_fail(c, "version", _("unsupported profile version: "
		    "expected \"version\": 1"));
		goto out;
	}
	if ((rc = hw_check_keys(c, root, NULL, known)) != SL_OK ||
	    (rc = hw_string(c, root, NULL, "name", true, hw->name,
	    sizeof hw->name)) != SL_OK ||
	    (rc = hw_string(c, root, NULL, "description", false,
	    hw->description, sizeof hw->description)) != SL_OK)
		goto out;
	v = hw_member(c, root, NULL, "device", true, &rc);
	if (v == NULL)
		goto out;
	if (!json_is_object(v)) {
		rc = hw_fail(c, "device", _("\"device\" must be an object with "
		    "\"name\", \"memory_bytes\" and \"flops\""));
		goto out;
	}
	if ((rc = hw_check_keys(c, v, "device", dev_known)) != SL_OK ||
	    (rc = hw_string(c, v, "device", "name", true, hw->device,
	    sizeof hw->device)) != SL_OK ||
	    (rc = hw_memory(c, v, hw)) != SL_OK ||
	    (rc = hw_number(c, v, "device", "flops", false, HW_MIN_FLOPS, HW_MAX_FLOPS,
	    &hw->flops)) != SL_OK ||
	    (rc = hw_compute(c, v, hw)) != SL_OK)
		goto out;
	if ((rc = hw_count(c, root, NULL, "devices_per_node", 1, SL_MAX_DEVICES,
	    &n)) != SL_OK)
		goto out;
	hw->devices_per_node = (int)n;
	if ((rc = hw_link(c, root, "intra_node", true, &hw->intra)) != SL_OK ||
	    (rc = hw_link(c, root, "inter_node", false, &hw->inter)) != SL_OK ||
	    (rc = hw_link(c, root, "host_link", false, &hw->host)) != SL_OK ||
	    (rc = hw_opt_number(c, root, NULL, "host_adam", false, 1e3, 1e13,
	    &hw->host_adam)) != SL_OK)
		goto out;
out:
	return rc;
}

/* A bare name (no '/', no ".json") is a bundled profile. */
static bool
hw_is_bundled_name(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') == NULL &&
	    !(n > 5 && strcmp(s + n - 5, ".json") == 0);
}

char *
sl_hw_path(const char *name_or_path)
{
	const char *dir = sl_datadir();
	char *path;

	if (name_or_path == NULL || *name_or_path == '\0')
		return NULL;
	if (!hw_is_bundled_name(name_or_path))
		return sl_xstrdup(name_or_path);
	/* a bundled profile, else a file of that name here */
	path = sl_xmalloc(strlen(dir) + strlen(name_or_path) + 32);
	sprintf(path, "%s/hardware/%s.json", dir, name_or_path);
	if (access(path, F_OK) == 0)
		return path;
	free(path);
	return access(name_or_path, F_OK) == 0 ? sl_xstrdup(name_or_path) : NULL;
}

int
sl_hw_load(const char *name_or_path, sl_hw *hw, sl_error *err)
{
	char *path, *text;
	size_t len;
	hw_ctx c;
	sl_json j;
	int rc;

	memset(hw, 0, sizeof *hw);
	if (name_or_path == NULL || *name_or_path == '\0')
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("empty hardware profile name"));
	if ((path = sl_hw_path(name_or_path)) == NULL) {
		char list[512] = "";
		for (const char *const *b = bundled_hw; *b != NULL; b++) {
			if (b != bundled_hw)
				strncat(list, ", ", sizeof list - strlen(list) - 1);
			strncat(list, *b, sizeof list - strlen(list) - 1);
		}
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("unknown hardware profile \"%s\" (bundled: %s; "
		    "or name a profile file)"), sl_esc(name_or_path), list);
	}
	text = sl_read_file(path, &len, err);
	if (text == NULL) {
		free(path);
		return err != NULL ? err->code : SL_EINPUT;
	}
	c.j = &j;
	c.err = err;
	c.prefix = NULL;
	if (len == 0)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("empty file: expected a hardware profile"));
	else if (memchr(text, '\0', len) != NULL)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("not a hardware profile: the file holds binary data"));
	else if ((rc = sl_json_read(&j, path, text, len, 0, SL_EINPUT,
	    err)) == SL_OK) {
		c.root = j.root;
		rc = hw_parse(&c, hw);
		sl_json_free(&j);
	}
	if (rc != SL_OK)
		memset(hw, 0, sizeof *hw);
	free(text);
	free(path);
	return rc;
}

int
sl_hw_parse_json(const sl_json *j, const char *path, json_t *obj, sl_hw *hw,
    sl_error *err)
{
	hw_ctx c = { .j = j, .err = err, .root = obj, .prefix = path };
	int rc;

	memset(hw, 0, sizeof *hw);
	if ((rc = hw_parse(&c, hw)) != SL_OK)
		memset(hw, 0, sizeof *hw);
	return rc;
}

/* ------------------------------------------------- measured profiles */

/* A number member of o, or -1 when absent or not a number. */
static double
run_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : -1;
}

/*
 * What a training process holds on a device of total bytes beyond its
 * plan: the CUDA context, library workspaces, communication buffers and
 * the caching allocator's rounding.  3 GiB: on an H200 the driver saw
 * 0.6-2.6 GiB more than the plan's peak (doc/validation.md: 0.6 GiB on one
 * device, 0.9-1.1 GiB with NCCL, 2.6 GiB with micro-batches of 4, the
 * allocator's rounding growing with the activations).  Every profile
 * without a "reserve_bytes" of its own gets it, the bundled ones included
 * (their capacities are what the driver reports: 79.18 GiB on an H100
 * 80GB).  Never more than a quarter of the device.
 */
int64_t
sl_hw_default_reserve(int64_t total)
{
	int64_t r = (int64_t)3 << 30;

	return total / 4 < r ? total / 4 : r;
}

const char *
sl_hw_memory_text(const sl_hw *hw, char *buf, size_t len)
{
	char u[32], c[32], r[32];

	snprintf(buf, len, _("usable %s of %s (reserve %s)"),
	    sl_format_bytes(hw->memory_bytes, u, sizeof u),
	    sl_format_bytes(hw->capacity_bytes > 0 ? hw->capacity_bytes :
	    hw->memory_bytes, c, sizeof c),
	    sl_format_bytes(hw->reserve_bytes, r, sizeof r));
	return buf;
}

/*
 * Without figures of its own, a profile's host is a PCIe 4.0 x16 link
 * per device (32 GB/s a direction on paper; 25 GB/s is what pinned
 * copies reach, as cudaMemcpy bandwidth tests show) and a host whose
 * memory moves 300 GB/s shared by 8 devices (two 8-channel DDR4-3200
 * sockets, 410 GB/s on paper, as a DGX A100's): CPU Adam is memory-bound,
 * about 28 bytes a parameter (fp32 master, m and v read and written, the
 * 2-byte gradient read, the 2-byte weight written), so 37.5 GB/s per
 * device updates 1.34e9 parameters a second.
 */
#define HOST_LINK_BW 25e9
#define HOST_LINK_LATENCY 10e-6
#define HOST_ADAM (300e9 / 8 / 28)

sl_link
sl_hw_host_link(const sl_hw *hw)
{
	sl_link l = { HOST_LINK_BW, HOST_LINK_LATENCY };

	return hw->host.bandwidth > 0 ? hw->host : l;
}

double
sl_hw_host_adam(const sl_hw *hw)
{
	return hw->host_adam > 0 ? hw->host_adam : HOST_ADAM;
}

int
sl_hw_apply_measured(sl_hw *hw, const char *path, int64_t *reserve,
    sl_error *err)
{
	sl_json j;
	sl_error je;
	json_t *root, *gpu, *arr, *pt, *copy;
	const char *fmt, *name;
	size_t i;
	int n_gpus, rc = SL_OK;
	double ls, sx = 0, sy = 0, sxx = 0, sxy = 0;
	sl_hw out = *hw;

	sl_error_clear(&je);
	if (sl_json_read_file(&j, path, 0, SL_EINTERNAL, &je) != SL_OK)
		return sl_error_set(err, SL_EINTERNAL, je.file, je.line, je.column,
		    _("the GPU runner's measurements are unreadable: %s"), je.msg);
	root = j.root;
	fmt = json_string_value(json_object_get(root, "format"));
	gpu = json_object_get(root, "gpu");
	name = json_string_value(json_object_get(gpu, "name"));
	n_gpus = (int)run_num(gpu, "count");
	arr = json_object_get(root, "gemm");
	copy = json_object_get(root, "copy");
	if (fmt == NULL || strcmp(fmt, "shardlab-profile-run") != 0 ||
	    name == NULL || n_gpus < 1 || run_num(gpu, "memory_bytes") <= 0 ||
	    !json_is_array(arr) || json_array_size(arr) == 0 ||
	    json_array_size(arr) > SL_MAX_GEMM_POINTS ||
	    run_num(copy, "bytes") <= 0 || run_num(copy, "s") <= 0) {
		rc = sl_error_set(err, SL_EINTERNAL, path, 0, 0, "%s",
		    _("the GPU runner's measurements are incomplete"));
		goto out;
	}
	snprintf(out.device, sizeof out.device, "%s", name);
	out.capacity_bytes = (int64_t)run_num(gpu, "memory_bytes");
	*reserve = out.reserve_bytes = sl_hw_default_reserve(out.capacity_bytes);
	out.memory_bytes = out.capacity_bytes - out.reserve_bytes;
	/* copy: bytes read plus bytes written */
	out.mem_bandwidth = 2 * run_num(copy, "bytes") / run_num(copy, "s");
	ls = run_num(root, "launch_s");
	if (ls >= 0)
		out.launch_overhead = ls;
	out.n_gemm = 0;
	json_array_foreach(arr, i, pt) {
		double m = run_num(pt, "m"), n = run_num(pt, "n"), k = run_num(pt, "k");
		double s = run_num(pt, "s"), f = 2 * m * n * k;

		if (m <= 0 || n <= 0 || k <= 0 || s <= 0) {
			char at[32];
			int line, col;

			snprintf(at, sizeof at, "gemm[%zu]", i);
			sl_json_where(&j, at, &line, &col);
			rc = sl_error_set(err, SL_EINTERNAL, path, line, col, "%s",
			    _("the GPU runner's measurements are incomplete"));
			goto out;
		}
		if (f / s > out.flops) {
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("a %.0f x %.0f x %.0f gemm ran at %.1f TFLOP/s, above "
			    "the peak of %.1f TFLOP/s of the base profile \"%s\": "
			    "this GPU needs a profile of its own"), m, n, k,
			    f / s / 1e12, out.flops / 1e12, hw->name);
			sl_error_fix(err, SL_SET_HW, NULL);
			goto out;
		}
		out.gemm[out.n_gemm].flops = f;
		out.gemm[out.n_gemm++].achieved = f / s;
	}
	out.n_gemm = merge_points(out.gemm, out.n_gemm);
	/*
	 * All-reduce over the node's n GPUs: t = 2(n-1)/n B / beta +
	 * 2(n-1) lambda (sl_coll_time), fitted by least squares in B.
	 */
	arr = json_object_get(root, "all_reduce");
	if (n_gpus >= 2 && json_is_array(arr) && json_array_size(arr) >= 2) {
		double cnt = 0, a, c;
		json_array_foreach(arr, i, pt) {
			double x = 2.0 * (n_gpus - 1) / n_gpus * run_num(pt, "bytes");
			double y = run_num(pt, "s");
			if (x <= 0 || y <= 0)
				continue;
			sx += x;
			sy += y;
			sxx += x * x;
			sxy += x * y;
			cnt++;
		}
		if (cnt >= 2 && cnt * sxx - sx * sx > 0) {
			a = (cnt * sxy - sx * sy) / (cnt * sxx - sx * sx);
			c = (sy - a * sx) / cnt;
			if (a > 0) {
				out.intra.bandwidth = 1 / a;
				out.intra.latency = c > 0 ? c / (2.0 * (n_gpus - 1)) : 0;
				out.devices_per_node = n_gpus;
			}
		}
	}
	*hw = out;
out:
	sl_json_free(&j);
	return rc;
}

/* Rates and times are measured: ten significant digits are all they tell. */
#define R(d) sl_json_real_digits((d), 10)

static json_t *
link_json(const sl_link *l)
{
	return json_pack("{s:o, s:o}", "bandwidth", R(l->bandwidth),
	    "latency", R(l->latency));
}

json_t *
sl_hw_json(const sl_hw *hw)
{
	json_t *root, *dev, *g;

	dev = json_pack("{s:s, s:I, s:I, s:o}", "name", hw->device,
	    "memory_bytes", (json_int_t)(hw->capacity_bytes > 0 ?
	    hw->capacity_bytes : hw->memory_bytes),
	    "reserve_bytes", (json_int_t)hw->reserve_bytes, "flops", R(hw->flops));
	if (hw->fp8_flops > 0)
		json_object_set_new(dev, "fp8_flops", R(hw->fp8_flops));
	if (hw->mem_bandwidth > 0)
		json_object_set_new(dev, "memory_bandwidth",
		    R(hw->mem_bandwidth));
	if (hw->optim_bandwidth > 0)
		json_object_set_new(dev, "optimizer_bandwidth",
		    R(hw->optim_bandwidth));
	if (hw->matmul_efficiency > 0)
		json_object_set_new(dev, "matmul_efficiency",
		    R(hw->matmul_efficiency));
	if (hw->attention_flops > 0)
		json_object_set_new(dev, "attention_flops",
		    R(hw->attention_flops));
	if (hw->launch_overhead > 0)
		json_object_set_new(dev, "launch_overhead",
		    R(hw->launch_overhead));
	if (hw->unvec_bandwidth > 0)
		json_object_set_new(dev, "unvectorized_bandwidth",
		    R(hw->unvec_bandwidth));
	if (hw->unaligned_flops > 0)
		json_object_set_new(dev, "unaligned_matmul_flops",
		    R(hw->unaligned_flops));
	if (hw->n_gemm > 0) {
		g = json_array();
		for (int i = 0; i < hw->n_gemm; i++)
			json_array_append_new(g, json_pack("{s:o, s:o}",
			    "flops", R(hw->gemm[i].flops),
			    "tflops", R(hw->gemm[i].achieved / 1e12)));
		json_object_set_new(dev, "gemm", g);
	}
	if (hw->n_attention > 0) {
		g = json_array();
		for (int i = 0; i < hw->n_attention; i++)
			json_array_append_new(g, json_pack("{s:o, s:o}",
			    "flops", R(hw->attention[i].flops),
			    "tflops", R(hw->attention[i].achieved / 1e12)));
		json_object_set_new(dev, "attention", g);
	}
	if (hw->n_gemm_fp8 > 0) {
		g = json_array();
		for (int i = 0; i < hw->n_gemm_fp8; i++)
			json_array_append_new(g, json_pack("{s:o, s:o}",
			    "flops", R(hw->gemm_fp8[i].flops),
			    "tflops", R(hw->gemm_fp8[i].achieved / 1e12)));
		json_object_set_new(dev, "gemm_fp8", g);
	}
	root = json_pack("{s:s, s:i, s:s, s:s, s:o, s:i, s:o}",
	    "format", "shardlab-hardware", "version", 1, "name", hw->name,
	    "description", hw->description, "device", dev,
	    "devices_per_node", hw->devices_per_node,
	    "intra_node", link_json(&hw->intra));
	if (hw->inter.bandwidth > 0)
		json_object_set_new(root, "inter_node", link_json(&hw->inter));
	if (hw->host.bandwidth > 0)
		json_object_set_new(root, "host_link", link_json(&hw->host));
	if (hw->host_adam > 0)
		json_object_set_new(root, "host_adam", R(hw->host_adam));
	return root;
}

int
sl_hw_write(const sl_hw *hw, const char *path, sl_error *err)
{
	return sl_json_write(sl_hw_json(hw), path,
	    _("cannot write the hardware profile"), err);
}
#undef R

/* -------------------------------------------------------------------- mesh */

int
sl_mesh_parse(const char *s, int *n_axes, int shape[SL_MAX_AXES], sl_error *err)
{
	const char *p = s;
	int64_t prod = 1;
	int n = 0;

	if (s == NULL || *s == '\0')
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("empty mesh shape: expected N or AxB, e.g. 8 or 2x4"));
	for (;;) {
		int64_t v = 0;
		const char *d = p;

		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p - '0');
			if (v > SL_MAX_DEVICES)
				return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("mesh \"%s\": an axis of more than %d "
				    "devices"), s, SL_MAX_DEVICES);
			p++;
		}
		if (p == d && *p == '-')
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": an axis cannot have a negative "
			    "number of devices"), s);
		if (p == d)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": expected N or AxB with positive "
			    "whole numbers, e.g. 8 or 2x4"), s);
		if (v == 0)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": an axis of 0 devices"), s);
		if (n == SL_MAX_AXES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": at most %d axes are supported"),
			    s, SL_MAX_AXES);
		shape[n++] = (int)v;
		prod *= v;
		if (prod > SL_MAX_DEVICES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": more than %d devices"), s,
			    SL_MAX_DEVICES);
		if (*p == '\0')
			break;
		if (*p != 'x' && *p != 'X')
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": expected N or AxB with positive "
			    "whole numbers, e.g. 8 or 2x4"), s);
		p++;
	}
	/* "2x3x4" is caught above before the third number is stored. */
	*n_axes = n;
	for (int a = n; a < SL_MAX_AXES; a++)
		shape[a] = 1;
	return SL_OK;
}

/* The devices of a mesh shape: every axis at least 1, the product at most
 * SL_MAX_DEVICES. */
static int
mesh_devices(int n_axes, const int *shape, int64_t *n, sl_error *err)
{
	*n = 1;
	for (int a = 0; a < n_axes; a++) {
		if (shape[a] < 1)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh axis %d has %d devices"), a, shape[a]);
		*n *= shape[a];
		if (*n > SL_MAX_DEVICES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("a mesh of more than %d devices"), SL_MAX_DEVICES);
	}
	return SL_OK;
}

int
sl_mesh_make(const sl_hw *hw, int n_axes, const int *shape, sl_mesh *m,
    sl_error *err)
{
	int64_t n;
	int dpn = hw->devices_per_node > 0 ? hw->devices_per_node : 1;
	int inner;

	memset(m, 0, sizeof *m);
	if (n_axes < 1 || n_axes > SL_MAX_AXES)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("a mesh has 1 or %d axes, not %d"), SL_MAX_AXES, n_axes);
	if (mesh_devices(n_axes, shape, &n, err) != SL_OK)
		return err->code;
	m->n_axes = n_axes;
	m->n_devices = (int)n;
	m->hw = *hw;
	/*
	 * Devices are numbered row-major and fill nodes in order.  The inner
	 * axis groups consecutive ids: intra-node when every group lies in one
	 * node.  An outer axis group strides over the inner axis, so it stays
	 * in one node only when the whole mesh does.
	 */
	inner = n_axes - 1;
	for (int a = 0; a < n_axes; a++) {
		bool intra;

		m->axes[a].size = shape[a];
		if (n <= dpn)
			intra = true;
		else if (a == inner)
			intra = shape[a] <= dpn && dpn % shape[a] == 0;
		else
			intra = shape[a] == 1;
		if (intra)
			m->axes[a].link = hw->intra;
		else if (hw->inter.bandwidth > 0)
			m->axes[a].link = hw->inter;
		else {
			int nd = m->n_devices;
			memset(m, 0, sizeof *m);
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("a mesh of %d devices does not fit one node of "
			    "%d on hardware \"%s\", which has no inter-node "
			    "link"), nd, dpn, hw->name);
		}
	}
	return SL_OK;
}

void
sl_mesh_coords(const sl_mesh *m, int dev, int coord[SL_MAX_AXES])
{
	for (int a = 0; a < SL_MAX_AXES; a++)
		coord[a] = 0;
	for (int a = m->n_axes - 1; a >= 0; a--) {
		int sz = m->axes[a].size > 0 ? m->axes[a].size : 1;
		coord[a] = dev % sz;
		dev /= sz;
	}
}

/* ------------------------------------------------------------- collectives */

static const struct {
	const char *name;
	double bw_num;		/* B/beta multiplier: bw_num(n) / bw_den(n) */
	int hops;		/* latency multiplier per (n - 1) */
	bool squared;		/* denominator n^2 instead of n */
} colls[SL_COLL_COUNT] = {
	[SL_COLL_ALL_REDUCE] = { "all-reduce", 2, 2, false },
	[SL_COLL_ALL_GATHER] = { "all-gather", 1, 1, false },
	[SL_COLL_REDUCE_SCATTER] = { "reduce-scatter", 1, 1, false },
	[SL_COLL_ALL_TO_ALL] = { "all-to-all", 1, 1, true },
};

const char *
sl_coll_name(sl_coll c)
{
	if ((unsigned)c >= SL_COLL_COUNT)
		return "?";
	return colls[c].name;
}

/*
 * Ring collectives (doc/cost-model.md, "Communication per step"; Thakur
 * et al. 2005):
 * all-reduce 2(n-1)/n B/beta + 2(n-1) lambda, all-gather and
 * reduce-scatter (n-1)/n B/beta + (n-1) lambda, all-to-all
 * (n-1)/n^2 B/beta + (n-1) lambda.  Nothing to move costs nothing.
 */
int64_t
sl_coll_time(sl_coll c, int n, int64_t bytes, const sl_link *l)
{
	double den, t;

	if ((unsigned)c >= SL_COLL_COUNT || n <= 1 || bytes <= 0)
		return 0;
	if (l == NULL || !(l->bandwidth > 0))
		return INT64_MAX;
	den = colls[c].squared ? (double)n * n : (double)n;
	t = colls[c].bw_num * (double)(n - 1) / den * (double)bytes /
	    l->bandwidth * 1e9 +
	    (double)colls[c].hops * (double)(n - 1) * l->latency * 1e9;
	if (!(t < 9.2e18))
		return INT64_MAX;
	return (int64_t)llround(t);
}

/* --------------------------------------------- meshes with named axes */

static const char *const axis_role_names[SL_AXIS_ROLE_COUNT] = {
	"dp", "tp", "pp", "cp"
};

const char *
sl_axis_role_name(sl_axis_role r)
{
	return (unsigned)r < SL_AXIS_ROLE_COUNT ? axis_role_names[r] : "?";
}

int
sl_topo_parse(const char *shape, const char *axes, int *n_axes,
    int shape_out[SL_MAX_TOPO_AXES], sl_axis_role role[SL_MAX_TOPO_AXES],
    sl_error *err)
{
	const char *p = shape;
	int64_t prod = 1;
	int n = 0, na = 0, npp = 0;

	if (shape == NULL || *shape == '\0')
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("empty mesh shape: expected sizes joined by x, e.g. 4x2x8"));
	for (;;) {
		char *end;
		long v;

		if (*p < '0' || *p > '9')
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": expected sizes joined by x, e.g. 4x2x8"), shape);
		v = strtol(p, &end, 10);
		if (v < 1 || v > SL_MAX_DEVICES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": an axis of %ld devices"), shape, v);
		if (n == SL_MAX_TOPO_AXES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": at most %d axes are supported"), shape,
			    SL_MAX_TOPO_AXES);
		shape_out[n++] = (int)v;
		prod *= v;
		if (prod > SL_MAX_DEVICES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": more than %d devices"), shape, SL_MAX_DEVICES);
		p = end;
		if (*p == '\0')
			break;
		if (*p != 'x' && *p != 'X')
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": expected sizes joined by x, e.g. 4x2x8"), shape);
		p++;
	}
	if (axes == NULL) {
		/* inner to outer: tp, dp, pp */
		static const sl_axis_role def[3] = { SL_AXIS_TP, SL_AXIS_DP, SL_AXIS_PP };
		if (n > 3) {
			sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh \"%s\": its %d axes need names"),
			    shape, n);
			return sl_error_fix(err, SL_SET_AXES, NULL);
		}
		for (int a = 0; a < n; a++)
			role[a] = def[n - 1 - a];
		if (n == 1)
			role[0] = SL_AXIS_DP;
		*n_axes = n;
		return SL_OK;
	}
	for (p = axes; ; ) {
		const char *q = p;
		int r = -1;

		while (*q != '\0' && *q != ',')
			q++;
		for (int k = 0; k < SL_AXIS_ROLE_COUNT; k++)
			if (strlen(axis_role_names[k]) == (size_t)(q - p) &&
			    strncmp(p, axis_role_names[k], q - p) == 0)
				r = k;
		if (r < 0)
			return sl_error_about(err, SL_EINPUT, SL_SET_AXES,
			    _("\"%s\": expected names pp, dp, tp or cp joined by "
			    "commas, one per mesh axis"), axes);
		if (na == SL_MAX_TOPO_AXES)
			return sl_error_about(err, SL_EINPUT, SL_SET_AXES,
			    _("\"%s\": more names than mesh axes"), axes);
		role[na++] = (sl_axis_role)r;
		if (r == SL_AXIS_PP)
			npp++;
		if (*q == '\0')
			break;
		p = q + 1;
	}
	if (na != n)
		return sl_error_about(err, SL_EINPUT, SL_SET_AXES,
		    _("\"%s\" names %d axes but mesh \"%s\" has %d"), axes, na,
		    shape, n);
	if (npp > 1)
		return sl_error_about(err, SL_EINPUT, SL_SET_AXES,
		    _("\"%s\": at most one pp axis"), axes);
	/* one tensor-parallel and one context-parallel group per rank, as
	 * the frameworks build them */
	for (int k = 0; k < na; k++)
		for (int q = k + 1; q < na; q++)
			if (role[k] == role[q] && (role[k] == SL_AXIS_TP ||
			    role[k] == SL_AXIS_CP))
				return sl_error_about(err, SL_EINPUT, SL_SET_AXES,
				    _("\"%s\": at most one %s axis"), axes,
				    sl_axis_role_name(role[k]));
	if (n - npp > SL_MAX_AXES)
		return sl_error_about(err, SL_EINPUT, SL_SET_AXES,
		    _("\"%s\": at most %d axes besides pp"), axes, SL_MAX_AXES);
	*n_axes = n;
	return SL_OK;
}

int
sl_topo_make(const sl_hw *hw, int n_axes, const int *shape,
    const sl_axis_role *role, sl_topo *t, sl_error *err)
{
	int64_t n;
	int dpn = hw->devices_per_node > 0 ? hw->devices_per_node : 1;

	memset(t, 0, sizeof *t);
	if (n_axes < 1 || n_axes > SL_MAX_TOPO_AXES)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("a mesh has 1 to %d axes, not %d"), SL_MAX_TOPO_AXES, n_axes);
	if (mesh_devices(n_axes, shape, &n, err) != SL_OK)
		return err->code;
	t->n_axes = n_axes;
	t->n_devices = (int)n;
	t->hw = *hw;
	for (int a = 0, stride = (int)n; a < n_axes; a++) {
		stride /= shape[a];
		t->shape[a] = shape[a];
		t->role[a] = role[a];
		/*
		 * A group of axis a is base + i * stride for i < shape[a]; nodes
		 * hold consecutive ids, so the group lies in one node exactly
		 * when its first and last devices do.
		 */
		for (int d = 0; d < n && !t->crosses[a]; d++) {
			int last = d + (shape[a] - 1) * stride;
			if ((d / stride) % shape[a] == 0 && d / dpn != last / dpn)
				t->crosses[a] = true;
		}
		if (!t->crosses[a])
			t->link[a] = hw->intra;
		else if (hw->inter.bandwidth > 0)
			t->link[a] = hw->inter;
		else {
			memset(t, 0, sizeof *t);
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("a mesh of %lld devices does not fit one node of "
			    "%d on hardware \"%s\", which has no inter-node "
			    "link"), (long long)n, dpn, hw->name);
		}
	}
	return SL_OK;
}

int
sl_topo_pp(const sl_topo *t)
{
	for (int a = 0; a < t->n_axes; a++)
		if (t->role[a] == SL_AXIS_PP)
			return t->shape[a];
	return 1;
}

sl_link
sl_topo_pp_link(const sl_topo *t)
{
	for (int a = 0; a < t->n_axes; a++)
		if (t->role[a] == SL_AXIS_PP)
			return t->link[a];
	return t->hw.intra;
}

int
sl_topo_stage_mesh(const sl_topo *t, sl_mesh *m, sl_error *err)
{
	memset(m, 0, sizeof *m);
	m->hw = t->hw;
	m->n_devices = 1;
	for (int a = 0; a < t->n_axes; a++) {
		if (t->role[a] == SL_AXIS_PP)
			continue;
		if (m->n_axes == SL_MAX_AXES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("a stage's operators are planned on at most %d axes"),
			    SL_MAX_AXES);
		m->axes[m->n_axes].size = t->shape[a];
		m->axes[m->n_axes].link = t->link[a];
		m->n_axes++;
		m->n_devices *= t->shape[a];
	}
	if (m->n_axes == 0) {
		/* pipeline only: each stage on one device */
		m->n_axes = 1;
		m->axes[0].size = 1;
		m->axes[0].link = t->hw.intra;
	}
	return SL_OK;
}
