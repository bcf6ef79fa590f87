/*
 * model_json.c: the JSON model format (man shardlab-model.5): loading with
 * errors that name the line and column of the offending value, saving in the
 * explicit form, and opening a model by file name or bundled name.
 *
 * The reader (json.h) gives the values and their positions; the loader
 * walks both side by side.  A file either spells out "tensors" and "ops"
 * (explicit form) or describes a transformer by "generator" sizes, which
 * gen.c turns into a graph whose batch follows the mesh.
 */
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MJ_FORMAT "shardlab-model"
#define MJ_VERSION 1
/* A tensor larger than this many bytes is surely a mistake (64 PiB). */
#define MJ_MAX_BYTES ((int64_t)1 << 56)

static const char *const mj_bundled[] = {
	"bert-large", "gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "llama-7b",
	"mlp-2layer", NULL
};

const char *const *
sl_bundled_models(void)
{
	return mj_bundled;
}

typedef struct mj {
	const char *file;
	sl_json j;		/* the values and their positions */
	sl_error *err;
	sl_graph *g;
	int *producer;		/* per tensor: the operator writing it, or -1 */
	const jp_node *tensors_p, *ops_p;
} mj;

static int
mj_fail(mj *m, const jp_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
mj_fail(mj *m, const jp_node *at, const char *fmt, ...)
{
	char msg[sizeof m->err->msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sl_error_set(m->err, SL_EINPUT, m->file, at ? at->line : 0,
	    at ? at->col : 0, "%s", msg);
}

/* "the string \"x\"", "-4", "an array": what a value is, for "got ...". */
static const char *
mj_describe(const json_t *v, char *buf, size_t len)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		if (json_string_length(v) > 40)
			snprintf(buf, len, _("the string \"%.40s...\""), json_string_value(v));
		else
			snprintf(buf, len, _("the string \"%s\""), json_string_value(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, len, "%.17g", json_real_value(v));
		if (strpbrk(buf, ".en") == NULL && strlen(buf) + 2 < len)
			strcat(buf, ".0");	/* 1.0 is not the integer 1 */
		break;
	case JSON_TRUE:
		snprintf(buf, len, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, len, "false");
		break;
	case JSON_NULL:
		snprintf(buf, len, "null");
		break;
	case JSON_ARRAY:
		snprintf(buf, len, "%s", _("an array"));
		break;
	default:
		snprintf(buf, len, "%s", _("an object"));
		break;
	}
	return buf;
}

/* Levenshtein distance, capped: small typos get a suggestion. */
static int
mj_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[64], prev;

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cur = row[j];
			int best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb];
}

/* "; did you mean 'x'?" for the closest candidate, or "". */
static const char *
mj_suggest(const char *s, const char *const *cand, int n, char q, char *buf,
    size_t len)
{
	int best = 99, bi = -1, lim = strlen(s) <= 3 ? 1 : 2;

	for (int i = 0; i < n && cand[i] != NULL; i++) {
		int d = mj_distance(s, cand[i]);
		if (d < best) {
			best = d;
			bi = i;
		}
	}
	if (bi >= 0 && best <= lim && best > 0)
		snprintf(buf, len, _("; did you mean %c%s%c?"), q, cand[bi], q);
	else
		buf[0] = '\0';
	return buf;
}

/* "a, b, c" */
static const char *
mj_join(const char *const *names, int n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && names[i] != NULL && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%s", i ? ", " : "", names[i]);
	return buf;
}

/*
 * Rejects members not in allowed (NULL-terminated); names starting with '_'
 * are comments.  what names the object in the message.
 */
static int
mj_check_keys(mj *m, const jp_node *obj, const char *what,
    const char *const *allowed)
{
	int n = 0;
	char list[256], sug[96];

	while (allowed[n] != NULL)
		n++;
	for (int i = 0; i < obj->n; i++) {
		const char *k = obj->kids[i]->key;
		bool ok = k[0] == '_';

		for (int j = 0; j < n && !ok; j++)
			ok = strcmp(k, allowed[j]) == 0;
		if (!ok) {
			const jp_node *kid = obj->kids[i];
			sl_error_set(m->err, SL_EINPUT, m->file, kid->key_line,
			    kid->key_col, _("%s: unknown member \"%.64s\" (expected %s)%s"),
			    what, k, mj_join(allowed, n, list, sizeof list),
			    mj_suggest(k, allowed, n, '"', sug, sizeof sug));
			return SL_EINPUT;
		}
	}
	return SL_OK;
}

/* Member key of obj: value and position (both NULL when absent). */
static json_t *
mj_get(json_t *obj, const jp_node *objp, const char *key, const jp_node **p)
{
	json_t *v = json_object_get(obj, key);

	*p = v != NULL ? jp_member(objp, key) : NULL;
	return v;
}

/* A required or optional string member; *out stays when absent. */
static int
mj_string(mj *m, json_t *obj, const jp_node *objp, const char *what,
    const char *key, bool required, const char *expect, const char **out)
{
	const jp_node *p;
	json_t *v = mj_get(obj, objp, key, &p);
	char got[96];

	if (v == NULL) {
		if (required)
			return mj_fail(m, objp, _("%s: missing \"%s\" (expected %s)"),
			    what, key, expect);
		return SL_OK;
	}
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return mj_fail(m, p, _("%s: \"%s\" must be %s, got %s"), what, key,
		    expect, json_is_string(v) && json_string_length(v) == 0 ?
		    _("an empty string") : mj_describe(v, got, sizeof got));
	*out = json_string_value(v);
	return SL_OK;
}

/* ------------------------------------------------------------ explicit form */

