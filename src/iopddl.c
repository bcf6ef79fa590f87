/*
 * iopddl.c: problems of the ASPLOS/EuroSys 2025 IOPDDL contest (google/iopddl),
 * plain or gzip JSON, read into an sl_problem and written back in the same
 * format.  Node i is "n<i>", its strategy s "s<s>".  Edges given more than
 * once (in either direction) are merged into one edge whose costs are the sum.
 * Entries that are not allowed are written with the contest's cost for an
 * impossible choice (10^18), so an exported problem keeps its optimum in any
 * reader.
 */
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#define IOPDDL_IMPOSSIBLE 1000000000000000000LL

static bool
iopddl_is_gz(const char *path)
{
	unsigned char m[2];
	int fd = sl_open_input(path, NULL);
	bool gz = false;

	if (fd < 0)
		return false;
	if (read(fd, m, 2) == 2 && m[0] == 0x1f && m[1] == 0x8b)
		gz = true;
	close(fd);
	return gz;
}

/* An int64 from an integer (or an integral real that fits). */
static bool
iopddl_int(const json_t *j, int64_t *out)
{
	if (json_is_integer(j)) {
		*out = (int64_t)json_integer_value(j);
		return true;
	}
	if (json_is_real(j)) {
		double d = json_real_value(j);
		if (d >= -9.2e18 && d <= 9.2e18 && d == (double)(int64_t)d) {
			*out = (int64_t)d;
			return true;
		}
	}
	return false;
}

struct iopddl_ctx {
	const char *path;
	sl_error *err;
	const sl_json *j;	/* the values, and where each one is */
};

/* Error at the value of path ("problem.nodes.usages[3]"), named by msg. */
#define iopddl_bad(c, at, ...) sl_json_fail((c)->j, (c)->err, (at), __VA_ARGS__)

/* "what[i]" or "what[i][k]" (k < 0: none), the path of an element. */
static const char *
iopddl_at(char *buf, size_t len, const char *what, size_t i, long long k)
{
	if (k < 0)
		snprintf(buf, len, "%s[%zu]", what, i);
	else
		snprintf(buf, len, "%s[%zu][%lld]", what, i, k);
	return buf;
}

/* Reads an array of n int64 arrays; lens[i] filled (or checked when want). */
static int
iopddl_matrix(struct iopddl_ctx *c, const json_t *a, const char *what,
    size_t n, const size_t *want, int64_t lo, int64_t hi, int64_t ***out,
    size_t **lens)
{
	int64_t **rows;
	char at[128];

	if (!json_is_array(a))
		return iopddl_bad(c, what, _("%s: expected an array"), what);
	if (json_array_size(a) != n)
		return iopddl_bad(c, what, _("%s: expected %zu entries, found %zu"),
		    what, n, json_array_size(a));
	rows = sl_xcalloc(n + 1, sizeof *rows);
	if (lens != NULL)
		*lens = sl_xcalloc(n + 1, sizeof **lens);
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(a, i);
		size_t len;
		if (!json_is_array(r)) {
			iopddl_bad(c, iopddl_at(at, sizeof at, what, i, -1),
			    _("%s[%zu]: expected an array of integers"), what, i);
			goto fail;
		}
		len = json_array_size(r);
		if (want != NULL && len != want[i]) {
			iopddl_bad(c, iopddl_at(at, sizeof at, what, i, -1),
			    _("%s[%zu]: expected %zu values, found %zu"),
			    what, i, want[i], len);
			goto fail;
		}
		rows[i] = sl_xmalloc((len + 1) * sizeof **rows);
		for (size_t j = 0; j < len; j++) {
			if (!iopddl_int(json_array_get(r, j), &rows[i][j])) {
				iopddl_bad(c, iopddl_at(at, sizeof at, what, i,
				    (long long)j), _("%s[%zu][%zu]: expected an "
				    "integer"), what, i, j);
				goto fail;
			}
			if (rows[i][j] < lo || rows[i][j] > hi) {
				iopddl_bad(c, iopddl_at(at, sizeof at, what, i,
				    (long long)j), _("%s[%zu][%zu]: %lld is out of range: "
				    "expected %lld to %lld"), what, i, j,
				    (long long)rows[i][j], (long long)lo,
				    (long long)hi);
				goto fail;
			}
		}
		if (lens != NULL)
			(*lens)[i] = len;
	}
	*out = rows;
	return SL_OK;
