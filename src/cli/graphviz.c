/*
 * graphviz.c: the strategy graph as Graphviz builds it, one builder for
 * `shardlab render` (render.c) and the explorer's graph panel
 * (ui/ui_graph.c): operators as nodes holding their strategies, the chosen
 * strategy marked, edges between neighbours labelled with the resharding
 * cost of the chosen pair.  For the terminal, nodes are sized in character
 * cells (Courier at 12 points is 0.1 inch a column, 0.2 inch a line); for
 * files, nodes are HTML tables.
 */
#include <gvc.h>
#include "graphviz.h"

#include <errno.h>
#include <stdlib.h>

#define CLI_SG_BOX_MAXW 26	/* widest node box, in columns */

void
cli_sgraph_edge_label(const sl_space *s, int e, const int *choice, char *buf, size_t len)
{
	sl_mem mem;
	sl_comm comm;
	int64_t ns = 0, bytes;
	char b1[32], b2[32];
	int i;
	const sl_space_edge *ed = &s->edges[e];

	sl_edge_cost(s, e, choice[ed->src], choice[ed->dst], NULL, &mem, &comm);
	for (i = 0; i < SL_COLL_COUNT; i++)
		ns += comm.ns[i];
	bytes = sl_mem_total(&mem);
	/* every edge: what resharding the chosen pair costs, nothing included */
	snprintf(buf, len, "%s %s", sl_format_bytes(bytes, b1, sizeof b1),
	    sl_format_ns(ns, b2, sizeof b2));
}

/* "chosen of N", the second line of a node box in the terminal. */
void
cli_sgraph_box_strat(const sl_space *s, int op, int chosen, char *buf, size_t len)
{
	snprintf(buf, len, _("%s of %d"), chosen >= 0 ?
	    s->ops[op].strat[chosen].name : "?", s->ops[op].n_strat);
}

/*
 * A name from the model in an HTML label: its control characters and
 * invalid UTF-8 as \xHH (sl_esc), so that Graphviz, which drops a label it
 * cannot parse and prints its bytes raw on the terminal, never sees them;
 * then HTML's own escapes.
 */
static void
sg_html_escape(const char *name, char *out, size_t len)
{
	char safe[256];
	const char *in = sl_esc_buf(name, safe, sizeof safe);
	size_t o = 0;

	for (; *in && o + 6 < len; in++) {
		const char *r = *in == '<' ? "&lt;" : *in == '>' ? "&gt;" :
		    *in == '&' ? "&amp;" : *in == '"' ? "&quot;" : NULL;
		if (r != NULL) {
			memcpy(out + o, r, strlen(r));
			o += strlen(r);
		} else {
			out[o++] = *in;
		}
	}
	out[o] = '\0';
}

/* A strategy of an operator against the chosen one, the neighbours'
 * choices held: what choosing it would add (memory, then time). */
struct sg_alt {
	int st;
	int64_t dmem, dns;
};

static int
sg_alt_cmp(const void *a, const void *b)
{
	const struct sg_alt *x = a, *y = b;

	if (x->dmem != y->dmem)
		return x->dmem < y->dmem ? -1 : 1;
	if (x->dns != y->dns)
		return x->dns < y->dns ? -1 : 1;
	return x->st - y->st;
}

/*
 * The strategies of op by what each would add to the plan if op alone
 * changed to it, its neighbours keeping theirs: its own memory and time and
 * those of its edges, less the chosen strategy's.  The chosen one first
 * (adding nothing), then the nearest.  alt has n_strat entries.
 */
static void
sg_alternatives(const sl_space *s, const int *choice, int op, struct sg_alt *alt)
{
	int k = s->ops[op].n_strat, c = choice[op];

	for (int t = 0; t < k; t++) {
		alt[t].st = t;
		alt[t].dmem = s->node_mem[op][t] - s->node_mem[op][c];
		alt[t].dns = s->node_ns[op][t] - s->node_ns[op][c];
	}
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *ed = &s->edges[e];
		int kd = s->ops[ed->dst].n_strat;
		size_t cur;

		if (ed->src == ed->dst || (ed->src != op && ed->dst != op))
			continue;
		cur = (size_t)choice[ed->src] * kd + choice[ed->dst];
		for (int t = 0; t < k; t++) {
			size_t i = ed->src == op ? (size_t)t * kd + choice[ed->dst] :
			    (size_t)choice[ed->src] * kd + t;
			alt[t].dmem += s->edge_mem[e][i] - s->edge_mem[e][cur];
			alt[t].dns += s->edge_ns[e][i] - s->edge_ns[e][cur];
		}
	}
	/* the chosen one first: it adds nothing, and ties keep their order */
	alt[c].dmem = INT64_MIN;
	qsort(alt, (size_t)k, sizeof *alt, sg_alt_cmp);
	alt[0].dmem = 0;
}