static int
mj_tensor(mj *m, int i, json_t *t, const jp_node *tp)
{
	static const char *const keys[] = { "name", "shape", "dtype", "role", NULL };
	const char *dtypes[SL_DT_COUNT + 1], *roles[SL_ROLE_COUNT + 1];
	const char *name = NULL, *dts = "bf16", *rs = "activation";
	char what[128], got[96], list[128], sug[96];
	const jp_node *shp, *p;
	json_t *shape;
	int64_t dims[SL_MAX_RANK], bytes;
	int dt, role, rank, prev, idx;
	sl_error e2;

	snprintf(what, sizeof what, _("tensor %d"), i);
	if (!json_is_object(t))
		return mj_fail(m, tp, _("%s: expected an object with \"name\" and "
		    "\"shape\", got %s"), what, mj_describe(t, got, sizeof got));
	if (mj_string(m, t, tp, what, "name", true, _("a tensor name"), &name))
		return SL_EINPUT;
	snprintf(what, sizeof what, _("tensor '%.64s'"), name);
	if (mj_check_keys(m, tp, what, keys))
		return SL_EINPUT;
	if ((prev = sl_graph_find_tensor(m->g, name)) >= 0) {
		const jp_node *first = jp_member(jp_index(m->tensors_p, prev), "name");
		return mj_fail(m, jp_member(tp, "name"), _("duplicate tensor '%.64s' "
		    "(first defined at line %d, column %d)"), name, first->line,
		    first->col);
	}
	for (int k = 0; k < SL_DT_COUNT; k++)
		dtypes[k] = sl_dtype_name(k);
	dtypes[SL_DT_COUNT] = NULL;
	for (int k = 0; k < SL_ROLE_COUNT; k++)
		roles[k] = sl_role_name(k);
	roles[SL_ROLE_COUNT] = NULL;
	if (mj_string(m, t, tp, what, "dtype", false, _("a dtype name"), &dts))
		return SL_EINPUT;
	if ((dt = sl_dtype_from_name(dts)) < 0)
		return mj_fail(m, jp_member(tp, "dtype"), _("%s: unknown dtype "
		    "\"%.32s\" (expected one of %s)%s"), what, dts,
		    mj_join(dtypes, SL_DT_COUNT, list, sizeof list),
		    mj_suggest(dts, dtypes, SL_DT_COUNT, '"', sug, sizeof sug));
	if (mj_string(m, t, tp, what, "role", false, _("a role name"), &rs))
		return SL_EINPUT;
	if ((role = sl_role_from_name(rs)) < 0)
		return mj_fail(m, jp_member(tp, "role"), _("%s: unknown role "
		    "\"%.32s\" (expected one of %s)%s"), what, rs,
		    mj_join(roles, SL_ROLE_COUNT, list, sizeof list),
		    mj_suggest(rs, roles, SL_ROLE_COUNT, '"', sug, sizeof sug));

	shape = mj_get(t, tp, "shape", &shp);
	if (shape == NULL)
		return mj_fail(m, tp, _("%s: missing \"shape\" (expected an array "
		    "of positive integer dimensions, e.g. [8, 512])"), what);
	if (!json_is_array(shape))
		return mj_fail(m, shp, _("%s: \"shape\" must be an array of positive "
		    "integer dimensions, e.g. [8, 512], got %s"), what,
		    mj_describe(shape, got, sizeof got));
	rank = (int)json_array_size(shape);
	if (rank < 1 || rank > SL_MAX_RANK)
		return mj_fail(m, shp, _("%s: expected 1 to %d dimensions, got %d"),
		    what, SL_MAX_RANK, rank);
	bytes = sl_dtype_size(dt);
	for (int d = 0; d < rank; d++) {
		json_t *v = json_array_get(shape, d);

		p = jp_index(shp, d);
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			return mj_fail(m, p, _("%s: expected a positive integer "
			    "dimension, got %s"), what, mj_describe(v, got, sizeof got));
		dims[d] = json_integer_value(v);
		if (__builtin_mul_overflow(bytes, dims[d], &bytes) ||
		    bytes > MJ_MAX_BYTES)
			return mj_fail(m, shp, _("%s: the shape is too large: its size "
			    "in bytes does not fit in 64 bits or exceeds 2^56 bytes (64 PiB)"),
			    what);
	}
	sl_error_clear(&e2);
	if ((idx = sl_graph_add_tensor(m->g, name, rank, dims, dt, role, &e2)) < 0)
		return mj_fail(m, tp, "%s", e2.msg);
	return SL_OK;
}

/* Names of all tensors, for suggestions (a view, not copies). */
static const char **
mj_tensor_names(const sl_graph *g)
{
	const char **v = sl_xcalloc(g->n_tensors + 1, sizeof *v);

	for (int i = 0; i < g->n_tensors; i++)
		v[i] = g->tensors[i].name;
	return v;
}

