/*
 * iopddl.c: problems of the ASPLOS/EuroSys 2025 IOPDDL contest (google/iopddl),
 * plain or gzip JSON, read into an sl_problem and written back in the same
 * format.  Node i is "n<i>", its strategy s "s<s>".  Edges given more than
 * once (in either direction) are merged into one edge whose costs are the sum.
 * Entries that are not allowed are written with the contest's cost for an
 * impossible choice (10^18), so an exported problem keeps its optimum in any
 * reader.
 *
 * A problem is read value by value (json.h, the pull reader) straight into
 * its tables: a tree of its values would take some 60 bytes for each
 * number, two bytes of text ("0,") in a file that gzip shrinks a
 * thousandfold.  What the tables may take is bounded as they are read: a
 * table whose dimensions are known by then (the strategies of each node,
 * the nodes of each edge) may not grow past them, and all of them together
 * may take no more memory than sl_max_input() (SHARDLAB_MAX_INPUT), which
 * also bounds the text.
 */
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#define IOPDDL_IMPOSSIBLE 1000000000000000000LL
/* Most strategies of a node, most nodes of a problem. */
#define IOPDDL_MAX_STRATEGIES 1000000
#define IOPDDL_MAX_NODES 100000000

/*
 * What a value read and a row read take, counted against the budget: a
 * value is kept or copied into the problem once (8 bytes each), a row is
 * its pointer, its length and the allocator's chunk, and a node's strategy
 * also gets a name ("s3") and an allowed flag in the problem.  An estimate
 * of the problem built, not of the text.
 */
#define IOPDDL_VALUE_BYTES 16
#define IOPDDL_ROW_BYTES 64
#define IOPDDL_STRATEGY_BYTES 48

/* A table of the problem as read: rows of integers. */
typedef struct iopddl_rows {
	bool have;		/* the member was there */
	size_t n, cap;
	int64_t **row;
	size_t *len;
} iopddl_rows;

struct iopddl_ctx {
	const char *path;
	sl_error *err;
	sl_json j;		/* the text, for positions found after reading */
	jp_pull *p;
	int64_t budget;		/* bytes the tables may still take */
	int64_t budget_all;
	/* what was read */
	bool have_problem, have_nodes, have_edges;
	iopddl_rows cost, iv, usage, ep, ec;
	bool have_limit;	/* a usage_limit that is not null */
	int64_t limit;
	char *name;
};

/* Error at the value of path ("problem.nodes.usages[3]"), named by msg. */
#define iopddl_bad(c, at, ...) sl_json_fail(&(c)->j, (c)->err, (at), __VA_ARGS__)

/* Error at the token the reader is at. */
static int
iopddl_bad_here(struct iopddl_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
iopddl_bad_here(struct iopddl_ctx *c, const char *fmt, ...)
{
	char msg[sizeof c->err->msg];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	jp_pull_where(c->p, &line, &col);
	return sl_error_set(c->err, SL_EINPUT, c->path, line, col, "%s", msg);
}

/* A syntax error of the text, where the reader found it. */
static int
iopddl_syntax(struct iopddl_ctx *c)
{
	const jp_error *e = jp_pull_error(c->p);

	return sl_error_set(c->err, SL_EINPUT, c->path, e->line, e->col,
	    _("not valid JSON: %s"), e->msg);
}

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

static void
iopddl_rows_free(iopddl_rows *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->row[i]);
	free(t->row);
	free(t->len);
	memset(t, 0, sizeof *t);
}

/*
 * Charges bytes to the budget for the value at what[i] (or what[i][j]);
 * SL_EINPUT there when it is spent.
 */
static int
iopddl_charge(struct iopddl_ctx *c, int64_t bytes, const char *what,
    size_t i, long long j)
{
	char b[32], at[128];

	if ((c->budget -= bytes) >= 0)
		return SL_OK;
	return iopddl_bad_here(c, _("%s: the problem would take more than %s "
	    "of memory (SHARDLAB_MAX_INPUT): its tables stop being read here"),
	    iopddl_at(at, sizeof at, what, i, j),
	    sl_format_bytes(c->budget_all, b, sizeof b));
}

