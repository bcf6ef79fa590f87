/*
 * hardware.c: hardware profiles (JSON, man shardlab-plan.5 HARDWARE
 * PROFILES), device meshes built on them, and the ring-collective time
 * formulas every cost in the engine goes through.
 */
#include "internal.h"
#include "jsonpos.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#define SL_MAX_DEVICES 65536

static const char *const bundled_hw[] = {
	"h100-nvlink", "h100-2node-ib", "a100-pcie", "v100-nvlink", NULL
};

const char *const *
sl_bundled_hardware(void)
{
	return bundled_hw;
}

/* ---------------------------------------------------------------- profiles */

/* What one profile parse needs to report an error at a value. */
typedef struct hw_ctx {
	const char *file;
	const jp_doc *doc;	/* positions of the values */
	sl_error *err;
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

/* Error at the value of path (jsonpos syntax), or at its parent if absent. */
static int
hw_fail(const hw_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
hw_fail(const hw_ctx *c, const char *path, const char *fmt, ...)
{
	char msg[768], p[256];
	const jp_node *n = NULL;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(p, sizeof p, "%s", path ? path : "");
	for (;;) {
		char *dot;
		if ((n = jp_find(c->doc, p)) != NULL || p[0] == '\0')
			break;
		dot = strrchr(p, '.');
		*(dot ? dot : p) = '\0';
	}
	if (n == NULL)
		n = jp_root(c->doc);
	return sl_error_set(c->err, SL_EINPUT, c->file, n ? n->line : 0,
	    n ? n->col : 0, "%s", msg);
}

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

/* A positive finite number (integer or real); min_zero allows 0. */
static int
hw_number(const hw_ctx *c, json_t *obj, const char *parent, const char *key,
    bool min_zero, double max, double *out)
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
	if (d > max)
		return hw_fail(c, p, _("\"%s\" is out of range (at most %g)"),
		    key, max);
	*out = d;
	return SL_OK;
}

/* A positive whole number; JSON reals such as 80e9 are accepted when whole. */
static int
hw_count(const hw_ctx *c, json_t *obj, const char *parent, const char *key,
    double max, int64_t *out)
{
	char p[256];
	json_t *v;
	double d;
	int rc;

	if ((rc = hw_number(c, obj, parent, key, false, max, &d)) != SL_OK)
		return rc;
	v = json_object_get(obj, key);
	if (d != floor(d))
		return hw_fail(c, hw_path(p, sizeof p, parent, key),
		    _("\"%s\" must be a whole number"), key);
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
	    (rc = hw_number(c, o, key, "bandwidth", false, 1e16,
	    &l->bandwidth)) != SL_OK ||
	    (rc = hw_number(c, o, key, "latency", true, 10.0,
	    &l->latency)) != SL_OK)
		return rc;
	return SL_OK;
}

static int
hw_parse(const hw_ctx *c, const char *text, size_t len, sl_hw *hw)
{
	static const char *const known[] = { "format", "version", "name",
	    "description", "device", "devices_per_node", "intra_node",
	    "inter_node", NULL };
	static const char *const dev_known[] = { "name", "memory_bytes",
	    "flops", NULL };
	json_error_t je;
	json_t *root, *v;
	int64_t n;
	int rc = SL_OK;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL)
		return sl_error_set(c->err, SL_EINPUT, c->file, je.line,
		    je.column, _("not valid JSON: %s"), je.text);
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
	    (rc = hw_count(c, v, "device", "memory_bytes", 9.2e18,
	    &hw->memory_bytes)) != SL_OK ||
	    (rc = hw_number(c, v, "device", "flops", false, 1e21,
	    &hw->flops)) != SL_OK)
		goto out;
	if ((rc = hw_count(c, root, NULL, "devices_per_node", SL_MAX_DEVICES,
	    &n)) != SL_OK)
		goto out;
	hw->devices_per_node = (int)n;
	if ((rc = hw_link(c, root, "intra_node", true, &hw->intra)) != SL_OK ||
	    (rc = hw_link(c, root, "inter_node", false, &hw->inter)) != SL_OK)
		goto out;
out:
	json_decref(root);
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

int
sl_hw_load(const char *name_or_path, sl_hw *hw, sl_error *err)
{
	char *path, *text;
	size_t len;
	hw_ctx c;
	jp_doc *doc;
	jp_error je;
	int rc;

	memset(hw, 0, sizeof *hw);
	if (name_or_path == NULL || *name_or_path == '\0')
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("empty hardware profile name"));
	if (hw_is_bundled_name(name_or_path)) {
		const char *dir = sl_datadir();

		path = sl_xmalloc(strlen(dir) + strlen(name_or_path) + 32);
		sprintf(path, "%s/hardware/%s.json", dir, name_or_path);
		if (access(path, F_OK) != 0 && access(name_or_path, F_OK) == 0) {
			free(path);
			path = sl_xstrdup(name_or_path);
		} else if (access(path, F_OK) != 0) {
			char list[512] = "";
			for (const char *const *b = bundled_hw; *b != NULL; b++) {
				if (b != bundled_hw)
					strncat(list, ", ", sizeof list - strlen(list) - 1);
				strncat(list, *b, sizeof list - strlen(list) - 1);
			}
			free(path);
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("unknown hardware profile \"%s\" (bundled: %s; "
			    "or name a profile file)"), name_or_path, list);
		}
	} else
		path = sl_xstrdup(name_or_path);
	text = sl_read_file(path, &len, false, err);
	if (text == NULL) {
		free(path);
		return err != NULL ? err->code : SL_EINPUT;
	}
	c.file = path;
	c.err = err;
	c.doc = NULL;
	if (len == 0)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("empty file: expected a hardware profile"));
	else if (memchr(text, '\0', len) != NULL)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("not a hardware profile: the file holds binary data"));
	else if ((doc = jp_scan(text, len, &je)) == NULL)
		rc = sl_error_set(err, SL_EINPUT, path, je.line, je.col,
		    _("not valid JSON: %s"), je.msg);
	else {
		c.doc = doc;
		rc = hw_parse(&c, text, len, hw);
		jp_free(doc);
	}
	if (rc != SL_OK)
		memset(hw, 0, sizeof *hw);
	free(text);
	free(path);
	return rc;
}

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

int
sl_mesh_make(const sl_hw *hw, int n_axes, const int *shape, sl_mesh *m,
    sl_error *err)
{
	int64_t n = 1;
	int dpn = hw->devices_per_node > 0 ? hw->devices_per_node : 1;
	int inner;

	memset(m, 0, sizeof *m);
	if (n_axes < 1 || n_axes > SL_MAX_AXES)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("a mesh has 1 or %d axes, not %d"), SL_MAX_AXES, n_axes);
	for (int a = 0; a < n_axes; a++) {
		if (shape[a] < 1)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("mesh axis %d has %d devices"), a, shape[a]);
		n *= shape[a];
		if (n > SL_MAX_DEVICES)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("a mesh of more than %d devices"), SL_MAX_DEVICES);
	}
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
 * Ring collectives (design.md, doc/cost-model.md; Thakur et al. 2005):
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