/* Resolves a list of tensor names ("inputs" or "outputs"). */
static int
mj_tensor_list(mj *m, json_t *op, const jp_node *opp, const char *what,
    const char *key, int *idx, int *n)
{
	const jp_node *lp;
	json_t *l = mj_get(op, opp, key, &lp);
	char got[96], sug[160];

	if (l == NULL)
		return mj_fail(m, opp, _("%s: missing \"%s\" (expected an array of "
		    "tensor names)"), what, key);
	if (!json_is_array(l))
		return mj_fail(m, lp, _("%s: \"%s\" must be an array of tensor "
		    "names, got %s"), what, key, mj_describe(l, got, sizeof got));
	*n = (int)json_array_size(l);
	if (*n > SL_MAX_OP_TENSORS)
		return mj_fail(m, lp, _("%s: too many %s (%d; at most %d)"), what,
		    key, *n, SL_MAX_OP_TENSORS);
	for (int j = 0; j < *n; j++) {
		json_t *v = json_array_get(l, j);
		const jp_node *p = jp_index(lp, j);

		if (!json_is_string(v))
			return mj_fail(m, p, _("%s: expected a tensor name in \"%s\", "
			    "got %s"), what, key, mj_describe(v, got, sizeof got));
		idx[j] = sl_graph_find_tensor(m->g, json_string_value(v));
		if (idx[j] < 0) {
			const char **names = mj_tensor_names(m->g);
			mj_suggest(json_string_value(v), names, m->g->n_tensors, '\'',
			    sug, sizeof sug);
			free(names);
			return mj_fail(m, p, _("%s: unknown tensor '%.64s' (every "
			    "tensor must be declared in \"tensors\")%s"), what,
			    json_string_value(v), sug);
		}
	}
	return SL_OK;
}

/* The names of the attributes a kind takes, NULL-terminated, and how many. */
static int
mj_kind_attrs(sl_op_kind k, const char **names)
{
	int n = 0;

	for (const sl_attr *at = sl_kinds[k].attrs; at->name != NULL; at++)
		names[n++] = at->name;
	names[n] = NULL;
	return n;
}

/* The attribute of any kind named key, or NULL. */
static const sl_attr *
mj_any_attr(const char *key, const char **all, int *n_all)
{
	const sl_attr *found = NULL;

	*n_all = 0;
	for (int k = 0; k < SL_OP_KIND_COUNT; k++)
		for (const sl_attr *at = sl_kinds[k].attrs; at->name != NULL; at++) {
			bool dup = false;
			for (int j = 0; j < *n_all && !dup; j++)
				dup = strcmp(all[j], at->name) == 0;
			if (!dup)
				all[(*n_all)++] = at->name;
			if (strcmp(at->name, key) == 0)
				found = at;
		}
	all[*n_all] = NULL;
	return found;
}

/* One attribute's value v (at p) into its field of o, by the row's type. */
static int
mj_attr(mj *m, sl_op *o, const sl_attr *at, json_t *v, const jp_node *p,
    const char *what)
{
	char *field = (char *)o + at->field, got[96];

	switch (at->type) {
	case SL_ATTR_COUNT_INT:
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > INT32_MAX)
			return mj_fail(m, p, _("%s: attribute \"%s\" must be a positive "
			    "integer, got %s"), what, at->name,
			    mj_describe(v, got, sizeof got));
		memcpy(field, &(int){ (int)json_integer_value(v) }, sizeof(int));
		return SL_OK;
	case SL_ATTR_PROB:
		if (!json_is_number(v) || json_number_value(v) < 0 ||
		    json_number_value(v) >= 1)
			return mj_fail(m, p, _("%s: attribute \"%s\" must be a "
			    "probability in [0, 1), got %s"), what, at->name,
			    mj_describe(v, got, sizeof got));
		memcpy(field, &(double){ json_number_value(v) }, sizeof(double));
		return SL_OK;
	case SL_ATTR_REAL:
		if (!json_is_number(v) || json_number_value(v) < 0 ||
		    json_number_value(v) > 1e6)
			return mj_fail(m, p, _("%s: attribute \"%s\" must be a number "
			    "from 0 to 1e6, got %s"), what, at->name,
			    mj_describe(v, got, sizeof got));
		memcpy(field, &(double){ json_number_value(v) }, sizeof(double));
		return SL_OK;
	case SL_ATTR_BOOL:
		if (!json_is_boolean(v))
			return mj_fail(m, p, _("%s: attribute \"%s\" must be true or "
			    "false, got %s"), what, at->name,
			    mj_describe(v, got, sizeof got));
		memcpy(field, &(bool){ json_is_true(v) }, sizeof(bool));
		return SL_OK;
	case SL_ATTR_PERM: {
		int r = m->g->tensors[o->in[0]].rank, *perm = (int *)(void *)field;
		bool seen[SL_MAX_RANK] = { false };

		if (!json_is_array(v) || (int)json_array_size(v) != r)
			return mj_fail(m, p, _("%s: attribute \"%s\" must be an "
			    "array of %d dimension indices (the input's rank), got %s"),
			    what, at->name, r, mj_describe(v, got, sizeof got));
		for (int d = 0; d < r; d++) {
			json_t *e = json_array_get(v, d);
			json_int_t x = json_integer_value(e);

			if (!json_is_integer(e) || x < 0 || x >= r || seen[x])
				return mj_fail(m, jp_index(p, d), _("%s: \"%s\" must "
				    "be a permutation of 0..%d, got %s at position %d"),
				    what, at->name, r - 1,
				    mj_describe(e, got, sizeof got), d);
			seen[x] = true;
			perm[d] = (int)x;
		}
		return SL_OK;
	}
	default:
		return mj_fail(m, p, "%s", _("invalid model"));
	}
}

/* What a missing attribute of this type must be, for the message. */
static const char *
mj_attr_expect(const mj *m, const sl_op *o, const sl_attr *at, char *buf,
    size_t len)
{
	if (at->type == SL_ATTR_PERM)
		snprintf(buf, len, _("a permutation of 0..%d"),
		    m->g->tensors[o->in[0]].rank - 1);
	else
		snprintf(buf, len, "%s", _("a positive integer"));
	return buf;
}