/* Reads past the rest of the container the reader is in; counts its values. */
static int
iopddl_count_rest(struct iopddl_ctx *c, jp_tok t, size_t *n)
{
	while (t != JP_T_END) {
		if (t == JP_T_ERROR || jp_pull_skip(c->p, t) == JP_T_ERROR)
			return iopddl_syntax(c);
		(*n)++;
		t = jp_pull_next(c->p);
	}
	return SL_OK;
}

/*
 * Reads the table at the reader (an array of arrays of integers in
 * [lo, hi]) into tab.  rows (SIZE_MAX: not known yet) and the length of
 * each row (every, or want[i] when want is given; SIZE_MAX: not known) are
 * its dimensions where the format or the tables read before give them:
 * past them nothing is kept, only counted for the message, which comes at
 * the end of the table (a wrong number of rows before a wrong row, as the
 * checks after reading order them).  strategy: each value is a node's
 * strategy (its name is charged too; past IOPDDL_MAX_STRATEGIES a row is
 * counted, and refused after reading).
 */
static int
iopddl_read_rows(struct iopddl_ctx *c, jp_tok t, const char *what,
    iopddl_rows *tab, size_t rows, size_t every, const size_t *want,
    int64_t lo, int64_t hi, bool strategy)
{
	/* a node has at most 1000000 strategies: a longer row is counted */
	size_t most = strategy ? IOPDDL_MAX_STRATEGIES : SIZE_MAX;
	int tline, tcol, bline = 0, bcol = 0;
	size_t n = 0, bad = SIZE_MAX, bad_w = 0, bad_len = 0;

	iopddl_rows_free(tab);
	if (t != JP_T_ARRAY)
		return iopddl_bad_here(c, _("%s: expected an array"), what);
	tab->have = true;
	jp_pull_where(c->p, &tline, &tcol);
	for (;; n++) {
		size_t len = 0, cap = 0, w;
		int64_t *row = NULL;
		int rline, rcol;

		if ((t = jp_pull_next(c->p)) == JP_T_ERROR)
			return iopddl_syntax(c);
		if (t == JP_T_END)
			break;
		if (n >= rows) {
			/* more rows than the problem has: count the rest */
			if (iopddl_count_rest(c, t, &n) != SL_OK)
				return c->err->code;
			break;
		}
		if (t != JP_T_ARRAY)
			return iopddl_bad_here(c, _("%s[%zu]: expected an array of "
			    "integers"), what, n);
		jp_pull_where(c->p, &rline, &rcol);
		if (iopddl_charge(c, IOPDDL_ROW_BYTES, what, n, -1) != SL_OK)
			return c->err->code;
		w = want != NULL ? want[n] : every;
		for (;;) {
			int64_t v;

			if ((t = jp_pull_next(c->p)) == JP_T_ERROR) {
				free(row);
				return iopddl_syntax(c);
			}
			if (t == JP_T_END)
				break;
			if (len >= w || len >= most) {
				/* longer than the row can be: count the rest */
				if (iopddl_count_rest(c, t, &len) != SL_OK) {
					free(row);
					return c->err->code;
				}
				break;
			}
			if (t != JP_T_NUMBER || !jp_pull_int64(c->p, &v)) {
				free(row);
				return iopddl_bad_here(c, _("%s[%zu][%zu]: expected "
				    "an integer"), what, n, len);
			}
			if (v < lo || v > hi) {
				free(row);
				return iopddl_bad_here(c, _("%s[%zu][%zu]: %lld is "
				    "out of range: expected %lld to %lld"), what, n,
				    len, (long long)v, (long long)lo, (long long)hi);
			}
			if (iopddl_charge(c, IOPDDL_VALUE_BYTES +
			    (strategy ? IOPDDL_STRATEGY_BYTES : 0), what, n,
			    (long long)len) != SL_OK) {
				free(row);
				return c->err->code;
			}
			if (len == cap) {
				cap = cap ? 2 * cap : 8;
				row = sl_xrealloc(row, cap * sizeof *row);
			}
			row[len++] = v;
		}
		if (w != SIZE_MAX && len != w && bad == SIZE_MAX) {
			bad = n;
			bad_w = w;
			bad_len = len;
			bline = rline;
			bcol = rcol;
		}
		if (tab->n == tab->cap) {
			tab->cap = tab->cap ? 2 * tab->cap : 64;
			tab->row = sl_xrealloc(tab->row, tab->cap * sizeof *tab->row);
			tab->len = sl_xrealloc(tab->len, tab->cap * sizeof *tab->len);
		}
		tab->row[tab->n] = row != NULL ? row : sl_xmalloc(sizeof *row);
		tab->len[tab->n++] = len;
	}
	if (rows != SIZE_MAX && n != rows)
		return sl_error_set(c->err, SL_EINPUT, c->path, tline, tcol,
		    _("%s: expected %zu entries, found %zu"), what, rows, n);
	if (bad != SIZE_MAX)
		return sl_error_set(c->err, SL_EINPUT, c->path, bline, bcol,
		    _("%s[%zu]: expected %zu values, found %zu"), what, bad,
		    bad_w, bad_len);
	return SL_OK;
}