/* "+1.50 GiB" or "-96.00 MiB": a difference with its sign. */
static const char *
sg_delta(int64_t v, bool ns, char *buf, size_t len)
{
	char b[32];

	if (ns)
		sl_format_ns(v < 0 ? -v : v, b, sizeof b);
	else
		sl_format_bytes(v < 0 ? -v : v, b, sizeof b);
	snprintf(buf, len, "%s%s", v < 0 ? "-" : "+", b);
	return buf;
}

/*
 * An operator as an HTML table, one strategy a row so that a node stays
 * narrow: its name, the chosen strategy (the edges' port) with its memory
 * and time, then the n_alts nearest alternatives with what each would add
 * (all when n_alts < 0), and how many more it has.
 */
static char *
sg_node_html(const sl_space *s, int op, const int *choice, int n_alts)
{
	size_t cap = 512, len = 0;
	char *buf = sl_xmalloc(cap), name[256], d1[40], d2[40];
	int k = s->ops[op].n_strat, shown;
	struct sg_alt *alt;

#define APPEND(...) do { \
	int n_ = snprintf(NULL, 0, __VA_ARGS__); \
	while (len + n_ + 1 > cap) buf = sl_xrealloc(buf, cap *= 2); \
	snprintf(buf + len, cap - len, __VA_ARGS__); len += n_; } while (0)

	sg_html_escape(s->g->ops[op].name, name, sizeof name);
	APPEND("<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\">"
	    "<TR><TD COLSPAN=\"3\" BGCOLOR=\"lightgrey\"><B>%s</B></TD></TR>", name);
	if (choice == NULL || choice[op] < 0 || choice[op] >= k) {
		/* no plan: the strategies alone */
		for (int st = 0; st < k; st++) {
			sg_html_escape(s->ops[op].strat[st].name, name, sizeof name);
			APPEND("<TR><TD PORT=\"s%d\" COLSPAN=\"3\">%s</TD></TR>", st, name);
		}
		APPEND("</TABLE>");
		return buf;
	}
	alt = sl_xmalloc((size_t)k * sizeof *alt);
	sg_alternatives(s, choice, op, alt);
	shown = n_alts < 0 || n_alts + 1 > k ? k : n_alts + 1;
	for (int i = 0; i < shown; i++) {
		int st = alt[i].st;
		sg_html_escape(s->ops[op].strat[st].name, name, sizeof name);
		if (i == 0)
			APPEND("<TR><TD PORT=\"s%d\" ALIGN=\"LEFT\" BGCOLOR=\"palegreen\"><B>%s</B></TD>"
			    "<TD ALIGN=\"RIGHT\" BGCOLOR=\"palegreen\">%s</TD>"
			    "<TD ALIGN=\"RIGHT\" BGCOLOR=\"palegreen\">%s</TD></TR>",
			    st, name, sl_format_bytes(s->node_mem[op][st], d1, sizeof d1),
			    sl_format_ns(s->node_ns[op][st], d2, sizeof d2));
		else
			APPEND("<TR><TD PORT=\"s%d\" ALIGN=\"LEFT\">%s</TD>"
			    "<TD ALIGN=\"RIGHT\">%s</TD><TD ALIGN=\"RIGHT\">%s</TD></TR>",
			    st, name, sg_delta(alt[i].dmem, false, d1, sizeof d1),
			    sg_delta(alt[i].dns, true, d2, sizeof d2));
	}
	if (shown < k) {
		snprintf(d1, sizeof d1, ngettext("%d more strategy", "%d more strategies",
		    k - shown), k - shown);
		APPEND("<TR><TD COLSPAN=\"3\"><I>%s</I></TD></TR>", d1);
	}
	APPEND("</TABLE>");
	free(alt);