/* The attributes of o, by the rows of its kind (kinds.c). */
static int
mj_attrs(mj *m, sl_op *o, json_t *op, const jp_node *opp, const char *what)
{
	const sl_kind_info *ki = &sl_kinds[o->kind];
	const jp_node *ap, *p;
	json_t *a = mj_get(op, opp, "attrs", &ap), *v;
	const char *allowed[SL_MAX_ATTRS + 1];
	const char *kn = sl_op_kind_name(o->kind);
	int na = mj_kind_attrs(o->kind, allowed);
	char got[96], buf[64];

	for (const sl_attr *at = ki->attrs; at->name != NULL; at++)
		if (at->type == SL_ATTR_PROB)
			memcpy((char *)o + at->field, &at->absent, sizeof(double));
	if (a == NULL) {
		for (const sl_attr *at = ki->attrs; at->name != NULL; at++)
			if (at->required)
				return mj_fail(m, opp, _("%s: %s operators need "
				    "\"attrs\": {\"%s\": %s}"), what, kn, at->name,
				    at->type == SL_ATTR_PERM ? "[...]" : "N");
		return SL_OK;
	}
	if (!json_is_object(a))
		return mj_fail(m, ap, _("%s: \"attrs\" must be an object, got %s"),
		    what, mj_describe(a, got, sizeof got));
	for (int i = 0; i < ap->n; i++) {
		const char *all[SL_OP_KIND_COUNT * SL_MAX_ATTRS + 1];
		const jp_node *k = ap->kids[i];
		bool ok = k->key[0] == '_';
		char list[64], sug[96];
		int n_all;
		bool known;

		for (int j = 0; j < na && !ok; j++)
			ok = strcmp(allowed[j], k->key) == 0;
		if (ok)
			continue;
		known = mj_any_attr(k->key, all, &n_all) != NULL;
		if (known)
			return sl_error_set(m->err, SL_EINPUT, m->file, k->key_line,
			    k->key_col, _("%s: attribute \"%s\" does not apply to a %s "
			    "operator (%s%s)"), what, k->key, kn, na ? _("it takes ") :
			    _("it takes no attributes"), mj_join(allowed, na, list,
			    sizeof list));
		return sl_error_set(m->err, SL_EINPUT, m->file, k->key_line,
		    k->key_col, _("%s: unknown attribute \"%.64s\" (a %s operator "
		    "takes %s)%s"), what, k->key, kn, na ? mj_join(allowed, na, list,
		    sizeof list) : _("no attributes"), mj_suggest(k->key, all, n_all,
		    '"', sug, sizeof sug));
	}
	for (const sl_attr *at = ki->attrs; at->name != NULL; at++) {
		if ((v = mj_get(a, ap, at->name, &p)) == NULL) {
			if (at->required)
				return mj_fail(m, ap, _("%s: missing attribute \"%s\" "
				    "(%s)"), what, at->name,
				    mj_attr_expect(m, o, at, buf, sizeof buf));
			continue;
		}
		if (mj_attr(m, o, at, v, p, what))
			return SL_EINPUT;
		if (at->divides != NULL) {
			const sl_attr *d = ki->attrs;
			int x, y;

			while (d->name != NULL && strcmp(d->name, at->divides) != 0)
				d++;
			memcpy(&x, (char *)o + at->field, sizeof x);
			memcpy(&y, (char *)o + d->field, sizeof y);
			if (d->name != NULL && y % x != 0)
				return mj_fail(m, p, _("%s: %s %d must divide %s %d"),
				    what, at->name, x, d->name, y);
		}
	}
	return SL_OK;
}