/* The strategies of each node, when nodes.costs has been read. */
static size_t *
iopddl_node_want(const struct iopddl_ctx *c)
{
	size_t *w;

	if (!c->cost.have)
		return NULL;
	w = sl_xmalloc((c->cost.n + 1) * sizeof *w);
	for (size_t i = 0; i < c->cost.n; i++)
		/* a node without strategies is refused after reading */
		w[i] = c->cost.len[i] >= 1 && c->cost.len[i] <= IOPDDL_MAX_STRATEGIES ?
		    c->cost.len[i] : SIZE_MAX;
	return w;
}

/* The entries of each edge, when its nodes and their strategies are known. */
static size_t *
iopddl_edge_want(const struct iopddl_ctx *c)
{
	size_t *w;

	if (!c->cost.have || !c->ep.have)
		return NULL;
	w = sl_xmalloc((c->ep.n + 1) * sizeof *w);
	for (size_t e = 0; e < c->ep.n; e++) {
		int64_t a = c->ep.len[e] == 2 ? c->ep.row[e][0] : -1;
		int64_t b = c->ep.len[e] == 2 ? c->ep.row[e][1] : -1;

		/* a pair refused after reading gives no length */
		w[e] = SIZE_MAX;
		if (a >= 0 && (size_t)a < c->cost.n && b >= 0 &&
		    (size_t)b < c->cost.n && a != b &&
		    c->cost.len[a] >= 1 && c->cost.len[a] <= IOPDDL_MAX_STRATEGIES &&
		    c->cost.len[b] >= 1 && c->cost.len[b] <= IOPDDL_MAX_STRATEGIES)
			w[e] = c->cost.len[a] * c->cost.len[b];
	}
	return w;
}

