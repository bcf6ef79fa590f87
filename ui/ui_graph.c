/*
 * ui_graph.c: the strategy graph around the selected operator.  One builder
 * makes the Graphviz graph for both the explorer and `shardlab render`:
 * operators as nodes holding their strategies, the chosen strategy marked,
 * edges between neighbours labelled with the resharding cost of the chosen
 * pair.  For the terminal, nodes are sized in character cells (Courier at 12
 * points is 0.1 inch a column, 0.2 inch a line), laid out by dot, and the
 * coordinates and edge splines are read back and drawn with box-drawing
 * characters (ASCII when the locale is not UTF-8).
 */
/* Graphviz's geom.h and curses both define `box`. */
#define box gv_box
#include <gvc.h>
#undef box
#include "ui.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define UI_CW 0.1		/* inches per terminal column */
#define UI_CH 0.2		/* inches per terminal line */
#define UI_BOX_MAXW 26		/* widest node box, in columns */

/* A laid-out picture in cells. */
struct ui_gnode {
	int op, x, y, w, h;
};
struct ui_gedge {
	int src, dst;		/* indices into nodes */
	int n;
	int (*pt)[2];		/* cells along the spline (x, y) */
	int lx, ly;		/* label centre; lx < 0 none */
	char label[48];
};
struct ui_gdraw {
	int op, w, h;
	int bw, bh;		/* bounding box in cells */
	bool compact;
	int n_nodes, n_edges;
	struct ui_gnode *nodes;
	struct ui_gedge *edges;
	char err[128];
};

/* -------------------------------------------------------------- builder */

static void
ui_edge_label(const sl_space *s, int e, const int *choice, char *buf, size_t len)
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
static void
ui_box_strat(const sl_space *s, int op, int chosen, char *buf, size_t len)
{
	snprintf(buf, len, _("%s of %d"), chosen >= 0 ?
	    s->ops[op].strat[chosen].name : "?", s->ops[op].n_strat);
}

static void
ui_html_escape(const char *in, char *out, size_t len)
{
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

static char *
ui_node_html(const sl_space *s, int op, int chosen)
{
	size_t cap = 512, len = 0;
	char *buf = sl_xmalloc(cap), name[256];
	int st;

#define APPEND(...) do { \
	int n_ = snprintf(NULL, 0, __VA_ARGS__); \
	while (len + n_ + 1 > cap) buf = sl_xrealloc(buf, cap *= 2); \
	snprintf(buf + len, cap - len, __VA_ARGS__); len += n_; } while (0)

	ui_html_escape(s->g->ops[op].name, name, sizeof name);
	APPEND("<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\">"
	    "<TR><TD COLSPAN=\"%d\" BGCOLOR=\"lightgrey\"><B>%s</B></TD></TR><TR>",
	    s->ops[op].n_strat, name);
	for (st = 0; st < s->ops[op].n_strat; st++) {
		ui_html_escape(s->ops[op].strat[st].name, name, sizeof name);
		if (st == chosen)
			APPEND("<TD PORT=\"s%d\" BGCOLOR=\"palegreen\"><B>%s</B></TD>",
			    st, name);
		else
			APPEND("<TD PORT=\"s%d\">%s</TD>", st, name);
	}
	APPEND("</TR></TABLE>");
#undef APPEND
	return buf;
}