fail:
	for (size_t i = 0; i < n; i++)
		free(rows[i]);
	free(rows);
	if (lens != NULL) {
		free(*lens);
		*lens = NULL;
	}
	return c->err != NULL ? c->err->code : SL_EINPUT;
}

static void
iopddl_free_rows(int64_t **rows, size_t n)
{
	if (rows == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(rows[i]);
	free(rows);
}

/* Largest entry of a row below the contest's mark for an impossible choice. */
static int64_t
iopddl_row_max(const int64_t *row, size_t len, size_t *at)
{
	int64_t best = 0;

	*at = 0;
	for (size_t j = 0; j < len; j++)
		if (row[j] < IOPDDL_IMPOSSIBLE && row[j] > best) {
			best = row[j];
			*at = j;
		}
	return best;
}

/*
 * Every plan's objective, and the memory live at any time, must stay far from
 * int64's range, or solvers would disagree through wrapped or saturated sums:
 * the costliest plan without impossible choices (10^18) may cost at most
 * 10^18, and the usages of all nodes together at most 10^18.  The message
 * points at the row where the running sum goes past.
 */
static int
iopddl_check_sums(struct iopddl_ctx *c, int64_t **cost, const int *k, size_t n,
    int64_t **ec, const size_t *elen, size_t m, int64_t **usage)
{
	int64_t sum = 0, used = 0;
	size_t at;
	char p[128];

	for (size_t v = 0; v < n; v++) {
		int64_t x = iopddl_row_max(cost[v], (size_t)k[v], &at);
		if (__builtin_add_overflow(sum, x, &sum) || sum > IOPDDL_IMPOSSIBLE)
			return iopddl_bad(c, iopddl_at(p, sizeof p,
			    "problem.nodes.costs", v, (long long)at),
			    _("problem.nodes.costs[%zu][%zu]: the "
			    "costs add up to more than 10^18: a plan's cost could "
			    "overflow"), v, at);
	}
	for (size_t e = 0; ec != NULL && e < m; e++) {
		int64_t x = iopddl_row_max(ec[e], elen[e], &at);
		if (__builtin_add_overflow(sum, x, &sum) || sum > IOPDDL_IMPOSSIBLE)
			return iopddl_bad(c, iopddl_at(p, sizeof p,
			    "problem.edges.costs", e, (long long)at),
			    _("problem.edges.costs[%zu][%zu]: the "
			    "costs add up to more than 10^18: a plan's cost could "
			    "overflow"), e, at);
	}
	for (size_t v = 0; usage != NULL && v < n; v++) {
		int64_t x = iopddl_row_max(usage[v], (size_t)k[v], &at);
		if (__builtin_add_overflow(used, x, &used) || used > IOPDDL_IMPOSSIBLE)
			return iopddl_bad(c, iopddl_at(p, sizeof p,
			    "problem.nodes.usages", v, (long long)at),
			    _("problem.nodes.usages[%zu][%zu]: the "
			    "usages add up to more than 10^18"), v, at);
	}
	return SL_OK;
}

/*
 * A problem as read, before it is built: rows of the file, checked.  k[i]
 * is klen[i] as an int; want[e] the entries of edge e's cost row; lim the
 * usage limit's value (NULL or null when none).
 */
struct iopddl_raw {
	size_t n, m;
	int64_t **cost, **usage, **iv, **ep, **ec;
	size_t *klen, *want;
	int *k;
	const json_t *lim;
};

static void
iopddl_raw_free(struct iopddl_raw *r)
{
	iopddl_free_rows(r->cost, r->n);
	iopddl_free_rows(r->usage, r->n);
	iopddl_free_rows(r->iv, r->n);
	iopddl_free_rows(r->ep, r->m);
	iopddl_free_rows(r->ec, r->m);
	free(r->klen);
	free(r->k);
	free(r->want);
}

/* An array of n twos: the length of every interval and edge's ends. */
static size_t *
iopddl_twos(size_t n)
{
	size_t *two = sl_xmalloc((n + 1) * sizeof *two);

	for (size_t i = 0; i < n; i++)
		two[i] = 2;
	return two;
}

/* problem.nodes (costs, intervals, usages) and problem.usage_limit. */
static int
iopddl_read_nodes(struct iopddl_ctx *c, const json_t *pr, struct iopddl_raw *r)
{
	const json_t *nodes, *jn, *lim;
	size_t n, *two;
	int rc;

	nodes = json_object_get(pr, "nodes");
	if (!json_is_object(nodes))
		return iopddl_bad(c, "problem.nodes", "%s",
		    _("problem.nodes: expected an object"));
	jn = json_object_get(nodes, "costs");
	if (!json_is_array(jn))
		return iopddl_bad(c, "problem.nodes.costs", "%s",
		    _("problem.nodes.costs: expected an array"));
	n = json_array_size(jn);
	if (n > 100000000)
		return iopddl_bad(c, "problem.nodes.costs", "%s",
		    _("problem.nodes.costs: too many nodes"));
	if ((rc = iopddl_matrix(c, jn, "problem.nodes.costs", n, NULL, 0,
	    IOPDDL_IMPOSSIBLE, &r->cost, &r->klen)) != SL_OK)
		return rc;
	r->n = n;
	r->k = sl_xmalloc((n + 1) * sizeof *r->k);
	for (size_t i = 0; i < n; i++) {
		if (r->klen[i] == 0 || r->klen[i] > 1000000) {
			char at[64];
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.nodes.costs", i, -1), _("problem.nodes."
			    "costs[%zu]: a node needs "
			    "between 1 and 1000000 strategies, found %zu"),
			    i, r->klen[i]);
		}
		r->k[i] = (int)r->klen[i];
	}
	two = iopddl_twos(n);
	rc = json_object_get(nodes, "intervals") == NULL ? SL_OK :
	    iopddl_matrix(c, json_object_get(nodes, "intervals"),
	    "problem.nodes.intervals", n, two, 0, IOPDDL_IMPOSSIBLE, &r->iv, NULL);
	free(two);
	if (rc != SL_OK)
		return rc;
	if (json_object_get(nodes, "usages") != NULL &&
	    (rc = iopddl_matrix(c, json_object_get(nodes, "usages"),
	    "problem.nodes.usages", n, r->klen, 0, IOPDDL_IMPOSSIBLE, &r->usage,
	    NULL)) != SL_OK)
		return rc;
	for (size_t i = 0; r->iv != NULL && i < n; i++)
		if (r->iv[i][0] > r->iv[i][1]) {
			char at[64];
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.nodes.intervals", i, -1), _("problem.nodes."
			    "intervals[%zu]: lower bound "
			    "%lld above upper bound %lld"), i,
			    (long long)r->iv[i][0], (long long)r->iv[i][1]);
		}
	r->lim = lim = json_object_get(pr, "usage_limit");
	if (lim != NULL && !json_is_null(lim)) {
		int64_t l;
		if (!iopddl_int(lim, &l) || l < 0)
			return iopddl_bad(c, "problem.usage_limit", "%s",
			    _("problem.usage_limit: expected a "
			    "non-negative integer"));
		if (r->iv == NULL || r->usage == NULL)
			return iopddl_bad(c, "problem.usage_limit", "%s",
			    _("problem.usage_limit needs "
			    "problem.nodes.intervals and problem.nodes.usages"));
	}
	return SL_OK;
}