/* Reads the object of a table group (nodes or edges), members by name. */
static int
iopddl_read_group(struct iopddl_ctx *c, bool nodes)
{
	jp_tok t;

	while ((t = jp_pull_next(c->p)) != JP_T_END) {
		/* the nodes are as many as their cost rows, the edges as their
		 * node pairs; a table read before them is checked after */
		size_t nn = c->cost.have ? c->cost.n : SIZE_MAX;
		size_t ne = c->ep.have ? c->ep.n : SIZE_MAX;
		const char *k = jp_pull_key(c->p);
		size_t *want = NULL;
		int rc;

		if (t == JP_T_ERROR)
			return iopddl_syntax(c);

		if (nodes && strcmp(k, "costs") == 0) {
			rc = iopddl_read_rows(c, t, "problem.nodes.costs", &c->cost,
			    SIZE_MAX, SIZE_MAX, NULL, 0, IOPDDL_IMPOSSIBLE, true);
		} else if (nodes && strcmp(k, "intervals") == 0) {
			rc = iopddl_read_rows(c, t, "problem.nodes.intervals",
			    &c->iv, nn, 2, NULL, 0, IOPDDL_IMPOSSIBLE, false);
		} else if (nodes && strcmp(k, "usages") == 0) {
			want = iopddl_node_want(c);
			rc = iopddl_read_rows(c, t, "problem.nodes.usages",
			    &c->usage, nn, SIZE_MAX, want, 0, IOPDDL_IMPOSSIBLE,
			    false);
		} else if (!nodes && strcmp(k, "nodes") == 0) {
			rc = iopddl_read_rows(c, t, "problem.edges.nodes", &c->ep,
			    SIZE_MAX, 2, NULL, INT64_MIN, INT64_MAX, false);
		} else if (!nodes && strcmp(k, "costs") == 0) {
			want = iopddl_edge_want(c);
			rc = iopddl_read_rows(c, t, "problem.edges.costs", &c->ec,
			    ne, SIZE_MAX, want, 0, IOPDDL_IMPOSSIBLE, false);
		} else
			rc = jp_pull_skip(c->p, t) == JP_T_ERROR ?
			    iopddl_syntax(c) : SL_OK;
		free(want);
		if (rc != SL_OK)
			return rc;
	}
	return SL_OK;
}

/* Drops what was read of a problem (a later "problem" member replaces it). */
static void
iopddl_forget(struct iopddl_ctx *c)
{
	iopddl_rows_free(&c->cost);
	iopddl_rows_free(&c->iv);
	iopddl_rows_free(&c->usage);
	iopddl_rows_free(&c->ep);
	iopddl_rows_free(&c->ec);
	free(c->name);
	c->name = NULL;
	c->have_problem = c->have_nodes = c->have_edges = c->have_limit = false;
	c->budget = c->budget_all;
}

/*
 * Reads the document: {"problem": {"name", "nodes": {...}, "edges":
 * {...}, "usage_limit"}}, members in any order, others skipped, a repeated
 * member the last one winning (as the contest's own reader takes them).
 */