Agraph_t *
ui_sgraph_build(const sl_space *s, const int *choice, const int *seeds,
    int n_seeds, int radius, enum ui_sgraph_mode mode, bool lr)
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
	agattr(g, AGNODE, "shape", mode == UI_SG_RENDER ? "plain" : "box");
	agattr(g, AGNODE, "fixedsize", mode == UI_SG_RENDER ? "false" : "true");
	agattr(g, AGNODE, "width", "0.75");
	agattr(g, AGNODE, "height", "0.5");
	agattr(g, AGNODE, "label", "\\N");
	agattr(g, AGEDGE, "label", "");
	agattr(g, AGEDGE, "penwidth", "1");
	agattr(g, AGEDGE, "color", "black");
	agattr(g, AGEDGE, "tailport", "");
	agattr(g, AGEDGE, "headport", "");
	if (mode != UI_SG_RENDER) {
		agattr(g, AGRAPH, "nodesep", "0.2");
		/* room for a label line between ranks (and columns, left to right) */
		agattr(g, AGRAPH, "ranksep", mode == UI_SG_CELLS_COMPACT ?
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
		if (mode == UI_SG_RENDER) {
			char *html = ui_node_html(s, op, choice ? choice[op] : -1);
			agset(n, "label", agstrdup_html(g, html));
			free(html);
			continue;
		}
		/*
		 * One rule for every box: the operator's name on the top
		 * border, inside the chosen strategy and how many it has.
		 */
		w = ui_text_width(s->g->ops[op].name);
		ui_box_strat(s, op, choice ? choice[op] : -1, label, sizeof label);
		widest = ui_text_width(label);
		lines = 1;
		if (widest > w)
			w = widest;
		w += 2;
		if (w > UI_BOX_MAXW)
			w = UI_BOX_MAXW;
		h = lines + 2;
		snprintf(buf, sizeof buf, "%.2f", w * UI_CW);
		agset(n, "width", buf);
		snprintf(buf, sizeof buf, "%.2f", h * UI_CH);
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
			ui_edge_label(s, i, choice, label, sizeof label);
		/* the terminal draws its labels itself, beside the lines */
		if (mode == UI_SG_RENDER && label[0] != '\0')
			agset(e, "label", label);
		if (mode == UI_SG_RENDER && choice != NULL) {
			snprintf(buf, sizeof buf, "s%d", choice[ed->src]);
			agset(e, "tailport", buf);
			snprintf(buf, sizeof buf, "s%d", choice[ed->dst]);
			agset(e, "headport", buf);
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
static GVC_t *ui_gvc_ctx;

/* At exit: what Graphviz keeps beyond this is its own (LeakSanitizer's
 * suppressions in .ci/lsan.supp name those libraries). */
static void
ui_gvc_free(void)
{
	if (ui_gvc_ctx != NULL)
		gvFreeContext(ui_gvc_ctx);
	ui_gvc_ctx = NULL;
}

static GVC_t *
ui_gvc(void)
{
	if (ui_gvc_ctx == NULL && (ui_gvc_ctx = gvContext()) != NULL)
		atexit(ui_gvc_free);
	return ui_gvc_ctx;
}

/*
 * The drawing is made in memory and only then written to fp: a layout can
 * take a minute, and Graphviz ends the process (exit 1) when a write of its
 * own fails; this way it never writes to a file, a failed write is ours to
 * report, and no half-written file waits through the layout.
 */
int
ui_sgraph_render(Agraph_t *g, const char *format, FILE *fp, sl_error *err)
{
	GVC_t *gvc;
	char *buf = NULL;
	size_t len = 0;
	int rc = SL_OK;

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
		gvc = ui_gvc();
		if (gvc == NULL || gvLayout(gvc, g, "dot") != 0)
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
			    _("Graphviz could not lay the graph out (is the dot plugin installed?)"));
		if (gvRenderData(gvc, g, format, &buf, &ulen) != 0)
			rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("Graphviz could not render %s"), format);
		len = ulen;
		gvFreeLayout(gvc, g);
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
ui_sgraph_free(Agraph_t *g)
{
	if (g != NULL)
		agclose(g);
}

/* --------------------------------------------------------- terminal layout */

static void
ui_gdraw_free(struct ui_gdraw *d)
{
	int i;

	if (d == NULL)
		return;
	for (i = 0; i < d->n_edges; i++)
		free(d->edges[i].pt);
	free(d->edges);
	free(d->nodes);
	free(d);
}

void
ui_graph_invalidate(ui *u)
{
	ui_gdraw_free(u->gdraw);
	u->gdraw = NULL;
	u->dirty |= UI_D_GRAPH;
}

void
ui_graph_free(ui *u)
{
	ui_graph_invalidate(u);
}

static int
ui_cell_x(double pt)
{
	return (int)floor(pt / (UI_CW * 72) + 0.5);
}

static int
ui_cell_y(double top, double pt)
{
	return (int)floor((top - pt) / (UI_CH * 72) + 0.5);
}

static void
ui_add_pt(struct ui_gedge *ge, int *cap, int x, int y)
{
	if (ge->n > 0 && ge->pt[ge->n - 1][0] == x && ge->pt[ge->n - 1][1] == y)
		return;
	if (ge->n == *cap) {
		*cap = *cap ? 2 * *cap : 32;
		ge->pt = sl_xrealloc(ge->pt, *cap * sizeof *ge->pt);
	}
	ge->pt[ge->n][0] = x;
	ge->pt[ge->n][1] = y;
	ge->n++;
}

/* Graphviz warnings would land on the screen the explorer owns. */
static int
ui_gv_quiet(char *msg)
{
	return 0;
}

/* Lays the neighbourhood of op out with dot; NULL with why in err. */
static struct ui_gdraw *
ui_gdraw_make(const ui *u, int op, bool compact, bool lr, char *err, size_t len)
{
	Agraph_t *g;
	GVC_t *gvc;
	Agnode_t *n;
	Agedge_t *e;
	struct ui_gdraw *d;
	double top, left;
	int cap, *idx;

	agseterrf(ui_gv_quiet);
	agseterr(AGMAX);
	g = ui_sgraph_build(u->m.space, u->m.sol.choice, &op, 1, 1,
	    compact ? UI_SG_CELLS_COMPACT : UI_SG_CELLS, lr);
	gvc = ui_gvc();
	if (gvc == NULL || gvLayout(gvc, g, "dot") != 0) {
		snprintf(err, len, "%s", _("Graphviz could not lay the graph out"));
		agclose(g);
		return NULL;
	}
	d = sl_xcalloc(1, sizeof *d);
	d->op = op;
	d->compact = compact;
	top = GD_bb(g).UR.y;
	left = GD_bb(g).LL.x;
	d->bw = ui_cell_x(GD_bb(g).UR.x - left) + 1;
	d->bh = ui_cell_y(top, GD_bb(g).LL.y) + 1;
	d->nodes = sl_xcalloc(agnnodes(g), sizeof *d->nodes);
	d->edges = sl_xcalloc(agnedges(g), sizeof *d->edges);
	idx = sl_xcalloc(u->m.n, sizeof(int));
	for (n = agfstnode(g); n != NULL; n = agnxtnode(g, n)) {
		struct ui_gnode *gn = &d->nodes[d->n_nodes];
		double w = ND_width(n) * 72, h = ND_height(n) * 72;
		gn->op = atoi(agnameof(n) + 1);
		gn->w = (int)floor(ND_width(n) / UI_CW + 0.5);
		gn->h = (int)floor(ND_height(n) / UI_CH + 0.5);
		gn->x = ui_cell_x(ND_coord(n).x - w / 2 - left);
		gn->y = ui_cell_y(top, ND_coord(n).y + h / 2);
		idx[gn->op] = d->n_nodes++;
	}
	for (n = agfstnode(g); n != NULL; n = agnxtnode(g, n)) {
		for (e = agfstout(g, n); e != NULL; e = agnxtout(g, e)) {
			struct ui_gedge *ge = &d->edges[d->n_edges++];
			cap = 0;
			ge->src = idx[atoi(agnameof(agtail(e)) + 1)];
			ge->dst = idx[atoi(agnameof(aghead(e)) + 1)];
			ge->lx = -1;
			ui_edge_label(u->m.space, atoi(agnameof(e) + 1), u->m.sol.choice,
			    ge->label, sizeof ge->label);
			/* where the spline leaves the tail and meets the head */
			if (ED_spl(e) != NULL && ED_spl(e)->size > 0) {
				bezier *bz = &ED_spl(e)->list[0];
				pointf p0 = bz->sflag ? bz->sp : bz->list[0];
				pointf p1 = bz->eflag ? bz->ep : bz->list[bz->size - 1];
				ui_add_pt(ge, &cap, ui_cell_x(p0.x - left),
				    ui_cell_y(top, p0.y));
				ui_add_pt(ge, &cap, ui_cell_x(p1.x - left),
				    ui_cell_y(top, p1.y));
			}
		}
	}
	free(idx);
	gvFreeLayout(gvc, g);
	agclose(g);
	return d;
}

/* ----------------------------------------------------------- drawing */

enum { UI_N = 1, UI_S = 2, UI_E = 4, UI_W = 8 };

static const char *
ui_line_glyph(const ui *u, int m)
{
	static const char *const utf[16] = {
		" ", "│", "│", "│", "─", "└", "┌", "├",
		"─", "┘", "┐", "┤", "─", "┴", "┬", "┼",
	};
	static const char *const asc[16] = {
		" ", "|", "|", "|", "-", "+", "+", "+",
		"-", "+", "+", "+", "-", "+", "+", "+",
	};
	return u->utf8 ? utf[m & 15] : asc[m & 15];
}

static bool
ui_in_box(const struct ui_gdraw *d, int x, int y)
{
	int i;

	for (i = 0; i < d->n_nodes; i++) {
		const struct ui_gnode *n = &d->nodes[i];
		if (x >= n->x && x < n->x + n->w && y >= n->y && y < n->y + n->h)
			return true;
	}
	return false;
}

static void
ui_draw_box(WINDOW *w, const ui *u, const struct ui_gdraw *d,
    const struct ui_gnode *n, int ox, int oy, int ww, int wh)
{
	const sl_space *s = u->m.space;
	int x, y, nw, c = ui_chosen(&u->m, n->op);
	char buf[256];
	attr_t a = n->op == d->op ? u->attr[UI_R_CHOSEN] : A_NORMAL, sa;
	const struct ui_glyphs *gl = u->gl;

#define PUT(yy, xx, str, at) do { int X_ = ox + (xx), Y_ = oy + (yy); \
	if (X_ >= 0 && X_ < ww && Y_ >= 1 && Y_ < wh) \
		ui_put(w, Y_, X_, ww - X_, (str), (at)); } while (0)

	for (y = 0; y < n->h; y++)
		for (x = 0; x < n->w; x++) {
			const char *g = " ";
			if (y == 0 || y == n->h - 1)
				g = x == 0 ? (y == 0 ? gl->ul : gl->ll) :
				    x == n->w - 1 ? (y == 0 ? gl->ur : gl->lr) : gl->h;
			else if (x == 0 || x == n->w - 1)
				g = gl->v;
			PUT(n->y + y, n->x + x, g, a);
		}
	/* the name on the top border, the chosen strategy inside */
	nw = n->w - 2;
	if (ox + n->x + 1 >= 0 && oy + n->y >= 1 && oy + n->y < wh &&
	    ox + n->x + 1 < ww) {
		nw = nw < ww - (ox + n->x + 1) ? nw : ww - (ox + n->x + 1);
		ui_put(w, oy + n->y, ox + n->x + 1, nw, ui_abbrev(ui_op_name(&u->m,
		    n->op), nw, gl->ellipsis, buf, sizeof buf), a | A_BOLD);
	}
	ui_box_strat(s, n->op, c, buf, sizeof buf);
	sa = u->m.pin[n->op] >= 0 ? u->attr[UI_R_PINNED] : u->attr[UI_R_CHOSEN];
	if (oy + n->y + 1 >= 1 && oy + n->y + 1 < wh && ox + n->x + 1 >= 0 &&
	    ox + n->x + 1 < ww)
		ui_put(w, oy + n->y + 1, ox + n->x + 1, n->w - 2 < ww -
		    (ox + n->x + 1) ? n->w - 2 : ww - (ox + n->x + 1), buf, sa);
#undef PUT
}

void
ui_draw_graph(WINDOW *w, ui *u)
{
	int ww = getmaxx(w), wh = getmaxy(w), op = ui_row_op(u), i, j, ox, oy;
	int *mask, *mid, x, y, x0, y0, x1, y1, sx, sy;
	char *used;
	struct ui_gdraw *d;
	char buf[256];
	static const struct { bool compact, lr; } tries[2] = {
		{ false, false }, { true, false }
	};

	werase(w);
	snprintf(buf, sizeof buf, _("Strategy graph around %s"),
	    op < 0 ? "" : ui_op_name(&u->m, op));
	ui_put(w, 0, 0, ww, "", A_NORMAL);
	{
		attr_t a = u->attr[UI_R_HEADER];
		wattr_on(w, a, NULL);
		for (i = 0; i < ww; i++)
			mvwaddch(w, 0, i, ' ');
		wattr_off(w, a, NULL);
		ui_put(w, 0, 1, ww - 2, buf, a);
	}
	if (u->m.space == NULL || op < 0 || !u->m.have_sol) {
		ui_put(w, 2, 1, ww - 2, _("no strategy graph for this problem"),
		    u->attr[UI_R_DIM]);
		return;
	}
	d = u->gdraw;
	if (d == NULL || d->op != op || d->w != ww || d->h != wh) {
		ui_gdraw_free(d);
		u->gdraw = d = NULL;
		for (i = 0; i < 2; i++) {
			char err[128];
			ui_gdraw_free(d);
			d = ui_gdraw_make(u, op, tries[i].compact, tries[i].lr,
			    err, sizeof err);
			if (d == NULL) {
				ui_put(w, 2, 1, ww - 2, err, u->attr[UI_R_ERROR]);
				return;
			}
			if (d->bw <= ww && d->bh <= wh - 1)
				break;
		}
		d->w = ww;
		d->h = wh;
		u->gdraw = d;
	}
	/* Centre the picture; when it does not fit, centre the selection. */
	ox = (ww - d->bw) / 2;
	oy = 1 + (wh - 1 - d->bh) / 2;
	for (i = 0; i < d->n_nodes; i++)
		if (d->nodes[i].op == op) {
			if (d->bw > ww)
				ox = ww / 2 - (d->nodes[i].x + d->nodes[i].w / 2);
			if (d->bh > wh - 1)
				oy = 1 + (wh - 1) / 2 - (d->nodes[i].y + d->nodes[i].h / 2);
		}

	/*
	 * Edges, top to bottom: down from the tail's bottom border to a row
	 * halfway, across, and down into the head's top border with an arrow.
	 * A direction mask per cell, then one glyph per cell; each label sits
	 * beside its edge's middle row where it overlaps nothing.
	 */
	mask = sl_xcalloc((size_t)ww * wh, sizeof(int));
	used = sl_xcalloc((size_t)ww * wh, 1);
	mid = sl_xcalloc(d->n_edges > 0 ? d->n_edges : 1, 3 * sizeof(int));
	for (i = 0; i < d->n_edges; i++) {
		const struct ui_gedge *ge = &d->edges[i];
		const struct ui_gnode *tn = &d->nodes[ge->src], *hn = &d->nodes[ge->dst];
		int px[4], py[4];
		mid[3 * i + 2] = 0;
		if (ge->n < 1)
			continue;
		x0 = ge->pt[0][0];
		x1 = ge->pt[ge->n - 1][0];
		x0 = x0 < tn->x + 1 ? tn->x + 1 : x0 > tn->x + tn->w - 2 ? tn->x + tn->w - 2 : x0;
		x1 = x1 < hn->x + 1 ? hn->x + 1 : x1 > hn->x + hn->w - 2 ? hn->x + hn->w - 2 : x1;
		y0 = tn->y + tn->h;
		y1 = hn->y - 1;
		if (y1 < y0)
			continue;
		px[0] = x0 + ox; py[0] = y0 + oy;
		px[1] = x0 + ox; py[1] = (y0 + y1) / 2 + oy;
		px[2] = x1 + ox; py[2] = (y0 + y1) / 2 + oy;
		px[3] = x1 + ox; py[3] = y1 + oy;
		for (j = 0; j < 3; j++) {
			x = px[j];
			y = py[j];
			while (x != px[j + 1] || y != py[j + 1]) {
				int nx = x, ny = y, m0, m1;
				if (x != px[j + 1]) {
					sx = px[j + 1] > x ? 1 : -1;
					nx += sx;
					m0 = sx > 0 ? UI_E : UI_W;
					m1 = sx > 0 ? UI_W : UI_E;
				} else {
					sy = py[j + 1] > y ? 1 : -1;
					ny += sy;
					m0 = sy > 0 ? UI_S : UI_N;
					m1 = sy > 0 ? UI_N : UI_S;
				}
				if (x >= 0 && x < ww && y >= 1 && y < wh)
					mask[y * ww + x] |= m0;
				if (nx >= 0 && nx < ww && ny >= 1 && ny < wh)
					mask[ny * ww + nx] |= m1;
				x = nx;
				y = ny;
			}
		}
		/* the line enters the head from above */
		if (px[3] >= 0 && px[3] < ww && py[3] >= 1 && py[3] < wh)
			mask[py[3] * ww + px[3]] |= UI_S;
		if (px[0] >= 0 && px[0] < ww && py[0] >= 1 && py[0] < wh)
			mask[py[0] * ww + px[0]] |= UI_N;
		mid[3 * i] = px[3];
		mid[3 * i + 1] = py[1];
		mid[3 * i + 2] = 1;
	}
	for (y = 1; y < wh; y++)
		for (x = 0; x < ww; x++)
			if (mask[y * ww + x] != 0 && !ui_in_box(d, x - ox, y - oy)) {
				ui_put(w, y, x, 1, ui_line_glyph(u, mask[y * ww + x]),
				    u->attr[UI_R_EDGE]);
				used[y * ww + x] = 1;
			}
	for (i = 0; i < d->n_edges; i++) {
		const struct ui_gedge *ge = &d->edges[i];
		const struct ui_gnode *hn = &d->nodes[ge->dst];
		int lw = ui_text_width(ge->label), dy, ok;
		if (mid[3 * i + 2] == 0)
			continue;
		/* the arrow, on the cell above the head's border */
		x = mid[3 * i];
		y = hn->y - 1 + oy;
		if (x >= 0 && x < ww && y >= 1 && y < wh)
			ui_put(w, y, x, 1, u->gl->arrow_d, u->attr[UI_R_EDGE]);
		/* the label right of the last vertical run, on the middle row or next to it */
		for (dy = 0; dy < 6 && lw > 0; dy++) {
			int ly = mid[3 * i + 1] + (dy % 3 == 0 ? 0 : dy % 3 == 1 ? 1 : -1);
			int lx = dy < 3 ? x + 2 : x - 1 - lw;
			if (ly < 1 || ly >= wh || ly >= y)
				continue;
			if (lx + lw > ww)
				lx = ww - lw;
			for (ok = lx >= 0, j = -1; ok && j <= lw; j++) {
				int cx = lx + j;
				if (cx < 0 || cx >= ww)
					continue;
				if (used[ly * ww + cx] || ui_in_box(d, cx - ox, ly - oy))
					ok = 0;
			}
			if (!ok)
				continue;
			ui_put(w, ly, lx, lw, ge->label, u->attr[UI_R_DIM]);
			for (j = 0; j < lw; j++)
				used[ly * ww + lx + j] = 1;
			break;
		}
	}
	free(mid);
	free(used);
	free(mask);
	for (i = 0; i < d->n_nodes; i++)
		ui_draw_box(w, u, d, &d->nodes[i], ox, oy, ww, wh);
}