static int
mj_op(mj *m, int i, json_t *op, const jp_node *opp)
{
	static const char *const keys[] = { "name", "kind", "inputs", "outputs",
	    "layer", "attrs", NULL };
	const char *kinds[SL_OP_KIND_COUNT + 1];
	const char *name = NULL, *ks = NULL, *layer = NULL;
	char what[128], got[96], list[256], sug[96];
	int in[SL_MAX_OP_TENSORS], out[SL_MAX_OP_TENSORS], n_in, n_out;
	int kind, prev, o;
	const sl_kind_info *ki;
	const jp_node *p;
	sl_error e2;

	snprintf(what, sizeof what, _("operator %d"), i);
	if (!json_is_object(op))
		return mj_fail(m, opp, _("%s: expected an object with \"name\", "
		    "\"kind\", \"inputs\" and \"outputs\", got %s"), what,
		    mj_describe(op, got, sizeof got));
	if (mj_string(m, op, opp, what, "name", true, _("an operator name"), &name))
		return SL_EINPUT;
	snprintf(what, sizeof what, _("operator '%.64s'"), name);
	if (mj_check_keys(m, opp, what, keys))
		return SL_EINPUT;
	if ((prev = sl_graph_find_op(m->g, name)) >= 0) {
		const jp_node *first = jp_member(jp_index(m->ops_p, prev), "name");
		return mj_fail(m, jp_member(opp, "name"), _("duplicate operator "
		    "'%.64s' (first defined at line %d, column %d)"), name,
		    first->line, first->col);
	}
	for (int k = 0; k < SL_OP_KIND_COUNT; k++)
		kinds[k] = sl_op_kind_name(k);
	kinds[SL_OP_KIND_COUNT] = NULL;
	if (mj_string(m, op, opp, what, "kind", true, _("an operator kind such as \"matmul\""), &ks))
		return SL_EINPUT;
	if ((kind = sl_op_kind_from_name(ks)) < 0)
		return mj_fail(m, jp_member(opp, "kind"), _("%s: unknown kind "
		    "\"%.32s\" (expected one of %s)%s"), what, ks,
		    mj_join(kinds, SL_OP_KIND_COUNT, list, sizeof list),
		    mj_suggest(ks, kinds, SL_OP_KIND_COUNT, '"', sug, sizeof sug));
	ki = &sl_kinds[kind];

	if (mj_tensor_list(m, op, opp, what, "inputs", in, &n_in))
		return SL_EINPUT;
	p = jp_member(opp, "inputs");
	if (n_in < ki->min_in || n_in > ki->max_in) {
		if (ki->min_in == ki->max_in)
			return mj_fail(m, p, _("%s: a %s operator takes %d input%s, "
			    "got %d"), what, ks, ki->min_in, ki->min_in == 1 ? "" : "s",
			    n_in);
		return mj_fail(m, p, _("%s: a %s operator takes %d to %d inputs, "
		    "got %d"), what, ks, ki->min_in, ki->max_in, n_in);
	}
	if (mj_tensor_list(m, op, opp, what, "outputs", out, &n_out))
		return SL_EINPUT;
	p = jp_member(opp, "outputs");
	if (n_out != ki->n_out)
		return mj_fail(m, p, _("%s: a %s operator has %d output%s, got %d"),
		    what, ks, ki->n_out, ki->n_out == 1 ? "" : "s", n_out);
	if (n_in + n_out > SL_MAX_OP_TENSORS)
		return mj_fail(m, opp, _("%s: too many tensors (at most %d)"), what,
		    SL_MAX_OP_TENSORS);
	for (int j = 0; j < n_out; j++) {
		const sl_tensor *t = &m->g->tensors[out[j]];
		const jp_node *tp = jp_index(p, j);

		if (t->role != SL_ROLE_ACTIVATION)
			return mj_fail(m, tp, _("%s: output '%.64s' is declared with "
			    "role \"%s\"; an operator can only write activations"),
			    what, t->name, sl_role_name(t->role));
		if (m->producer[out[j]] >= 0) {
			const sl_op *w = &m->g->ops[m->producer[out[j]]];
			return mj_fail(m, tp, _("%s: tensor '%.64s' is already written "
			    "by operator '%.64s' (line %d, column %d)"), what, t->name,
			    w->name, w->src_line, w->src_col);
		}
	}

	if (mj_string(m, op, opp, what, "layer", false, _("a layer name"), &layer))
		return SL_EINPUT;
	if (layer != NULL && m->g->n_layers > 0) {
		const sl_layer *last = &m->g->layers[m->g->n_layers - 1];
		bool cont = strcmp(last->name, layer) == 0 &&
		    last->first_op + last->n_ops == m->g->n_ops;

		for (int l = 0; l < m->g->n_layers && !cont; l++) {
			const sl_layer *L = &m->g->layers[l];
			const sl_op *mid;

			if (strcmp(L->name, layer) != 0)
				continue;
			mid = &m->g->ops[L->first_op + L->n_ops];
			return mj_fail(m, jp_member(opp, "layer"), _("%s: the "
			    "operators of layer '%.64s' must be listed together, but "
			    "operator '%.64s' (line %d) comes between them"), what,
			    layer, mid->name, mid->src_line);
		}
	}

	sl_error_clear(&e2);
	o = sl_graph_add_op(m->g, name, kind, n_in, in, n_out, out, layer, &e2);
	if (o < 0)
		return mj_fail(m, opp, "%s", e2.msg);
	m->g->ops[o].src_line = opp->line;
	m->g->ops[o].src_col = opp->col;
	for (int j = 0; j < n_out; j++)
		m->producer[out[j]] = o;
	return mj_attrs(m, &m->g->ops[o], op, opp, what);
}


/*
 * Attention without a "dropout" attribute drops its probabilities as the
 * model's dropout operators do (the largest p among them; none: 0).
 */
static void
mj_attention_dropout(sl_graph *g)
{
	double p = 0;

	for (int v = 0; v < g->n_ops; v++)
		if (g->ops[v].kind == SL_OP_DROPOUT && g->ops[v].p > p)
			p = g->ops[v].p;
	for (int v = 0; v < g->n_ops; v++)
		if (g->ops[v].kind == SL_OP_ATTENTION && g->ops[v].p < 0)
			g->ops[v].p = p;
}

static int
mj_explicit(mj *m, json_t *root)
{
	const jp_node *rp = jp_root(m->j.pos);
	json_t *tensors, *ops;
	char got[96];

	tensors = mj_get(root, rp, "tensors", &m->tensors_p);
	ops = mj_get(root, rp, "ops", &m->ops_p);
	if (tensors == NULL)
		return mj_fail(m, rp, _("missing \"tensors\" (expected \"tensors\" "
		    "and \"ops\" arrays, or a \"generator\" object)"));
	if (!json_is_array(tensors))
		return mj_fail(m, m->tensors_p, _("\"tensors\" must be an array of "
		    "tensor objects, got %s"), mj_describe(tensors, got, sizeof got));
	if (ops == NULL)
		return mj_fail(m, rp, _("missing \"ops\" (expected an array of "
		    "operator objects)"));
	if (!json_is_array(ops))
		return mj_fail(m, m->ops_p, _("\"ops\" must be an array of operator "
		    "objects, got %s"), mj_describe(ops, got, sizeof got));
	if (json_array_size(ops) == 0)
		return mj_fail(m, m->ops_p, _("\"ops\" is empty: a model needs at "
		    "least one operator"));

	for (size_t i = 0; i < json_array_size(tensors); i++)
		if (mj_tensor(m, (int)i, json_array_get(tensors, i),
		    jp_index(m->tensors_p, (int)i)))
			return SL_EINPUT;
	m->producer = sl_xmalloc((m->g->n_tensors + 1) * sizeof *m->producer);
	for (int i = 0; i < m->g->n_tensors; i++)
		m->producer[i] = -1;
	for (size_t i = 0; i < json_array_size(ops); i++)
		if (mj_op(m, (int)i, json_array_get(ops, i),
		    jp_index(m->ops_p, (int)i)))
			return SL_EINPUT;
	for (int i = 0; i < m->g->n_tensors; i++) {
		const sl_tensor *t = &m->g->tensors[i];
		if (t->role == SL_ROLE_ACTIVATION && m->producer[i] < 0)
			return mj_fail(m, jp_index(m->tensors_p, i), _("activation "
			    "'%.64s' is not written by any operator (declare data fed "
			    "to the model with \"role\": \"input\")"), t->name);
	}
	mj_attention_dropout(m->g);
	return sl_graph_validate(m->g, m->file, m->err);
}