static int
iopddl_read(struct iopddl_ctx *c)
{
	jp_tok t;
	int rc;

	if ((t = jp_pull_next(c->p)) == JP_T_ERROR)
		return iopddl_syntax(c);
	if (t != JP_T_OBJECT)
		return iopddl_bad_here(c, "%s",
		    _("expected an object with a \"problem\" object"));
	while ((t = jp_pull_next(c->p)) != JP_T_END) {
		if (t == JP_T_ERROR)
			return iopddl_syntax(c);
		if (strcmp(jp_pull_key(c->p), "problem") != 0 || t != JP_T_OBJECT) {
			if (strcmp(jp_pull_key(c->p), "problem") == 0)
				iopddl_forget(c);
			if (jp_pull_skip(c->p, t) == JP_T_ERROR)
				return iopddl_syntax(c);
			continue;
		}
		iopddl_forget(c);
		c->have_problem = true;
		while ((t = jp_pull_next(c->p)) != JP_T_END) {
			const char *k = jp_pull_key(c->p);

			if (t == JP_T_ERROR)
				return iopddl_syntax(c);
			if (strcmp(k, "nodes") == 0 || strcmp(k, "edges") == 0) {
				bool nodes = k[0] == 'n';

				if (t != JP_T_OBJECT)
					return iopddl_bad_here(c, nodes ?
					    _("problem.nodes: expected an object") :
					    _("problem.edges: expected an object"));
				if (nodes)
					c->have_nodes = true;
				else
					c->have_edges = true;
				if ((rc = iopddl_read_group(c, nodes)) != SL_OK)
					return rc;
			} else if (strcmp(k, "usage_limit") == 0) {
				c->have_limit = t != JP_T_NULL;
				if (t != JP_T_NULL && (t != JP_T_NUMBER ||
				    !jp_pull_int64(c->p, &c->limit) || c->limit < 0))
					return iopddl_bad_here(c, "%s",
					    _("problem.usage_limit: expected a "
					    "non-negative integer"));
			} else if (strcmp(k, "name") == 0) {
				free(c->name);
				c->name = t == JP_T_STRING ?
				    sl_xstrdup(jp_pull_string(c->p)) : NULL;
				/* a name that is no string is no name: skip
				 * all of it, or its elements would be read as
				 * the problem's members */
				if (jp_pull_skip(c->p, t) == JP_T_ERROR)
					return iopddl_syntax(c);
			} else if (jp_pull_skip(c->p, t) == JP_T_ERROR)
				return iopddl_syntax(c);
		}
	}
	if ((t = jp_pull_next(c->p)) != JP_T_EOF)
		return iopddl_syntax(c);
	if (!c->have_problem)
		return iopddl_bad(c, "", "%s",
		    _("expected an object with a \"problem\" object"));
	return SL_OK;
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
iopddl_check_sums(struct iopddl_ctx *c)
{
	int64_t sum = 0, used = 0;
	size_t at;
	char p[128];

	for (size_t v = 0; v < c->cost.n; v++) {
		int64_t x = iopddl_row_max(c->cost.row[v], c->cost.len[v], &at);
		if (__builtin_add_overflow(sum, x, &sum) || sum > IOPDDL_IMPOSSIBLE)
			return iopddl_bad(c, iopddl_at(p, sizeof p,
			    "problem.nodes.costs", v, (long long)at),
			    _("problem.nodes.costs[%zu][%zu]: the "
			    "costs add up to more than 10^18: a plan's cost could "
			    "overflow"), v, at);
	}
	for (size_t e = 0; e < c->ec.n; e++) {
		int64_t x = iopddl_row_max(c->ec.row[e], c->ec.len[e], &at);
		if (__builtin_add_overflow(sum, x, &sum) || sum > IOPDDL_IMPOSSIBLE)
			return iopddl_bad(c, iopddl_at(p, sizeof p,
			    "problem.edges.costs", e, (long long)at),
			    _("problem.edges.costs[%zu][%zu]: the "
			    "costs add up to more than 10^18: a plan's cost could "
			    "overflow"), e, at);
	}
	for (size_t v = 0; v < c->usage.n; v++) {
		int64_t x = iopddl_row_max(c->usage.row[v], c->usage.len[v], &at);
		if (__builtin_add_overflow(used, x, &used) || used > IOPDDL_IMPOSSIBLE)
			return iopddl_bad(c, iopddl_at(p, sizeof p,
			    "problem.nodes.usages", v, (long long)at),
			    _("problem.nodes.usages[%zu][%zu]: the "
			    "usages add up to more than 10^18"), v, at);
	}
	return SL_OK;
}

/* A table's rows against their count (n) and lengths (want[i], or every). */
static int
iopddl_check_rows(struct iopddl_ctx *c, const iopddl_rows *t, const char *what,
    size_t n, size_t every, const size_t *want)
{
	char at[128];

	if (t->n != n)
		return iopddl_bad(c, what, _("%s: expected %zu entries, found %zu"),
		    what, n, t->n);
	for (size_t i = 0; i < n; i++) {
		size_t w = want != NULL ? want[i] : every;
		if (t->len[i] != w)
			return iopddl_bad(c, iopddl_at(at, sizeof at, what, i, -1),
			    _("%s[%zu]: expected %zu values, found %zu"), what, i,
			    w, t->len[i]);
	}
	return SL_OK;
}

/*
 * The nodes' tables against each other, once all is read: a node has 1 to
 * IOPDDL_MAX_STRATEGIES strategies, intervals and usages one row a node
 * (2 values, its strategies), no interval ends before it starts, and a
 * usage limit comes with both.  k gets each node's strategies.
 */
static int
iopddl_check_nodes(struct iopddl_ctx *c, int *k)
{
	size_t n = c->cost.n;
	char at[64];
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (c->cost.len[i] == 0 || c->cost.len[i] > IOPDDL_MAX_STRATEGIES)
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.nodes.costs", i, -1), _("problem.nodes."
			    "costs[%zu]: a node needs "
			    "between 1 and 1000000 strategies, found %zu"),
			    i, c->cost.len[i]);
		k[i] = (int)c->cost.len[i];
	}
	if (c->iv.have && (rc = iopddl_check_rows(c, &c->iv,
	    "problem.nodes.intervals", n, 2, NULL)) != SL_OK)
		return rc;
	if (c->usage.have && (rc = iopddl_check_rows(c, &c->usage,
	    "problem.nodes.usages", n, 0, c->cost.len)) != SL_OK)
		return rc;
	for (size_t i = 0; c->iv.have && i < n; i++)
		if (c->iv.row[i][0] > c->iv.row[i][1])
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.nodes.intervals", i, -1), _("problem.nodes."
			    "intervals[%zu]: lower bound "
			    "%lld above upper bound %lld"), i,
			    (long long)c->iv.row[i][0], (long long)c->iv.row[i][1]);
	if (c->have_limit && (!c->iv.have || !c->usage.have))
		return iopddl_bad(c, "problem.usage_limit", "%s",
		    _("problem.usage_limit needs "
		    "problem.nodes.intervals and problem.nodes.usages"));
	return SL_OK;
}