#undef APPEND
	return buf;
}

Agraph_t *
cli_sgraph_build(const sl_space *s, const int *choice, const int *seeds,
    int n_seeds, int radius, enum cli_sgraph_mode mode, bool lr, int n_alts)
{
	Agraph_t *g;
	Agnode_t **node, *n;
	Agedge_t *e;
	int *dist, i, r, op, widest, lines, w, h;
	char name[32], buf[64], label[96];
	bool changed;

	g = agopen("strategy_graph", Agdirected, NULL);
	agattr(g, AGRAPH, "rankdir", lr ? "LR" : "TB");
	agattr(g, AGRAPH, "fontname", "Courier");
	agattr(g, AGNODE, "fontname", "Courier");
	agattr(g, AGEDGE, "fontname", "Courier");
	agattr(g, AGNODE, "fontsize", "12");
	agattr(g, AGEDGE, "fontsize", "12");
	agattr(g, AGNODE, "shape", mode == CLI_SG_RENDER ? "plain" : "box");
	agattr(g, AGNODE, "fixedsize", mode == CLI_SG_RENDER ? "false" : "true");
	agattr(g, AGNODE, "width", "0.75");
	agattr(g, AGNODE, "height", "0.5");
	agattr(g, AGNODE, "label", "\\N");
	agattr(g, AGEDGE, "label", "");
	agattr(g, AGEDGE, "penwidth", "1");
	agattr(g, AGEDGE, "color", "black");
	agattr(g, AGEDGE, "tailport", "");
	agattr(g, AGEDGE, "headport", "");
	if (mode != CLI_SG_RENDER) {
		agattr(g, AGRAPH, "nodesep", "0.2");
		/* room for a label line between ranks (and columns, left to right) */
		agattr(g, AGRAPH, "ranksep", mode == CLI_SG_CELLS_COMPACT ?
		    "0.4" : "0.6");
		agattr(g, AGRAPH, "splines", "polyline");
	}

	/* Operators within radius edges of the seeds (all when there are none). */
	dist = sl_xmalloc(s->g->n_ops * sizeof(int));
	for (i = 0; i < s->g->n_ops; i++)
		dist[i] = n_seeds <= 0 ? 0 : -1;
	if (n_seeds > 0) {
		for (i = 0; i < n_seeds; i++)
			dist[seeds[i]] = 0;
		for (r = 1, changed = true; r <= radius && changed; r++) {
			changed = false;
			for (i = 0; i < s->n_edges; i++) {
				int a = s->edges[i].src, b = s->edges[i].dst;
				if (dist[a] == r - 1 && dist[b] < 0) {
					dist[b] = r;
					changed = true;
				} else if (dist[b] == r - 1 && dist[a] < 0) {
					dist[a] = r;
					changed = true;
				}
			}
		}
	}
	node = sl_xcalloc(s->g->n_ops, sizeof *node);
	for (op = 0; op < s->g->n_ops; op++) {
		if (dist[op] < 0)
			continue;
		snprintf(name, sizeof name, "n%d", op);
		n = node[op] = agnode(g, name, 1);
		if (mode == CLI_SG_RENDER) {
			char *html = sg_node_html(s, op, choice, n_alts);
			agset(n, "label", agstrdup_html(g, html));
			free(html);
			continue;
		}
		/*
		 * One rule for every box: the operator's name on the top
		 * border, inside the chosen strategy and how many it has.
		 */
		w = cli_text_width(s->g->ops[op].name);
		cli_sgraph_box_strat(s, op, choice ? choice[op] : -1, label, sizeof label);
		widest = cli_text_width(label);
		lines = 1;
		if (widest > w)
			w = widest;
		w += 2;
		if (w > CLI_SG_BOX_MAXW)
			w = CLI_SG_BOX_MAXW;
		h = lines + 2;
		snprintf(buf, sizeof buf, "%.2f", w * CLI_SG_CW);
		agset(n, "width", buf);
		snprintf(buf, sizeof buf, "%.2f", h * CLI_SG_CH);
		agset(n, "height", buf);
		agset(n, "label", "");
	}
	for (i = 0; i < s->n_edges; i++) {
		const sl_space_edge *ed = &s->edges[i];
		if (node[ed->src] == NULL || node[ed->dst] == NULL ||
		    ed->src == ed->dst)
			continue;
		snprintf(name, sizeof name, "e%d", i);
		e = agedge(g, node[ed->src], node[ed->dst], name, 1);
		label[0] = '\0';
		if (choice != NULL)
			cli_sgraph_edge_label(s, i, choice, label, sizeof label);
		/* the terminal draws its labels itself, beside the lines */
		if (mode == CLI_SG_RENDER && label[0] != '\0')
			agset(e, "label", label);
		/* between the nodes, whose chosen row is the coloured one:
		 * ports on a row would run the edges across the others */
		if (mode == CLI_SG_RENDER && choice != NULL) {
			agset(e, "penwidth", "2");
			agset(e, "color", "darkgreen");
		}
	}
	free(node);
	free(dist);
	return g;
}