/* ----------------------------------------------------------- generator form */

static int
mj_generator(mj *m, json_t *gen, const jp_node *gp, const char *name,
    const sl_model_opts *o)
{
	static const char *const fams[] = { "gpt", "bert", "llama", "moe", NULL };
	const char *keys[64];
	const char *what = _("generator");
	const char *fs = NULL, *field = NULL;
	char got[96], sug[96];
	sl_gen_config c;
	int fam, nk = 0;
	int64_t mb, dev, batch;
	const jp_node *p;
	sl_error e2;
	sl_graph *g;

	if (!json_is_object(gen))
		return mj_fail(m, gp, _("\"generator\" must be an object such as "
		    "{\"family\": \"gpt\", \"layers\": 24, ...}, got %s"),
		    mj_describe(gen, got, sizeof got));
	/* the keys: "family" and the generator's fields (gen.c) */
	keys[nk++] = "family";
	for (const sl_gen_field *f = sl_gen_fields; f->key != NULL &&
	    nk < (int)SL_ARRAY_LEN(keys) - 1; f++)
		keys[nk++] = f->key;
	keys[nk] = NULL;
	if (mj_check_keys(m, gp, what, keys))
		return SL_EINPUT;
	if (mj_string(m, gen, gp, what, "family", true,
	    _("one of gpt, bert, llama, moe"), &fs))
		return SL_EINPUT;
	if ((fam = sl_family_from_name(fs)) < 0)
		return mj_fail(m, jp_member(gp, "family"), _("generator: unknown "
		    "family \"%.32s\" (expected one of gpt, bert, llama, moe)%s"), fs,
		    mj_suggest(fs, fams, 4, '"', sug, sizeof sug));
	sl_gen_family_defaults(fam, &c);
	if (fam != SL_FAM_LLAMA && fam != SL_FAM_MOE)
		c.kv_heads = 0;
	c.ffn = 0;
	for (const sl_gen_field *f = sl_gen_fields; f->key != NULL; f++) {
		json_t *v = mj_get(gen, gp, f->key, &p);
		char text[64];

		if (v == NULL)
			continue;
		switch (f->type) {
		case SL_GEN_BOOL:
		case SL_GEN_TIE:
			if (!json_is_boolean(v))
				return mj_fail(m, p, _("generator: \"%s\" must be true "
				    "or false, got %s"), f->key,
				    mj_describe(v, got, sizeof got));
			snprintf(text, sizeof text, "%s", json_is_true(v) ? "true" : "false");
			break;
		case SL_GEN_REAL:
			if (!json_is_number(v) || json_number_value(v) < 0)
				return mj_fail(m, p, _("generator: \"%s\" must be a number "
				    "of at least 0, got %s"), f->key,
				    mj_describe(v, got, sizeof got));
			snprintf(text, sizeof text, "%.17g", json_number_value(v));
			break;
		default:
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    (json_integer_value(v) < 1 && f->off ==
			    offsetof(sl_gen_config, layers)))
				return mj_fail(m, p, _("generator: \"%s\" must be a positive "
				    "integer, got %s"), f->key, mj_describe(v, got, sizeof got));
			if (json_integer_value(v) > f->max)
				return mj_fail(m, p, _("generator: \"%s\" is %lld; at most "
				    "%lld is supported"), f->key,
				    (long long)json_integer_value(v), (long long)f->max);
			snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
			break;
		}
		sl_error_clear(&e2);
		if (sl_gen_field_set(&c, f, text, &e2) != SL_OK)
			return mj_fail(m, p, "generator: %s", e2.msg);
	}
	if (jp_member(gp, "heads") != NULL && jp_member(gp, "kv_heads") == NULL &&
	    (fam == SL_FAM_LLAMA || fam == SL_FAM_MOE))
		c.kv_heads = c.heads;	/* plain multi-head unless told otherwise */
	mb = o != NULL && o->micro_batch > 0 ? o->micro_batch : 1;
	dev = o != NULL && o->devices > 0 ? o->devices : 1;
	if (__builtin_mul_overflow(mb, dev, &batch) || batch > ((int64_t)1 << 31))
		return sl_error_set(m->err, SL_EINPUT, m->file, gp->line, gp->col,
		    _("batch %lld x %lld devices is too large"), (long long)mb,
		    (long long)dev);
	c.batch = batch;
	if (o != NULL && o->seq > 0)
		c.seq = o->seq;
	snprintf(c.name, sizeof c.name, "%.63s", name);
	sl_error_clear(&e2);
	/* the rules of the sizes are the generator's: point at the key */
	if (sl_gen_check(&c, &field, &e2) != SL_OK) {
		p = field != NULL ? jp_member(gp, field) : NULL;
		if (p == NULL && field != NULL && strcmp(field, "kv_heads") == 0)
			p = jp_member(gp, "heads");
		if (p == NULL && field != NULL && strcmp(field, "heads") == 0)
			p = jp_member(gp, "hidden");
		return mj_fail(m, p ? p : gp, _("generator: %s"), e2.msg);
	}
	if ((g = sl_gen(&c, &e2)) == NULL)
		return mj_fail(m, gp, "%s", e2.msg);
	sl_graph_free(m->g);
	m->g = g;
	return SL_OK;
}