/*
 * The edges' tables, when there are edges: pairs of two distinct nodes, and
 * a cost row of the product of their strategies (want[e]) each.
 */
static int
iopddl_check_edges(struct iopddl_ctx *c, const int *k, size_t *want)
{
	size_t n = c->cost.n, m = c->ep.n;
	char at[64];
	int rc;

	if (!c->ep.have)
		return iopddl_bad(c, "problem.edges.nodes", "%s",
		    _("problem.edges.nodes: expected an array"));
	if ((rc = iopddl_check_rows(c, &c->ep, "problem.edges.nodes", m, 2,
	    NULL)) != SL_OK)
		return rc;
	for (size_t e = 0; e < m; e++) {
		int64_t a = c->ep.row[e][0], b = c->ep.row[e][1];
		if (a < 0 || (size_t)a >= n || b < 0 || (size_t)b >= n)
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.edges.nodes", e, -1), _("problem.edges."
			    "nodes[%zu]: node "
			    "index out of range 0..%zu in [%lld, %lld]"),
			    e, n - 1, (long long)a, (long long)b);
		if (a == b)
			return iopddl_bad(c, iopddl_at(at, sizeof at,
			    "problem.edges.nodes", e, -1), _("problem.edges."
			    "nodes[%zu]: an edge "
			    "from node %lld to itself"), e, (long long)a);
		want[e] = (size_t)k[a] * (size_t)k[b];
	}
	if (!c->ec.have)
		return iopddl_bad(c, "problem.edges.costs", "%s",
		    _("problem.edges.costs: expected an array"));
	return iopddl_check_rows(c, &c->ec, "problem.edges.costs", m, 0, want);
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

