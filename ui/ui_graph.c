/*
 * ui_graph.c: the strategy graph around the selected operator.  The graph
 * is built by the front end's one builder (src/cli/graphviz.c, shared with
 * `shardlab render`) with nodes sized in character cells, laid out by dot,
 * and the coordinates and edge splines are read back and drawn with
 * box-drawing characters (ASCII when the locale is not UTF-8).
 */
/* Graphviz's geom.h and curses both define `box`. */
#define box gv_box
#include <gvc.h>
#undef box
#include "graphviz.h"
#include "ui.h"
#include <math.h>
#include <stdlib.h>

/* A laid-out picture in cells. */
struct ui_gnode {
	int op, x, y, w, h;
};
struct ui_gedge {
	int src, dst;		/* indices into nodes */
	int n;
	int (*pt)[2];		/* cells along the spline (x, y) */
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
	return (int)floor(pt / (CLI_SG_CW * 72) + 0.5);
}

static int
ui_cell_y(double top, double pt)
{
	return (int)floor((top - pt) / (CLI_SG_CH * 72) + 0.5);
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
	g = cli_sgraph_build(u->m.space, u->m.sol.choice, &op, 1, 1,
	    compact ? CLI_SG_CELLS_COMPACT : CLI_SG_CELLS, lr, CLI_SG_ALTS);
	gvc = cli_gvc();
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
		gn->w = (int)floor(ND_width(n) / CLI_SG_CW + 0.5);
		gn->h = (int)floor(ND_height(n) / CLI_SG_CH + 0.5);
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
			cli_sgraph_edge_label(u->m.space, atoi(agnameof(e) + 1), u->m.sol.choice,
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
	cli_sgraph_box_strat(s, n->op, c, buf, sizeof buf);
	sa = u->m.pin[n->op] >= 0 ? u->attr[UI_R_PINNED] : u->attr[UI_R_CHOSEN];
	if (oy + n->y + 1 >= 1 && oy + n->y + 1 < wh && ox + n->x + 1 >= 0 &&
	    ox + n->x + 1 < ww)
		ui_put(w, oy + n->y + 1, ox + n->x + 1, n->w - 2 < ww -
		    (ox + n->x + 1) ? n->w - 2 : ww - (ox + n->x + 1), buf, sa);
#undef PUT
}

/*
 * A picture on a window of ww x wh cells, shifted by ox, oy: per cell the
 * directions of the edge lines through it (mask) and whether something is
 * drawn there (used); per edge the arrow's column, the middle row and
 * whether it is drawn (mid, three ints each).
 */
struct ui_gcanvas {
	WINDOW *w;
	const ui *u;
	const struct ui_gdraw *d;
	int ww, wh, ox, oy;
	int *mask, *mid;
	char *used;
};

/* The title row: "Strategy graph around OP" on the header colour. */
static void
ui_graph_title(WINDOW *w, const ui *u, int op, int ww)
{
	char buf[256];
	attr_t a = u->attr[UI_R_HEADER];

	snprintf(buf, sizeof buf, _("Strategy graph around %s"),
	    op < 0 ? "" : ui_op_name(&u->m, op));
	ui_put(w, 0, 0, ww, "", A_NORMAL);
	wattr_on(w, a, NULL);
	for (int i = 0; i < ww; i++)
		mvwaddch(w, 0, i, ' ');
	wattr_off(w, a, NULL);
	ui_put(w, 0, 1, ww - 2, buf, a);
}

/*
 * The picture around op for a window of ww x wh, laid out again only when
 * either changed: the roomy layout, else the compact one when the roomy
 * one does not fit.  NULL with the error drawn.
 */
static struct ui_gdraw *
ui_graph_layout(WINDOW *w, ui *u, int op, int ww, int wh)
{
	static const struct { bool compact, lr; } tries[2] = {
		{ false, false }, { true, false }
	};
	struct ui_gdraw *d = u->gdraw;

	if (d != NULL && d->op == op && d->w == ww && d->h == wh)
		return d;
	ui_gdraw_free(d);
	u->gdraw = d = NULL;
	for (int i = 0; i < 2; i++) {
		char err[128];
		ui_gdraw_free(d);
		d = ui_gdraw_make(u, op, tries[i].compact, tries[i].lr,
		    err, sizeof err);
		if (d == NULL) {
			ui_put(w, 2, 1, ww - 2, err, u->attr[UI_R_ERROR]);
			return NULL;
		}
		if (d->bw <= ww && d->bh <= wh - 1)
			break;
	}
	d->w = ww;
	d->h = wh;
	u->gdraw = d;
	return d;
}

/*
 * Edge i into the mask: down from the tail's bottom border to a row
 * halfway, across, and down into the head's top border.
 */
static void
ui_graph_edge_mask(struct ui_gcanvas *c, int i)
{
	const struct ui_gdraw *d = c->d;
	const struct ui_gedge *ge = &d->edges[i];
	const struct ui_gnode *tn = &d->nodes[ge->src], *hn = &d->nodes[ge->dst];
	int ww = c->ww, wh = c->wh, *mask = c->mask, *mid = c->mid;
	int px[4], py[4], x, y, x0, y0, x1, y1, sx, sy;

	mid[3 * i + 2] = 0;
	if (ge->n < 1)
		return;
	x0 = ge->pt[0][0];
	x1 = ge->pt[ge->n - 1][0];
	x0 = x0 < tn->x + 1 ? tn->x + 1 : x0 > tn->x + tn->w - 2 ? tn->x + tn->w - 2 : x0;
	x1 = x1 < hn->x + 1 ? hn->x + 1 : x1 > hn->x + hn->w - 2 ? hn->x + hn->w - 2 : x1;
	y0 = tn->y + tn->h;
	y1 = hn->y - 1;
	if (y1 < y0)
		return;
	px[0] = x0 + c->ox; py[0] = y0 + c->oy;
	px[1] = x0 + c->ox; py[1] = (y0 + y1) / 2 + c->oy;
	px[2] = x1 + c->ox; py[2] = (y0 + y1) / 2 + c->oy;
	px[3] = x1 + c->ox; py[3] = y1 + c->oy;
	for (int j = 0; j < 3; j++) {
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

/*
 * Edge i's arrow, on the cell above the head's border, and its label right
 * of the last vertical run, on the middle row or next to it, where it
 * overlaps nothing.
 */
static void
ui_graph_edge_label(struct ui_gcanvas *c, int i)
{
	const struct ui_gdraw *d = c->d;
	const struct ui_gedge *ge = &d->edges[i];
	const struct ui_gnode *hn = &d->nodes[ge->dst];
	int ww = c->ww, wh = c->wh, *mid = c->mid;
	int lw = cli_text_width(ge->label), dy, ok, x, y, j;

	if (mid[3 * i + 2] == 0)
		return;
	x = mid[3 * i];
	y = hn->y - 1 + c->oy;
	if (x >= 0 && x < ww && y >= 1 && y < wh)
		ui_put(c->w, y, x, 1, c->u->gl->arrow_d, c->u->attr[UI_R_EDGE]);
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
			if (c->used[ly * ww + cx] || ui_in_box(d, cx - c->ox, ly - c->oy))
				ok = 0;
		}
		if (!ok)
			continue;
		ui_put(c->w, ly, lx, lw, ge->label, c->u->attr[UI_R_DIM]);
		for (j = 0; j < lw; j++)
			c->used[ly * ww + lx + j] = 1;
		break;
	}
}

void
ui_draw_graph(WINDOW *w, ui *u)
{
	int ww = getmaxx(w), wh = getmaxy(w), op = ui_row_op(u), i, x, y;
	struct ui_gcanvas c;
	struct ui_gdraw *d;

	werase(w);
	ui_graph_title(w, u, op, ww);
	if (u->m.space == NULL || op < 0 || !u->m.have_sol) {
		ui_put(w, 2, 1, ww - 2, _("no strategy graph for this problem"),
		    u->attr[UI_R_DIM]);
		return;
	}
	if ((d = ui_graph_layout(w, u, op, ww, wh)) == NULL)
		return;
	memset(&c, 0, sizeof c);
	c.w = w;
	c.u = u;
	c.d = d;
	c.ww = ww;
	c.wh = wh;
	/* Centre the picture; when it does not fit, centre the selection. */
	c.ox = (ww - d->bw) / 2;
	c.oy = 1 + (wh - 1 - d->bh) / 2;
	for (i = 0; i < d->n_nodes; i++)
		if (d->nodes[i].op == op) {
			if (d->bw > ww)
				c.ox = ww / 2 - (d->nodes[i].x + d->nodes[i].w / 2);
			if (d->bh > wh - 1)
				c.oy = 1 + (wh - 1) / 2 - (d->nodes[i].y + d->nodes[i].h / 2);
		}

	/*
	 * Edges, top to bottom: a direction mask per cell, then one glyph per
	 * cell; each label sits beside its edge's middle row where it
	 * overlaps nothing.
	 */
	c.mask = sl_xcalloc((size_t)ww * wh, sizeof(int));
	c.used = sl_xcalloc((size_t)ww * wh, 1);
	c.mid = sl_xcalloc(d->n_edges > 0 ? d->n_edges : 1, 3 * sizeof(int));
	for (i = 0; i < d->n_edges; i++)
		ui_graph_edge_mask(&c, i);
	for (y = 1; y < wh; y++)
		for (x = 0; x < ww; x++)
			if (c.mask[y * ww + x] != 0 && !ui_in_box(d, x - c.ox, y - c.oy)) {
				ui_put(w, y, x, 1, ui_line_glyph(u, c.mask[y * ww + x]),
				    u->attr[UI_R_EDGE]);
				c.used[y * ww + x] = 1;
			}
	for (i = 0; i < d->n_edges; i++)
		ui_graph_edge_label(&c, i);
	free(c.mid);
	free(c.used);
	free(c.mask);
	for (i = 0; i < d->n_nodes; i++)
		ui_draw_box(w, u, d, &d->nodes[i], c.ox, c.oy, ww, wh);
}
