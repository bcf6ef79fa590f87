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
	buf[0] = '\0';
	if (bytes > 0 && ns > 0)
		snprintf(buf, len, "%s %s", sl_format_bytes(bytes, b1, sizeof b1),
		    sl_format_ns(ns, b2, sizeof b2));
	else if (bytes > 0)
		snprintf(buf, len, "%s", sl_format_bytes(bytes, b1, sizeof b1));
	else if (ns > 0)
		snprintf(buf, len, "%s", sl_format_ns(ns, b2, sizeof b2));
}

/* Strategy names wrapped into lines of at most maxw columns. */
static int
ui_wrap_strats(const sl_space *s, int op, int maxw, int *widest)
{
	int st, lines = 1, col = 0, w;

	*widest = 0;
	for (st = 0; st < s->ops[op].n_strat; st++) {
		w = (int)strlen(s->ops[op].strat[st].name);
		if (col > 0 && col + 1 + w > maxw) {
			lines++;
			col = 0;
		}
		col += (col > 0) + w;
		if (col > *widest)
			*widest = col;
	}
	return lines;
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
ui_sgraph_build(const sl_space *s, const int *choice, int center, int radius,
    enum ui_sgraph_mode mode, bool lr)
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
		agattr(g, AGRAPH, "ranksep", mode == UI_SG_CELLS_COMPACT ?
		    "0.2" : "0.4");
		agattr(g, AGRAPH, "splines", "polyline");
	}

	/* Operators within radius edges of center (all when center < 0). */
	dist = sl_xmalloc(s->g->n_ops * sizeof(int));
	for (i = 0; i < s->g->n_ops; i++)
		dist[i] = center < 0 ? 0 : -1;
	if (center >= 0) {
		dist[center] = 0;
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
		/* Sizes in cells: a border line above and below. */
		w = (int)strlen(s->g->ops[op].name);
		if (mode == UI_SG_CELLS_COMPACT) {
			int cw = choice ? (int)strlen(s->ops[op].strat[choice[op]].name) : 0;
			lines = 1;
			widest = cw;
		} else {
			lines = ui_wrap_strats(s, op, UI_BOX_MAXW - 2, &widest);
		}
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
		if (mode != UI_SG_CELLS_COMPACT && label[0] != '\0')
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
static GVC_t *
ui_gvc(void)
{
	static GVC_t *gvc;

	if (gvc == NULL)
		gvc = gvContext();
	return gvc;
}

int
ui_sgraph_render(Agraph_t *g, const char *format, FILE *fp, sl_error *err)
{
	GVC_t *gvc;
	int rc;

	if (strcmp(format, "dot") == 0) {
		if (agwrite(g, fp) != 0)
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
			    _("could not write the graph"));
		return SL_OK;
	}
	gvc = ui_gvc();
	if (gvc == NULL || gvLayout(gvc, g, "dot") != 0) {
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("Graphviz could not lay the graph out (is the dot plugin installed?)"));
	}
	rc = gvRender(gvc, g, format, fp);
	gvFreeLayout(gvc, g);
	if (rc != 0)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("Graphviz could not render %s"), format);
	return SL_OK;
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
	int i, j, k, cap, *idx;

	agseterrf(ui_gv_quiet);
	agseterr(AGMAX);
	g = ui_sgraph_build(u->space, u->sol.choice, op, 1,
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
	idx = sl_xcalloc(u->n, sizeof(int));
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
			const char *lab = agget(e, "label");
			cap = 0;
			ge->src = idx[atoi(agnameof(agtail(e)) + 1)];
			ge->dst = idx[atoi(agnameof(aghead(e)) + 1)];
			ge->lx = -1;
			if (ED_spl(e) != NULL && ED_spl(e)->size > 0) {
				bezier *bz = &ED_spl(e)->list[0];
				if (bz->sflag)
					ui_add_pt(ge, &cap, ui_cell_x(bz->sp.x - left),
					    ui_cell_y(top, bz->sp.y));
				for (i = 0; i + 3 < bz->size; i += 3) {
					for (k = 0; k <= 16; k++) {
						double t = k / 16.0, a = (1 - t) * (1 - t) * (1 - t),
						    b = 3 * t * (1 - t) * (1 - t), c = 3 * t * t * (1 - t),
						    dd = t * t * t;
						double x = a * bz->list[i].x + b * bz->list[i + 1].x +
						    c * bz->list[i + 2].x + dd * bz->list[i + 3].x;
						double y = a * bz->list[i].y + b * bz->list[i + 1].y +
						    c * bz->list[i + 2].y + dd * bz->list[i + 3].y;
						ui_add_pt(ge, &cap, ui_cell_x(x - left),
						    ui_cell_y(top, y));
					}
				}
				if (bz->size > 0 && bz->size < 4)
					for (j = 0; j < bz->size; j++)
						ui_add_pt(ge, &cap,
						    ui_cell_x(bz->list[j].x - left),
						    ui_cell_y(top, bz->list[j].y));
				if (bz->eflag)
					ui_add_pt(ge, &cap, ui_cell_x(bz->ep.x - left),
					    ui_cell_y(top, bz->ep.y));
			}
			if (lab != NULL && lab[0] != '\0' && ED_label(e) != NULL) {
				snprintf(ge->label, sizeof ge->label, "%s", lab);
				ge->lx = ui_cell_x(ED_label(e)->pos.x - left) -
				    (int)strlen(lab) / 2;
				ge->ly = ui_cell_y(top, ED_label(e)->pos.y);
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
ui_in_rect(const struct ui_gnode *n, int x, int y)
{
	return x >= n->x && x < n->x + n->w && y >= n->y && y < n->y + n->h;
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
	const sl_space *s = u->space;
	int x, y, st, col, line, nw, c = ui_chosen(u, n->op);
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
	/* name on the top border */
	nw = n->w - 2;
	if (ox + n->x + 1 >= 0 && oy + n->y >= 1 && oy + n->y < wh &&
	    ox + n->x + 1 < ww)
		ui_put(w, oy + n->y, ox + n->x + 1,
		    nw < ww - (ox + n->x + 1) ? nw : ww - (ox + n->x + 1),
		    ui_op_name(u, n->op), a | A_BOLD);
	/* strategies inside, wrapped as the builder sized them */
	line = 1;
	col = 1;
	for (st = 0; st < s->ops[n->op].n_strat && line < n->h - 1; st++) {
		const char *nm = s->ops[n->op].strat[st].name;
		int len = (int)strlen(nm);
		if (d->compact && st != c)
			continue;
		if (col > 1 && col + len > n->w - 1) {
			line++;
			col = 1;
			if (line >= n->h - 1)
				break;
		}
		sa = st == c ? u->attr[UI_R_CHOSEN] | A_REVERSE :
		    u->forbid[n->op][st] ? u->attr[UI_R_FORBIDDEN] :
		    u->pin[n->op] == st ? u->attr[UI_R_PINNED] : u->attr[UI_R_DIM];
		if (oy + n->y + line >= 1 && oy + n->y + line < wh &&
		    ox + n->x + col >= 0 && ox + n->x + col < ww)
			ui_put(w, oy + n->y + line, ox + n->x + col,
			    n->w - 1 - col < ww - (ox + n->x + col) ?
			    n->w - 1 - col : ww - (ox + n->x + col), nm, sa);
		col += len + 1;
	}
#undef PUT
}

void
ui_draw_graph(WINDOW *w, ui *u)
{
	int ww = getmaxx(w), wh = getmaxy(w), op = ui_row_op(u), i, j, ox, oy;
	int *mask, *arrow, x, y, x0, y0, x1, y1, sx, sy;
	struct ui_gdraw *d;
	char buf[256];
	static const struct { bool compact, lr; } tries[4] = {
		{ false, true }, { false, false }, { true, true }, { true, false }
	};

	werase(w);
	snprintf(buf, sizeof buf, _("Strategy graph around %s"),
	    op < 0 ? "" : ui_op_name(u, op));
	ui_put(w, 0, 0, ww, "", A_NORMAL);
	{
		attr_t a = u->attr[UI_R_HEADER];
		wattr_on(w, a, NULL);
		for (i = 0; i < ww; i++)
			mvwaddch(w, 0, i, ' ');
		wattr_off(w, a, NULL);
		ui_put(w, 0, 1, ww - 2, buf, a);
	}
	if (u->space == NULL || op < 0 || !u->have_sol) {
		ui_put(w, 2, 1, ww - 2, _("no strategy graph for this problem"),
		    u->attr[UI_R_DIM]);
		return;
	}
	d = u->gdraw;
	if (d == NULL || d->op != op || d->w != ww || d->h != wh) {
		ui_gdraw_free(d);
		u->gdraw = d = NULL;
		for (i = 0; i < 4; i++) {
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

	/* Edges: a direction mask per cell, then one glyph per cell. */
	mask = sl_xcalloc((size_t)ww * wh, sizeof(int));
	arrow = sl_xcalloc(d->n_edges > 0 ? d->n_edges : 1, 3 * sizeof(int));
	for (i = 0; i < d->n_edges; i++) {
		const struct ui_gedge *ge = &d->edges[i];
		const struct ui_gnode *hn = &d->nodes[ge->dst];
		arrow[3 * i + 2] = 0;
		for (j = 0; j + 1 < ge->n; j++) {
			x0 = ge->pt[j][0] + ox;
			y0 = ge->pt[j][1] + oy;
			x1 = ge->pt[j + 1][0] + ox;
			y1 = ge->pt[j + 1][1] + oy;
			/* horizontal first, then vertical, one cell at a time */
			while (x0 != x1 || y0 != y1) {
				int nx = x0, ny = y0, m0, m1;
				if (x0 != x1) {
					sx = x1 > x0 ? 1 : -1;
					nx += sx;
					m0 = sx > 0 ? UI_E : UI_W;
					m1 = sx > 0 ? UI_W : UI_E;
				} else {
					sy = y1 > y0 ? 1 : -1;
					ny += sy;
					m0 = sy > 0 ? UI_S : UI_N;
					m1 = sy > 0 ? UI_N : UI_S;
				}
				if (x0 >= 0 && x0 < ww && y0 >= 1 && y0 < wh)
					mask[y0 * ww + x0] |= m0;
				if (nx >= 0 && nx < ww && ny >= 1 && ny < wh)
					mask[ny * ww + nx] |= m1;
				/* the step that enters the head's box gets the arrow */
				if (!ui_in_rect(hn, x0 - ox, y0 - oy) &&
				    ui_in_rect(hn, nx - ox, ny - oy)) {
					arrow[3 * i] = x0;
					arrow[3 * i + 1] = y0;
					arrow[3 * i + 2] = m0;
				}
				x0 = nx;
				y0 = ny;
			}
		}
	}
	for (y = 1; y < wh; y++)
		for (x = 0; x < ww; x++)
			if (mask[y * ww + x] != 0 && !ui_in_box(d, x - ox, y - oy))
				ui_put(w, y, x, 1, ui_line_glyph(u, mask[y * ww + x]),
				    u->attr[UI_R_EDGE]);
	for (i = 0; i < d->n_edges; i++) {
		const struct ui_gedge *ge = &d->edges[i];
		int m = arrow[3 * i + 2];
		x = arrow[3 * i];
		y = arrow[3 * i + 1];
		if (m != 0 && x >= 0 && x < ww && y >= 1 && y < wh &&
		    !ui_in_box(d, x - ox, y - oy))
			ui_put(w, y, x, 1, m == UI_E ? u->gl->arrow_r :
			    m == UI_W ? u->gl->arrow_l : m == UI_S ? u->gl->arrow_d :
			    u->gl->arrow_u, u->attr[UI_R_EDGE]);
		if (ge->lx >= 0 && ge->ly + oy >= 1 && ge->ly + oy < wh) {
			int lx = ge->lx + ox, skip = lx < 0 ? -lx : 0;
			if ((int)strlen(ge->label) > skip && lx + skip < ww)
				ui_put(w, ge->ly + oy, lx + skip, ww - lx - skip,
				    ge->label + skip, u->attr[UI_R_DIM]);
		}
	}
	free(arrow);
	free(mask);
	for (i = 0; i < d->n_nodes; i++)
		ui_draw_box(w, u, d, &d->nodes[i], ox, oy, ww, wh);
}