/* problem.edges (nodes, costs), when there are any. */
static int
iopddl_read_edges(struct iopddl_ctx *c, const json_t *pr, struct iopddl_raw *r)
{
	const json_t *edges = json_object_get(pr, "edges"), *en;
	size_t m, n = r->n, *two;
	int rc;

	if (edges == NULL)
		return SL_OK;
	if (!json_is_object(edges))
		return iopddl_bad(c, "problem.edges", "%s",
		    _("problem.edges: expected an object"));
	en = json_object_get(edges, "nodes");
	if (!json_is_array(en))
		return iopddl_bad(c, "problem.edges.nodes", "%s",
		    _("problem.edges.nodes: expected an array"));
	m = json_array_size(en);
	two = iopddl_twos(m);
	rc = iopddl_matrix(c, en, "problem.edges.nodes", m, two,
	    INT64_MIN, INT64_MAX, &r->ep, NULL);
	free(two);
	if (rc != SL_OK)
		return rc;
	r->m = m;
	r->want = sl_xmalloc((m + 1) * sizeof *r->want);
	for (size_t e = 0; e < m; e++) {
		int64_t a = r->ep[e][0], b = r->ep[e][1];
		if (a < 0 || (size_t)a >= n || b < 0 || (size_t)b >= n) {
			char at[64];
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.edges.nodes", e, -1), _("problem.edges."
			    "nodes[%zu]: node "
			    "index out of range 0..%zu in [%lld, %lld]"),
			    e, n - 1, (long long)a, (long long)b);
		}
		if (a == b) {
			char at[64];
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.edges.nodes", e, -1), _("problem.edges."
			    "nodes[%zu]: an edge "
			    "from node %lld to itself"), e, (long long)a);
		}
		r->want[e] = (size_t)r->k[a] * (size_t)r->k[b];
	}
	return iopddl_matrix(c, json_object_get(edges, "costs"),
	    "problem.edges.costs", m, r->want, 0, IOPDDL_IMPOSSIBLE, &r->ec, NULL);
}