/* ------------------------------------------------------------------ loading */

/* Model name from a file name: base name without ".json". */
static void
mj_name_from_file(const char *file, char *buf, size_t len)
{
	const char *b = strrchr(file, '/');
	size_t n;

	b = b ? b + 1 : file;
	n = strlen(b);
	if (n > 5 && strcmp(b + n - 5, ".json") == 0)
		n -= 5;
	if (n == 0 || n >= len) {
		snprintf(buf, len, "model");
		return;
	}
	memcpy(buf, b, n);
	buf[n] = '\0';
}

static sl_graph *
mj_parse(const char *text, size_t len, const char *file,
    const sl_model_opts *o, sl_error *err)
{
	static const char *const keys[] = { "format", "version", "name",
	    "description", "generator", "tensors", "ops", NULL };
	mj m;
	json_t *root, *v;
	const jp_node *rp, *p;
	const char *name = NULL;
	char fname[128], got[96];
	bool blank = true;

	memset(&m, 0, sizeof m);
	m.file = file != NULL ? file : "<input>";
	m.err = err;
	for (size_t i = 0; i < len && blank; i++)
		blank = text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
		    text[i] == '\r';
	if (blank) {
		sl_error_set(err, SL_EINPUT, m.file, 1, 1, _("the file is %s; "
		    "expected a shardlab model: a JSON object with \"format\": "
		    "\"%s\""), len == 0 ? _("empty") : _("only white space"),
		    MJ_FORMAT);
		return NULL;
	}
	if (sl_json_read(&m.j, m.file, text, len, 0, SL_EINPUT, err) != SL_OK)
		return NULL;
	root = m.j.root;
	rp = jp_root(m.j.pos);
	if (!json_is_object(root)) {
		mj_fail(&m, rp, _("expected a JSON object with \"format\": \"%s\", "
		    "got %s"), MJ_FORMAT, mj_describe(root, got, sizeof got));
		goto fail;
	}
	v = mj_get(root, rp, "format", &p);
	if (v == NULL) {
		mj_fail(&m, rp, _("missing \"format\": \"%s\" (is this a shardlab "
		    "model file?)"), MJ_FORMAT);
		goto fail;
	}
	if (!json_is_string(v) || strcmp(json_string_value(v), MJ_FORMAT) != 0) {
		mj_fail(&m, p, _("\"format\" must be \"%s\", got %s%s"), MJ_FORMAT,
		    mj_describe(v, got, sizeof got), json_is_string(v) &&
		    strcmp(json_string_value(v), "shardlab-plan") == 0 ?
		    _(" (this is a plan, not a model)") : "");
		goto fail;
	}
	v = mj_get(root, rp, "version", &p);
	if (v == NULL) {
		mj_fail(&m, rp, _("missing \"version\": %d"), MJ_VERSION);
		goto fail;
	}
	if (!json_is_integer(v)) {
		mj_fail(&m, p, _("\"version\" must be the integer %d, got %s"),
		    MJ_VERSION, mj_describe(v, got, sizeof got));
		goto fail;
	}
	if (json_integer_value(v) != MJ_VERSION) {
		mj_fail(&m, p, _("unsupported version %lld: this shardlab reads "
		    "version %d"), (long long)json_integer_value(v), MJ_VERSION);
		goto fail;
	}
	if (mj_check_keys(&m, rp, _("model"), keys))
		goto fail;
	if (mj_string(&m, root, rp, _("model"), "name", false, _("a name"), &name))
		goto fail;
	{
		const char *desc = NULL;
		if (mj_string(&m, root, rp, _("model"), "description", false,
		    _("a string"), &desc))
			goto fail;
	}
	if (name == NULL) {
		mj_name_from_file(m.file, fname, sizeof fname);
		name = fname;
	}
	m.g = sl_graph_new(name);
	v = mj_get(root, rp, "generator", &p);
	if (v != NULL) {
		const jp_node *q = jp_member(rp, "tensors");
		if (q == NULL)
			q = jp_member(rp, "ops");
		if (q != NULL) {
			sl_error_set(err, SL_EINPUT, m.file, q->key_line, q->key_col,
			    _("a model has either a \"generator\" or \"tensors\" and "
			    "\"ops\", not both"));
			goto fail;
		}
		if (mj_generator(&m, v, p, name, o))
			goto fail;
	} else if (mj_explicit(&m, root))
		goto fail;

	free(m.g->source);
	m.g->source = sl_xstrdup(m.file);
	sl_sha256_hex(text, len, m.g->sha256);
	sl_json_free(&m.j);
	free(m.producer);
	return m.g;
fail:
	if (err != NULL && err->code == SL_OK)
		sl_error_set(err, SL_EINPUT, m.file, 0, 0, _("invalid model"));
	sl_json_free(&m.j);
	free(m.producer);
	sl_graph_free(m.g);
	return NULL;
}

sl_graph *
sl_model_parse_json(const char *text, size_t len, const char *file,
    sl_error *err)
{
	return mj_parse(text, len, file, NULL, err);
}

static sl_graph *
mj_load(const char *path, const sl_model_opts *o, sl_error *err)
{
	size_t len;
	char *text = sl_read_file(path, &len, err);
	sl_graph *g;

	if (text == NULL)
		return NULL;
	g = mj_parse(text, len, path, o, err);
	free(text);
	return g;
}