/* The problem of the tables read and checked (its usages taken over). */
static sl_problem *
iopddl_build(struct iopddl_ctx *c, const int *k)
{
	size_t n = c->cost.n, m = c->ep.n;
	int (*edge)[2] = sl_xmalloc((m + 1) * sizeof *edge);
	int *map = sl_xmalloc((m + 1) * sizeof *map), me;
	int64_t **ep = c->ep.row, **ec = c->ec.row;
	sl_problem *p;

	me = iopddl_merge_edges(ep, m, edge, map);
	p = sl_problem_new((int)n, k, me, (const int (*)[2])edge);
	for (size_t v = 0; v < n; v++)
		memcpy(p->cost[v], c->cost.row[v], (size_t)k[v] * sizeof **p->cost);
	for (size_t e = 0; e < m; e++) {
		int q = map[e], u = p->edge[q][0], v = p->edge[q][1];
		bool flip = ep[e][0] != u;
		for (int s = 0; s < k[u]; s++)
			for (int t = 0; t < k[v]; t++) {
				size_t src = flip ? (size_t)t * k[u] + s :
				    (size_t)s * k[v] + t;
				int64_t *dst = &p->ecost[q][(size_t)s * k[v] + t];
				*dst = sl_add_sat(*dst, ec[e][src]);
			}
	}
	free(edge);
	free(map);
	if (c->iv.have) {
		p->interval = sl_xmalloc((n + 1) * sizeof *p->interval);
		for (size_t v = 0; v < n; v++) {
			p->interval[v][0] = c->iv.row[v][0];
			p->interval[v][1] = c->iv.row[v][1];
		}
	}
	if (c->usage.have) {
		/* the rows move into the problem */
		p->usage = c->usage.row;
		c->usage.row = NULL;
		c->usage.n = 0;
	}
	if (c->have_limit)
		p->usage_limit = c->limit;
	p->name = sl_xstrdup(c->name != NULL ? c->name : "iopddl");
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

/* The checks that need every table, in order, then the problem. */
static sl_problem *
iopddl_finish(struct iopddl_ctx *c)
{
	size_t n = c->cost.n;
	int *k;
	size_t *want = NULL;
	sl_problem *p = NULL;

	if (!c->have_nodes) {
		iopddl_bad(c, "problem.nodes", "%s",
		    _("problem.nodes: expected an object"));
		return NULL;
	}
	if (!c->cost.have) {
		iopddl_bad(c, "problem.nodes.costs", "%s",
		    _("problem.nodes.costs: expected an array"));
		return NULL;
	}
	if (n > IOPDDL_MAX_NODES) {
		iopddl_bad(c, "problem.nodes.costs", "%s",
		    _("problem.nodes.costs: too many nodes"));
		return NULL;
	}
	k = sl_xmalloc((n + 1) * sizeof *k);
	if (c->have_edges)
		want = sl_xmalloc((c->ep.n + 1) * sizeof *want);
	if (iopddl_check_nodes(c, k) == SL_OK &&
	    (!c->have_edges || iopddl_check_edges(c, k, want) == SL_OK) &&
	    iopddl_check_sums(c) == SL_OK)
		p = iopddl_build(c, k);
	free(k);
	free(want);
	return p;
}

sl_problem *
sl_iopddl_load(const char *path, sl_error *err)
{
	struct iopddl_ctx c;
	size_t len;
	char *text;
	sl_problem *p = NULL;

	if ((text = sl_read_file(path, &len, err)) == NULL)
		return NULL;
	memset(&c, 0, sizeof c);
	c.path = path;
	c.err = err;
	c.budget = c.budget_all = sl_max_input();
	/* positions of what is checked after reading: the text scanned again */
	sl_json_text(&c.j, path, text, len);
	c.p = jp_pull_new(text, len);
	if (iopddl_read(&c) == SL_OK)
		p = iopddl_finish(&c);
	iopddl_forget(&c);
	jp_pull_free(c.p);
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
	bool yes = false;
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
	/* "problem" is not the first key but comes early: read to be sure. */
	if (memmem(head, (size_t)got, "\"problem\"", 9) != NULL) {
		size_t len;
		char *text = sl_read_file(path, &len, NULL);
		jp_pull *p;
		jp_tok t;

		if (text == NULL)
			return false;
		p = jp_pull_new(text, len);
		if (jp_pull_next(p) == JP_T_OBJECT) {
			/* the last "problem" member counts, as in the loader */
			while ((t = jp_pull_next(p)) != JP_T_END &&
			    t != JP_T_ERROR) {
				if (strcmp(jp_pull_key(p), "problem") == 0)
					yes = t == JP_T_OBJECT;
				if (jp_pull_skip(p, t) == JP_T_ERROR) {
					t = JP_T_ERROR;
					break;
				}
			}
			if (t == JP_T_ERROR || jp_pull_next(p) != JP_T_EOF)
				yes = false;
		}
		jp_pull_free(p);
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