/*
 * Repeated edges (either direction) merged into the first of them: the
 * distinct edges in edge[], and map[e] the one file edge e adds to.
 * Returns how many are distinct.
 */
static int
iopddl_merge_edges(int64_t **ep, size_t m, int (*edge)[2], int *map)
{
	/* Open-addressing hash on the unordered pair. */
	size_t cap = 16;
	int *slot, me = 0;

	while (cap < 2 * m + 2)
		cap *= 2;
	slot = sl_xmalloc(cap * sizeof *slot);
	for (size_t i = 0; i < cap; i++)
		slot[i] = -1;
	for (size_t e = 0; e < m; e++) {
		int64_t a = ep[e][0] < ep[e][1] ? ep[e][0] : ep[e][1];
		int64_t b = ep[e][0] < ep[e][1] ? ep[e][1] : ep[e][0];
		size_t h = ((size_t)a * 1000003u + (size_t)b) & (cap - 1);
		for (;;) {
			int q = slot[h];
			if (q < 0) {
				slot[h] = me;
				edge[me][0] = (int)ep[e][0];
				edge[me][1] = (int)ep[e][1];
				map[e] = me++;
				break;
			}
			if ((edge[q][0] == a && edge[q][1] == b) ||
			    (edge[q][0] == b && edge[q][1] == a)) {
				map[e] = q;
				break;
			}
			h = (h + 1) & (cap - 1);
		}
	}
	free(slot);
	return me;
}

/* The problem of what was read (its usages taken over); name from pr. */
static sl_problem *
iopddl_build(const json_t *pr, struct iopddl_raw *r)
{
	size_t n = r->n, m = r->m;
	const int *k = r->k;
	int (*edge)[2] = sl_xmalloc((m + 1) * sizeof *edge);
	int *map = sl_xmalloc((m + 1) * sizeof *map), me;
	sl_problem *p;

	me = iopddl_merge_edges(r->ep, m, edge, map);
	p = sl_problem_new((int)n, k, me, (const int (*)[2])edge);
	for (size_t v = 0; v < n; v++)
		memcpy(p->cost[v], r->cost[v], (size_t)k[v] * sizeof **r->cost);
	for (size_t e = 0; e < m; e++) {
		int q = map[e], u = p->edge[q][0], v = p->edge[q][1];
		bool flip = r->ep[e][0] != u;
		for (int s = 0; s < k[u]; s++)
			for (int t = 0; t < k[v]; t++) {
				size_t src = flip ? (size_t)t * k[u] + s :
				    (size_t)s * k[v] + t;
				int64_t *dst = &p->ecost[q][(size_t)s * k[v] + t];
				*dst = sl_add_sat(*dst, r->ec[e][src]);
			}
	}
	free(edge);
	free(map);
	if (r->iv != NULL) {
		p->interval = sl_xmalloc((n + 1) * sizeof *p->interval);
		for (size_t v = 0; v < n; v++) {
			p->interval[v][0] = r->iv[v][0];
			p->interval[v][1] = r->iv[v][1];
		}
	}
	if (r->usage != NULL) {
		p->usage = r->usage;
		r->usage = NULL;
	}
	if (r->lim != NULL && !json_is_null(r->lim))
		iopddl_int(r->lim, &p->usage_limit);
	{
		const json_t *nm = json_object_get(pr, "name");
		p->name = sl_xstrdup(json_is_string(nm) ? json_string_value(nm) :
		    "iopddl");
	}
	p->node_name = sl_xcalloc(n + 1, sizeof *p->node_name);
	p->strat_name = sl_xcalloc(n + 1, sizeof *p->strat_name);
	for (size_t v = 0; v < n; v++) {
		char buf[32];
		snprintf(buf, sizeof buf, "n%zu", v);
		p->node_name[v] = sl_xstrdup(buf);
		p->strat_name[v] = sl_xcalloc((size_t)k[v], sizeof **p->strat_name);
		for (int s = 0; s < k[v]; s++) {
			snprintf(buf, sizeof buf, "s%d", s);
			p->strat_name[v][s] = sl_xstrdup(buf);
		}
	}
	return p;
}