sl_graph *
sl_model_load_json(const char *path, sl_error *err)
{
	return mj_load(path, NULL, err);
}

char *
sl_model_path(const char *arg)
{
	struct stat st;
	char *path;

	if (arg == NULL || *arg == '\0')
		return NULL;
	/* a file of that name first, then a bundled model */
	if (stat(arg, &st) == 0)
		return sl_xstrdup(arg);
	for (int n = 0; mj_bundled[n] != NULL; n++)
		if (strcmp(mj_bundled[n], arg) == 0) {
			path = sl_xmalloc(strlen(sl_datadir()) + strlen(arg) + 16);
			sprintf(path, "%s/models/%s.json", sl_datadir(), arg);
			return path;
		}
	return NULL;
}

sl_graph *
sl_model_open(const char *arg, const sl_model_opts *o, sl_error *err)
{
	struct stat st;
	char list[256], *path;
	sl_graph *g;
	int n = 0;

	if (arg == NULL || *arg == '\0') {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0, _("no model named"));
		return NULL;
	}
	if (stat(arg, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			sl_error_set(err, SL_EINPUT, arg, 0, 0,
			    _("is a directory, not a model file"));
			return NULL;
		}
		return mj_load(arg, o, err);
	}
	if ((path = sl_model_path(arg)) != NULL) {
		g = mj_load(path, o, err);
		free(path);
		return g;
	}
	if (strchr(arg, '/') != NULL || strstr(arg, ".json") != NULL) {
		sl_error_set(err, SL_EINPUT, arg, 0, 0, _("cannot open: %s"),
		    strerror(ENOENT));
		return NULL;
	}
	for (n = 0; mj_bundled[n] != NULL; n++)
		;
	sl_error_set(err, SL_EINPUT, NULL, 0, 0, _("unknown model '%s': not a "
	    "file and not a bundled model (bundled: %s)"), sl_esc(arg),
	    mj_join(mj_bundled, n, list, sizeof list));
	return NULL;
}

/* ------------------------------------------------------------------- saving */

/*
 * The attributes of o by the rows of its kind: probabilities and
 * permutations always, integers and booleans when not 0 or false.  NULL
 * when there are none.
 */
static json_t *
mj_attrs_json(const sl_graph *g, const sl_op *o)
{
	json_t *attrs = json_object();

	for (const sl_attr *at = sl_kinds[o->kind].attrs; at->name != NULL; at++) {
		const char *field = (const char *)o + at->field;
		int x = 0;
		bool t = false;
		double p;
		json_t *perm;

		switch (at->type) {
		case SL_ATTR_COUNT_INT:
			memcpy(&x, field, sizeof x);
			if (x != 0)
				json_object_set_new(attrs, at->name, json_integer(x));
			break;
		case SL_ATTR_BOOL:
			memcpy(&t, field, sizeof t);
			if (t)
				json_object_set_new(attrs, at->name, json_true());
			break;
		case SL_ATTR_PROB:
			memcpy(&p, field, sizeof p);
			json_object_set_new(attrs, at->name, sl_json_real(p));
			break;
		case SL_ATTR_REAL:
			memcpy(&p, field, sizeof p);
			if (p > 0)
				json_object_set_new(attrs, at->name, sl_json_real(p));
			break;
		case SL_ATTR_PERM:
			perm = json_array();
			for (int d = 0; d < g->tensors[o->in[0]].rank; d++)
				json_array_append_new(perm, json_integer(
				    ((const int *)(const void *)field)[d]));
			json_object_set_new(attrs, at->name, perm);
			break;
		default:
			break;
		}
	}
	if (json_object_size(attrs) == 0) {
		json_decref(attrs);
		return NULL;
	}
	return attrs;
}

static json_t *
mj_tree(const sl_graph *g)
{
	json_t *tensors = json_array(), *ops = json_array();

	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		json_t *shape = json_array();

		for (int d = 0; d < t->rank; d++)
			json_array_append_new(shape, json_integer(t->dims[d]));
		json_array_append_new(tensors, json_pack("{s:o, s:o, s:s, s:s}",
		    "name", sl_json_str(t->name), "shape", shape,
		    "dtype", sl_dtype_name(t->dtype), "role", sl_role_name(t->role)));
	}
	for (int i = 0; i < g->n_ops; i++) {
		const sl_op *o = &g->ops[i];
		json_t *in = json_array(), *out = json_array(), *op, *attrs;

		for (int j = 0; j < o->n_in; j++)
			json_array_append_new(in, sl_json_str(g->tensors[o->in[j]].name));
		for (int j = 0; j < o->n_out; j++)
			json_array_append_new(out,
			    sl_json_str(g->tensors[o->out[j]].name));
		op = json_pack("{s:o, s:s, s:o, s:o}", "name", sl_json_str(o->name),
		    "kind", sl_op_kind_name(o->kind), "inputs", in, "outputs", out);
		if (op != NULL && o->layer >= 0)
			json_object_set_new(op, "layer",
			    sl_json_str(g->layers[o->layer].name));
		if (op != NULL && (attrs = mj_attrs_json(g, o)) != NULL)
			json_object_set_new(op, "attrs", attrs);
		json_array_append_new(ops, op);
	}
	return json_pack("{s:s, s:i, s:o, s:o, s:o}", "format", MJ_FORMAT,
	    "version", 1, "name", sl_json_str(g->name), "tensors", tensors,
	    "ops", ops);
}

int
sl_model_save_json(const sl_graph *g, const char *path, sl_error *err)
{
	return sl_json_write(mj_tree(g), path, _("cannot write the model"), err);
}