/*
 * One Graphviz context for the process: each gvContext reads the plugin
 * configuration again and keeps part of it, so contexts are not made per
 * drawing.  Graphviz is used from the main thread only.
 */
static GVC_t *cli_gvc_ctx;

/* At exit: what Graphviz keeps beyond this is its own (LeakSanitizer's
 * suppressions in .ci/lsan.supp name those libraries). */
static void
cli_gvc_free(void)
{
	if (cli_gvc_ctx != NULL)
		gvFreeContext(cli_gvc_ctx);
	cli_gvc_ctx = NULL;
}

GVC_t *
cli_gvc(void)
{
	if (cli_gvc_ctx == NULL && (cli_gvc_ctx = gvContext()) != NULL)
		atexit(cli_gvc_free);
	return cli_gvc_ctx;
}

/* What Graphviz says while it draws: its first message, kept for ours
 * instead of reaching the terminal as it is. */
static char cli_gv_said[512];

static int
cli_gv_collect(char *msg)
{
	if (cli_gv_said[0] == '\0') {
		snprintf(cli_gv_said, sizeof cli_gv_said, "%s", msg);
		cli_gv_said[strcspn(cli_gv_said, "\n")] = '\0';
	}
	return 0;
}

/*
 * The drawing is made in memory and only then written to fp: a layout can
 * take a minute, and Graphviz ends the process (exit 1) when a write of its
 * own fails; this way it never writes to a file, a failed write is ours to
 * report, and no half-written file waits through the layout.  What
 * Graphviz reports goes to our message, not the terminal, and an error it
 * reports (a label it dropped) fails the drawing.
 */
int
cli_sgraph_render(Agraph_t *g, const char *format, FILE *fp, sl_error *err)
{
	GVC_t *gvc;
	char *buf = NULL;
	size_t len = 0;
	int rc = SL_OK;

	cli_gv_said[0] = '\0';
	agseterrf(cli_gv_collect);
	agseterr(AGWARN);
	agreseterrors();

	if (strcmp(format, "dot") == 0) {
		FILE *m = open_memstream(&buf, &len);
		if (m == NULL || agwrite(g, m) != 0) {
			if (m != NULL)
				fclose(m);
			free(buf);
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
			    _("could not write the graph"));
		}
		fclose(m);
	} else {
		unsigned int ulen = 0;
		gvc = cli_gvc();
		if (gvc == NULL || gvLayout(gvc, g, "dot") != 0)
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
			    _("Graphviz could not lay the graph out (is the dot plugin installed?)"));
		if (gvRenderData(gvc, g, format, &buf, &ulen) != 0)
			rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("Graphviz could not render %s"), format);
		len = ulen;
		gvFreeLayout(gvc, g);
		if (rc == SL_OK && agreseterrors() >= AGERR)
			rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("Graphviz could not draw the graph: %s"),
			    cli_gv_said[0] != '\0' ? cli_gv_said : "?");
		if (rc != SL_OK) {
			gvFreeRenderData(buf);
			return rc;
		}
	}
	if (len > 0 && fwrite(buf, 1, len, fp) != len)
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("cannot write the drawing: %s"), strerror(errno));
	if (strcmp(format, "dot") == 0)
		free(buf);
	else
		gvFreeRenderData(buf);
	return rc;
}

void
cli_sgraph_free(Agraph_t *g)
{
	if (g != NULL)
		agclose(g);
}