static sl_problem *
iopddl_from_json(struct iopddl_ctx *c, const json_t *root)
{
	const json_t *pr;
	struct iopddl_raw r;
	sl_problem *p = NULL;

	if (!json_is_object(root) ||
	    !json_is_object(pr = json_object_get(root, "problem"))) {
		iopddl_bad(c, "", "%s",
		    _("expected an object with a \"problem\" object"));
		return NULL;
	}
	memset(&r, 0, sizeof r);
	if (iopddl_read_nodes(c, pr, &r) == SL_OK &&
	    iopddl_read_edges(c, pr, &r) == SL_OK &&
	    iopddl_check_sums(c, r.cost, r.k, r.n, r.ec, r.want, r.m,
	    r.usage) == SL_OK)
		p = iopddl_build(pr, &r);
	iopddl_raw_free(&r);
	return p;
}

sl_problem *
sl_iopddl_load(const char *path, sl_error *err)
{
	sl_json j;
	struct iopddl_ctx c = { path, err, &j };
	size_t len;
	char *text;
	sl_problem *p = NULL;

	text = sl_read_file(path, &len, iopddl_is_gz(path), err);
	if (text == NULL)
		return NULL;
	/* contest problems run to gigabytes: positions only for an error */
	if (sl_json_read(&j, path, text, len, SL_JSON_LAZY | SL_JSON_DUPLICATES,
	    SL_EINPUT, err) == SL_OK) {
		p = iopddl_from_json(&c, j.root);
		sl_json_free(&j);
	}
	free(text);
	return p;
}

/* Skips whitespace; returns the next non-space character or NUL. */
static const char *
iopddl_skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++;
	return s;
}

bool
sl_iopddl_is_problem(const char *path)
{
	char head[4096];
	const char *s, *end;
	bool gz = iopddl_is_gz(path), yes = false;
	int got;
	gzFile f;
	int fd;

	/* gzread reads plain files as they are, too. */
	if ((fd = sl_open_input(path, NULL)) < 0)
		return false;
	if ((f = gzdopen(fd, "rb")) == NULL) {
		close(fd);
		return false;
	}
	got = gzread(f, head, sizeof head);
	gzclose(f);
	if (got <= 0)
		return false;
	s = head;
	end = head + got;
	s = iopddl_skip_ws(s, end);
	if (s == end || *s != '{')
		return false;
	s = iopddl_skip_ws(s + 1, end);
	if ((size_t)(end - s) >= 9 && memcmp(s, "\"problem\"", 9) == 0)
		return true;
	/* "problem" is not the first key but comes early: parse to be sure. */
	if (memmem(head, (size_t)got, "\"problem\"", 9) != NULL) {
		size_t len;
		char *text = sl_read_file(path, &len, gz, NULL);
		sl_json j;
		if (text == NULL)
			return false;
		if (sl_json_read(&j, path, text, len, SL_JSON_LAZY |
		    SL_JSON_DUPLICATES, SL_EINPUT, NULL) == SL_OK)
			yes = json_is_object(j.root) &&
			    json_is_object(json_object_get(j.root, "problem"));
		sl_json_free(&j);
		free(text);
	}
	return yes;
}

/* ----------------------------------------------------------------- save */

static void
iopddl_row(FILE *fp, const int64_t *v, size_t n, const uint8_t *allowed)
{
	fputc('[', fp);
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "%s%lld", i ? ", " : "", (long long)
		    (allowed != NULL && !allowed[i] ? IOPDDL_IMPOSSIBLE : v[i]));
	fputc(']', fp);
}

/*
 * The one JSON file not built as a tree and written by sl_json_write
 * (json.c): a problem of 60,000 nodes and their cost rows is streamed in
 * the contest's own layout (a node per line), where a jansson tree of it
 * would take several times the problem's memory.  tests/one_place.sh
 * allows this function alone to print JSON itself.
 */
static void
iopddl_write(const sl_problem *p, FILE *fp)
{
	fputs("{\"problem\": {\n  \"name\": ", fp);
	if (sl_json_put_string(fp, p->name != NULL ? p->name : "shardlab") !=
	    SL_OK)
		fputs("\"shardlab\"", fp);
	fputs(",\n  \"nodes\": {\n    \"intervals\": [", fp);
	for (int v = 0; v < p->n; v++)
		fprintf(fp, "%s[%lld, %lld]", v ? ", " : "",
		    (long long)(p->interval ? p->interval[v][0] : 0),
		    (long long)(p->interval ? p->interval[v][1] : 0));
	fputs("],\n    \"costs\": [", fp);
	for (int v = 0; v < p->n; v++) {
		fputs(v ? ",\n      " : "\n      ", fp);
		iopddl_row(fp, p->cost[v], (size_t)p->k[v], p->allowed[v]);
	}
	fputs("],\n    \"usages\": [", fp);
	for (int v = 0; v < p->n; v++) {
		fputs(v ? ", " : "", fp);
		if (p->usage != NULL)
			iopddl_row(fp, p->usage[v], (size_t)p->k[v], NULL);
		else {
			fputc('[', fp);
			for (int s = 0; s < p->k[v]; s++)
				fputs(s ? ", 0" : "0", fp);
			fputc(']', fp);
		}
	}
	fputs("]},\n  \"edges\": {\n    \"nodes\": [", fp);
	for (int e = 0; e < p->m; e++)
		fprintf(fp, "%s[%d, %d]", e ? ", " : "", p->edge[e][0],
		    p->edge[e][1]);
	fputs("],\n    \"costs\": [", fp);
	for (int e = 0; e < p->m; e++) {
		fputs(e ? ",\n      " : "\n      ", fp);
		iopddl_row(fp, p->ecost[e], (size_t)p->k[p->edge[e][0]] *
		    p->k[p->edge[e][1]], NULL);
	}
	fputs("]}", fp);
	if (p->usage_limit >= 0 && p->interval != NULL && p->usage != NULL)
		fprintf(fp, ",\n  \"usage_limit\": %lld",
		    (long long)p->usage_limit);
	fputs("\n}}\n", fp);
}

static bool
iopddl_ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int
sl_iopddl_save(const sl_problem *p, const char *path, sl_error *err)
{
	sl_atomic a;
	int rc;

	if ((rc = sl_atomic_open(&a, path, err)) != SL_OK)
		return rc;
	if (iopddl_ends_with(path, ".gz") && !a.is_stdout) {
		/* Text to memory, then gzip into the temporary file. */
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		gzFile gz;
		int fd;

		if (mem == NULL) {
			sl_atomic_abort(&a);
			return sl_error_set(err, SL_EINTERNAL, path, 0, 0,
			    "open_memstream: %s", strerror(errno));
		}
		iopddl_write(p, mem);
		fclose(mem);
		fflush(a.fp);
		fd = dup(fileno(a.fp));
		gz = fd >= 0 ? gzdopen(fd, "wb") : NULL;
		if (gz == NULL || gzwrite(gz, buf, (unsigned)len) != (int)len ||
		    gzclose(gz) != Z_OK) {
			if (gz == NULL && fd >= 0)
				close(fd);
			free(buf);
			sl_atomic_abort(&a);
			return sl_error_set(err, SL_EINTERNAL, path, 0, 0, "%s",
			    _("cannot write the compressed file"));
		}
		free(buf);
	} else
		iopddl_write(p, a.fp);
	return sl_atomic_commit(&a, err);
}
