/*
 * ui_draw.c: the explorer's panels and the text primitives every panel
 * writes with.  Each draw function takes a WINDOW and the state read-only
 * and writes only into that window; the frame (ui_frame.c) calls them for
 * the panels marked dirty.  Widths are counted in terminal columns
 * (wcwidth), so translated text with wide characters stays aligned.
 */
#include "ui.h"

#include <math.h>
#include <stdlib.h>
#include <wctype.h>

static const struct ui_glyphs ui_gl_utf8 = {
	.h = "─", .v = "│", .ul = "┌", .ur = "┐", .ll = "└", .lr = "┘",
	.tee_d = "┬", .tee_u = "┴", .tee_r = "├", .tee_l = "┤", .cross = "┼",
	.closed = "▸", .open = "▾",
	.bar = { "█", "▓", "▒", "░", "▚" },
	.marker = "┃", .knob = "●", .track = "─", .point = "•",
	.current = "◆", .arrow_d = "▼", .arrow_u = "▲", .arrow_r = "▶",
	.arrow_l = "◀", .ok = "✓", .pin = "P", .forbid = "×",
	.ellipsis = "…", .times = "×",
};

static const struct ui_glyphs ui_gl_ascii = {
	.h = "-", .v = "|", .ul = "+", .ur = "+", .ll = "+", .lr = "+",
	.tee_d = "+", .tee_u = "+", .tee_r = "+", .tee_l = "+", .cross = "+",
	.closed = "+", .open = "-",
	.bar = { "P", "G", "O", "A", "B" },
	.marker = "|", .knob = "O", .track = "-", .point = "o",
	.current = "@", .arrow_d = "v", .arrow_u = "^", .arrow_r = ">",
	.arrow_l = "<", .ok = "ok", .pin = "P", .forbid = "x",
	.ellipsis = "~", .times = "x",
};

static void ui_overlay_size(const ui *u, int *rows, int *width);

/* ------------------------------------------------------------------ setup */

void
ui_screen_setup(ui *u, bool color)
{
	static const struct { short fg, bg; } pairs[UI_R_COUNT] = {
		[UI_R_TITLE] = { COLOR_WHITE, COLOR_BLUE },
		[UI_R_HEADER] = { COLOR_CYAN, -1 },
		[UI_R_CHOSEN] = { COLOR_GREEN, -1 },
		[UI_R_PINNED] = { COLOR_YELLOW, -1 },
		[UI_R_FORBIDDEN] = { COLOR_RED, -1 },
		[UI_R_PARAMS] = { COLOR_BLUE, -1 },
		[UI_R_GRADS] = { COLOR_CYAN, -1 },
		[UI_R_OPTIM] = { COLOR_MAGENTA, -1 },
		[UI_R_ACTS] = { COLOR_GREEN, -1 },
		[UI_R_BUFFERS] = { COLOR_YELLOW, -1 },
		[UI_R_OVER] = { COLOR_WHITE, COLOR_RED },
		[UI_R_ERROR] = { COLOR_RED, -1 },
		[UI_R_EDGE] = { COLOR_CYAN, -1 },
	};
	int r;

	u->gl = u->utf8 ? &ui_gl_utf8 : &ui_gl_ascii;
	u->color = color;
	u->mono = !color;
	/* Monochrome: roles by attribute alone. */
	for (r = 0; r < UI_R_COUNT; r++)
		u->attr[r] = A_NORMAL;
	u->attr[UI_R_TITLE] = A_REVERSE;
	u->attr[UI_R_HEADER] = A_BOLD;
	u->attr[UI_R_CURSOR] = A_REVERSE;
	u->attr[UI_R_CHOSEN] = A_BOLD;
	u->attr[UI_R_PINNED] = A_BOLD | A_UNDERLINE;
	u->attr[UI_R_FORBIDDEN] = A_DIM;
	u->attr[UI_R_OVER] = A_REVERSE | A_BOLD;
	u->attr[UI_R_STATUS] = A_REVERSE;
	u->attr[UI_R_ERROR] = A_BOLD;
	u->attr[UI_R_DIM] = A_DIM;
	if (!color || start_color() == ERR)
		return;
	use_default_colors();
	for (r = 0; r < UI_R_COUNT; r++) {
		if (pairs[r].fg == 0 && pairs[r].bg == 0)
			continue;
		init_pair(r, pairs[r].fg, pairs[r].bg);
		u->attr[r] = COLOR_PAIR(r) |
		    (r == UI_R_CHOSEN || r == UI_R_PINNED || r == UI_R_ERROR ||
		    r == UI_R_HEADER || r == UI_R_OVER ? A_BOLD : 0);
	}
}

/* ------------------------------------------------------------------- text */

int
ui_put(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a)
{
	mbstate_t st;
	wchar_t c;
	size_t r, bytes = 0;
	int cw, used = 0;

	char esc[1024];

	if (maxw <= 0 || w == NULL)
		return 0;
	/* names come from files: no control character reaches the terminal */
	s = sl_esc_buf(s, esc, sizeof esc);
	memset(&st, 0, sizeof st);
	while (s[bytes] != '\0') {
		r = mbrtowc(&c, s + bytes, MB_CUR_MAX, &st);
		if (r == (size_t)-1 || r == (size_t)-2 || r == 0)
			break;
		cw = cli_wc_width(c);
		if (used + cw > maxw)
			break;
		used += cw;
		bytes += r;
	}
	if (bytes == 0)
		return 0;
	wattr_on(w, a, NULL);
	mvwaddnstr(w, y, x, s, (int)bytes);
	wattr_off(w, a, NULL);
	return used;
}

/* The byte length of s's longest prefix that fits in maxw columns. */
static size_t
ui_fit_bytes(const char *s, int maxw, int *used)
{
	mbstate_t st;
	wchar_t c;
	size_t r, bytes = 0;
	int cw;

	*used = 0;
	memset(&st, 0, sizeof st);
	while (s[bytes] != '\0') {
		r = mbrtowc(&c, s + bytes, MB_CUR_MAX, &st);
		if (r == (size_t)-1 || r == (size_t)-2 || r == 0)
			break;
		cw = cli_wc_width(c);
		if (*used + cw > maxw)
			break;
		*used += cw;
		bytes += r;
	}
	return bytes;
}

int
ui_put_ell(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a,
    const char *ell)
{
	char buf[1024];
	size_t n;
	int used;

	if (maxw <= 0)
		return 0;
	if (cli_text_width(s) <= maxw)
		return ui_put(w, y, x, maxw, s, a);
	n = ui_fit_bytes(s, maxw - 1, &used);
	if (n >= sizeof buf - 8)
		n = sizeof buf - 8;
	memcpy(buf, s, n);
	snprintf(buf + n, sizeof buf - n, "%s", ell);
	return ui_put(w, y, x, maxw, buf, a);
}

/*
 * s in at most maxw columns: when too long, the middle gives way to an
 * ellipsis, keeping the start and the (longer) end, where names that share a
 * prefix ("layer0.ln1", "layer0.ln2") differ.
 */
const char *
ui_abbrev(const char *s, int maxw, const char *ell, char *out, size_t len)
{
	int tw = cli_text_width(s), head, used;
	size_t hb, tb;
	const char *tail;

	if (tw <= maxw || maxw < 3) {
		snprintf(out, len, "%s", s);
		return out;
	}
	head = (maxw - 1) / 3;
	hb = ui_fit_bytes(s, head, &used);
	/* the tail: drop leading characters until the rest fits */
	for (tail = s + hb; *tail != '\0' &&
	    cli_text_width(tail) > maxw - 1 - used; ) {
		mbstate_t st;
		wchar_t c;
		size_t r;
		memset(&st, 0, sizeof st);
		r = mbrtowc(&c, tail, MB_CUR_MAX, &st);
		tail += r == (size_t)-1 || r == (size_t)-2 || r == 0 ? 1 : r;
	}
	tb = strlen(tail);
	snprintf(out, len, "%.*s%s%.*s", (int)hb, s, ell, (int)tb, tail);
	return out;
}

/*
 * Wraps text into lines of at most width columns, at a space where there is
 * one.  A continued line hangs under the text that follows the line's first
 * gap of two spaces ("name  text"), or under its leading spaces.  fn (when
 * not NULL) gets each line; returns the number of lines.
 */
int
ui_wrap(const char *text, int width, ui_line_fn fn, void *ctx)
{
	const char *p = text, *nl, *end, *q, *r, *brk, *g;
	int idx = 0, hang, indent, avail, used, cw, lead;
	size_t k;

	if (width < 1)
		width = 1;
	while (p != NULL && *p != '\0') {
		nl = strchr(p, '\n');
		end = nl != NULL ? nl : p + strlen(p);
		for (lead = 0; p + lead < end && p[lead] == ' '; lead++)
			;
		hang = lead;
		g = strstr(p + lead, "  ");
		if (g != NULL && g < end) {
			char pre[512];
			while (g < end && *g == ' ')
				g++;
			if ((size_t)(g - p) < sizeof pre) {
				memcpy(pre, p, g - p);
				pre[g - p] = '\0';
				hang = cli_text_width(pre);
			}
		}
		if (hang > width / 2)
			hang = lead < width / 2 ? lead : 0;
		if (end == p && fn != NULL)
			fn(ctx, idx, p, 0, 0);
		if (end == p)
			idx++;
		indent = 0;
		for (q = p; q < end; indent = hang) {
			mbstate_t st;
			wchar_t c;
			avail = width - indent;
			memset(&st, 0, sizeof st);
			for (r = q, used = 0, brk = NULL; r < end; r += k) {
				k = mbrtowc(&c, r, end - r, &st);
				if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
					memset(&st, 0, sizeof st);
					k = 1;
					c = '?';
				}
				cw = cli_wc_width(c);
				if (used + cw > avail)
					break;
				if (c == ' ' && r > q)
					brk = r;
				used += cw;
			}
			if (r >= end)
				k = end - q;
			else if (brk != NULL)
				k = brk - q;
			else
				k = r > q ? (size_t)(r - q) : 1;
			if (fn != NULL)
				fn(ctx, idx, q, k, indent);
			idx++;
			for (q += k; q < end && *q == ' '; q++)
				;
		}
		p = nl != NULL ? nl + 1 : end;
	}
	return idx;
}

/* Fills columns [x, x+n) of row y with spaces in attribute a. */
static void
ui_fill(WINDOW *w, int y, int x, int n, attr_t a)
{
	int i;

	wattr_on(w, a, NULL);
	for (i = 0; i < n; i++)
		mvwaddch(w, y, x + i, ' ');
	wattr_off(w, a, NULL);
}

int
ui_put_right(WINDOW *w, int y, int xend, int maxw, const char *s, attr_t a)
{
	int tw = cli_text_width(s);

	if (tw > maxw)
		tw = maxw;
	return ui_put(w, y, xend - tw, tw, s, a);
}

static void
ui_title_line(WINDOW *w, const ui *u, const char *title, bool focused)
{
	int width = getmaxx(w);
	attr_t a = u->attr[UI_R_HEADER] | (focused ? A_REVERSE : 0);

	ui_fill(w, 0, 0, width, a);
	ui_put_ell(w, 0, 1, width - 2, title, a, u->gl->ellipsis);
}

void
ui_alpha_meaning(double alpha, int width, char *buf, size_t len)
{
	char b[32];

	if (!(alpha > 0)) {
		snprintf(buf, len, "%s", _("alpha 0: memory only, communication is free"));
		if (cli_text_width(buf) > width)
			snprintf(buf, len, "%s", _("alpha 0: memory only"));
		return;
	}
	/* the objective weighs alpha bytes per microsecond of communication */
	sl_format_bytes((int64_t)llround(alpha * 1000), b, sizeof b);
	snprintf(buf, len, _("1 ms of communication per step is worth %s per device"),
	    b);
	if (cli_text_width(buf) > width)
		snprintf(buf, len, _("1 ms comm/step is worth %s/device"), b);
}

void
ui_format_alpha(double alpha, char *buf, size_t len)
{
	if (alpha <= 0)
		snprintf(buf, len, "0");
	else if (alpha >= 10000 || alpha < 0.1)
		snprintf(buf, len, "%.0e", alpha);
	else
		snprintf(buf, len, "%g", alpha);
}

/* ------------------------------------------------------------------- rows */

static bool
ui_layers_alike(const sl_graph *g, int a, int b)
{
	const sl_layer *la = &g->layers[a], *lb = &g->layers[b];
	int i;

	if (la->n_ops != lb->n_ops)
		return false;
	for (i = 0; i < la->n_ops; i++)
		if (g->ops[la->first_op + i].kind != g->ops[lb->first_op + i].kind)
			return false;
	return true;
}

static void
ui_row_add(ui *u, struct ui_row r)
{
	if (u->n_rows == u->cap_rows) {
		u->cap_rows = u->cap_rows ? 2 * u->cap_rows : 64;
		u->rows = sl_xrealloc(u->rows, u->cap_rows * sizeof *u->rows);
	}
	u->rows[u->n_rows++] = r;
}

/*
 * Groups runs of identical consecutive layers once (first call), then lays
 * the rows out from each group's fold mode.
 */
void
ui_rows_build(ui *u)
{
	const sl_graph *g = u->m.space != NULL ? u->m.space->g : NULL;
	int i, l, gi, op;
	struct ui_row r;

	if (g != NULL && u->groups == NULL && g->n_layers > 0) {
		u->groups = sl_xcalloc(g->n_layers, sizeof *u->groups);
		u->op_group = sl_xcalloc(g->n_layers, sizeof(int));
		for (l = 0; l < g->n_layers; l++) {
			if (u->n_groups > 0) {
				struct ui_group *pg = &u->groups[u->n_groups - 1];
				int last = pg->first_layer + pg->n_layers - 1;
				if (last == l - 1 && ui_layers_alike(g, pg->first_layer, l) &&
				    g->layers[last].first_op + g->layers[last].n_ops ==
				    g->layers[l].first_op) {
					pg->n_layers++;
					u->op_group[l] = u->n_groups - 1;
					continue;
				}
			}
			u->groups[u->n_groups].first_layer = l;
			u->groups[u->n_groups].n_layers = 1;
			u->groups[u->n_groups].mode = UI_FOLD_ONCE;
			u->op_group[l] = u->n_groups++;
		}
	}
	u->n_rows = 0;
	for (op = 0; op < u->m.n; op++) {
		memset(&r, 0, sizeof r);
		r.group = -1;
		l = g != NULL ? g->ops[op].layer : -1;
		if (l < 0) {
			r.kind = UI_ROW_OP;
			r.op = op;
			ui_row_add(u, r);
			continue;
		}
		gi = u->op_group[l];
		if (g->layers[l].first_op != op ||
		    u->groups[gi].first_layer != l)
			continue;
		r.kind = UI_ROW_GROUP;
		r.group = gi;
		ui_row_add(u, r);
		if (u->groups[gi].mode == UI_FOLD_CLOSED)
			continue;
		for (i = 0; i < u->groups[gi].n_layers; i++) {
			const sl_layer *ly = &g->layers[l + i];
			int j;
			if (u->groups[gi].mode == UI_FOLD_ALL &&
			    u->groups[gi].n_layers > 1) {
				memset(&r, 0, sizeof r);
				r.kind = UI_ROW_LAYER;
				r.group = gi;
				r.layer = l + i;
				ui_row_add(u, r);
			}
			for (j = 0; j < ly->n_ops; j++) {
				memset(&r, 0, sizeof r);
				r.kind = UI_ROW_OP;
				r.op = ly->first_op + j;
				r.group = gi;
				r.folded = u->groups[gi].mode == UI_FOLD_ONCE &&
				    u->groups[gi].n_layers > 1;
				ui_row_add(u, r);
			}
			if (u->groups[gi].mode == UI_FOLD_ONCE)
				break;
		}
	}
	if (u->row_cur >= u->n_rows)
		u->row_cur = u->n_rows - 1;
	if (u->row_cur < 0)
		u->row_cur = 0;
	u->dirty |= UI_D_OPS | UI_D_STRATS | UI_D_GRAPH;
}

int
ui_row_op(const ui *u)
{
	const struct ui_row *r;
	const sl_graph *g;

	if (u->n_rows == 0)
		return -1;
	r = &u->rows[u->row_cur];
	if (r->kind == UI_ROW_OP)
		return r->op;
	g = u->m.space->g;
	if (r->kind == UI_ROW_LAYER)
		return g->layers[r->layer].first_op;
	return g->layers[u->groups[r->group].first_layer].first_op;
}

/* Moves the cursor to op, unfolding its group as far as needed. */
void
ui_rows_select_op(ui *u, int op)
{
	int i, l;

	if (u->m.space != NULL && (l = u->m.space->g->ops[op].layer) >= 0) {
		struct ui_group *gr = &u->groups[u->op_group[l]];
		if (l != gr->first_layer)
			gr->mode = UI_FOLD_ALL;
		else if (gr->mode == UI_FOLD_CLOSED)
			gr->mode = UI_FOLD_ONCE;
		ui_rows_build(u);
	}
	for (i = 0; i < u->n_rows; i++)
		if (u->rows[i].kind == UI_ROW_OP && u->rows[i].op == op) {
			u->row_cur = i;
			break;
		}
	u->strat_cur = ui_chosen(&u->m, op) < 0 ? 0 : ui_chosen(&u->m, op);
	u->dirty |= UI_D_OPS | UI_D_STRATS | UI_D_GRAPH;
}

/* -------------------------------------------------------------- the panels */

void
ui_draw_too_small(WINDOW *w, const ui *u)
{
	char buf[256];
	int h = getmaxy(w), width = getmaxx(w), tw;

	werase(w);
	snprintf(buf, sizeof buf, _("terminal too small: %dx%d, need at least %dx%d"),
	    u->cols, u->lines, UI_MIN_COLS, UI_MIN_LINES);
	tw = cli_text_width(buf);
	ui_put(w, h / 2, tw < width ? (width - tw) / 2 : 0, width, buf,
	    u->attr[UI_R_ERROR]);
}

void
ui_draw_title(WINDOW *w, const ui *u)
{
	char buf[512], mesh[64], pbuf[32];
	int width = getmaxx(w);
	const sl_mesh *m = u->m.space != NULL ? &u->m.space->mesh : NULL;

	werase(w);
	ui_fill(w, 0, 0, width, u->attr[UI_R_TITLE]);
	if (m != NULL) {
		if (m->n_axes == 2)
			snprintf(mesh, sizeof mesh, "%d%s%d", m->axes[0].size,
			    u->gl->times, m->axes[1].size);
		else
			snprintf(mesh, sizeof mesh, "%d", m->axes[0].size);
		{
			double pc = (double)sl_graph_param_count(u->m.space->g);
			if (pc >= 1e9)
				snprintf(pbuf, sizeof pbuf, "%.2fB", pc / 1e9);
			else if (pc >= 1e6)
				snprintf(pbuf, sizeof pbuf, "%.1fM", pc / 1e6);
			else
				snprintf(pbuf, sizeof pbuf, "%.0fK", pc / 1e3);
		}
		{
			const sl_recipe *r = &u->m.space->opts.recipe;
			snprintf(buf, sizeof buf, _("shardlab %s %s %s %d ops %s mesh %s %s %s %s params %s %s %s recompute %s"),
			    u->gl->h, u->m.space->g->name, u->gl->h, u->m.n, u->gl->h, mesh,
			    m->hw.name, u->gl->h, pbuf, u->gl->h,
			    sl_attention_name(r->attention), sl_precision_name(r->precision),
			    sl_recompute_name(u->m.recompute));
		}
	} else {
		snprintf(buf, sizeof buf, _("shardlab %s %s %s %d nodes"),
		    u->gl->h, u->m.prob->name ? u->m.prob->name : u->m.source,
		    u->gl->h, u->m.n);
	}
	ui_put_ell(w, 0, 1, width - 12, buf, u->attr[UI_R_TITLE], u->gl->ellipsis);
	ui_put_right(w, 0, width - 1, 11, _("? help"), u->attr[UI_R_TITLE]);
}

/* Strategy s of a, by name, in b (-1 when b has none of that name). */
static int
ui_strat_in(const ui *u, int a, int s, int b)
{
	const char *nm = ui_strat_name(&u->m, a, s);
	int t;

	if (s < ui_op_k(&u->m, b) && strcmp(ui_strat_name(&u->m, b, s), nm) == 0)
		return s;
	for (t = 0; t < ui_op_k(&u->m, b); t++)
		if (strcmp(ui_strat_name(&u->m, b, t), nm) == 0)
			return t;
	return -1;
}

/* Whether operators a and b carry the same pin and forbids (by name). */
static bool
ui_same_constraints(const ui *u, int a, int b)
{
	int s, t, na = 0, nb = 0;

	if ((u->m.pin[a] < 0) != (u->m.pin[b] < 0))
		return false;
	if (u->m.pin[a] >= 0 && ui_strat_in(u, a, u->m.pin[a], b) != u->m.pin[b])
		return false;
	for (s = 0; s < ui_op_k(&u->m, a); s++) {
		if (!u->m.forbid[a][s])
			continue;
		na++;
		t = ui_strat_in(u, a, s, b);
		if (t < 0 || !u->m.forbid[b][t])
			return false;
	}
	for (s = 0; s < ui_op_k(&u->m, b); s++)
		nb += u->m.forbid[b][s];
	return na == nb;
}

/* Strategy shown on an operator row: the chosen one, or "mixed" when the
 * folded layers differ in what they chose or in their pins and forbids. */
static const char *
ui_row_strategy(const ui *u, const struct ui_row *r, bool *mixed)
{
	int same[4096], n, i, c = ui_chosen(&u->m, r->op);

	*mixed = false;
	if (c < 0)
		return "";
	if (r->folded && u->m.n <= 4096) {
		n = ui_same_position(&u->m, r->op, same);
		for (i = 0; i < n && !*mixed; i++)
			if (strcmp(ui_strat_name(&u->m, same[i], ui_chosen(&u->m, same[i])),
			    ui_strat_name(&u->m, r->op, c)) != 0 ||
			    !ui_same_constraints(u, r->op, same[i]))
				*mixed = true;
	}
	return *mixed ? _("mixed") : ui_strat_name(&u->m, r->op, c);
}

void
ui_draw_ops(WINDOW *w, const ui *u)
{
	const sl_graph *g = u->m.space != NULL ? u->m.space->g : NULL;
	int h = getmaxy(w), width = getmaxx(w) - 1, y, i, x, nf, s;
	char buf[256], marks[32];
	const struct ui_row *r;
	attr_t a;
	bool mixed;

	werase(w);
	snprintf(buf, sizeof buf, _("Operators (%d)"), u->m.n);
	ui_title_line(w, u, buf, u->focus == UI_FOCUS_OPS);
	for (y = 0; y < h; y++)
		ui_put(w, y, width, 1, u->gl->v, u->attr[UI_R_DIM]);
	for (y = 1, i = u->row_top; y < h && i < u->n_rows; y++, i++) {
		r = &u->rows[i];
		a = i == u->row_cur ? u->attr[UI_R_CURSOR] : A_NORMAL;
		if (i == u->row_cur)
			ui_fill(w, y, 0, width, a);
		if (r->kind == UI_ROW_GROUP) {
			const struct ui_group *gr = &u->groups[r->group];
			const char *first = g->layers[gr->first_layer].name;
			const char *last = g->layers[gr->first_layer + gr->n_layers - 1].name;
			if (gr->n_layers > 1)
				snprintf(buf, sizeof buf, "%s %s..%s %s%d",
				    gr->mode == UI_FOLD_CLOSED ? u->gl->closed : u->gl->open,
				    first, last, u->gl->times, gr->n_layers);
			else
				snprintf(buf, sizeof buf, "%s %s",
				    gr->mode == UI_FOLD_CLOSED ? u->gl->closed : u->gl->open,
				    first);
			ui_put(w, y, 0, width, buf, a | u->attr[UI_R_HEADER]);
			continue;
		}
		if (r->kind == UI_ROW_LAYER) {
			snprintf(buf, sizeof buf, "  %s %s", u->gl->h,
			    g->layers[r->layer].name);
			ui_put(w, y, 0, width, buf, a | u->attr[UI_R_DIM]);
			continue;
		}
		x = r->group >= 0 ? 2 : 0;
		if (r->group >= 0 && u->groups[r->group].mode == UI_FOLD_ALL &&
		    u->groups[r->group].n_layers > 1)
			x = 4;
		/* marks: P pinned, xN forbidden */
		marks[0] = '\0';
		for (nf = 0, s = 0; s < ui_op_k(&u->m, r->op); s++)
			nf += u->m.forbid[r->op][s];
		if (u->m.pin[r->op] >= 0)
			snprintf(marks, sizeof marks, "%s", u->gl->pin);
		if (nf > 0)
			snprintf(marks + strlen(marks), sizeof marks - strlen(marks),
			    "%s%s%d", marks[0] ? " " : "", u->gl->forbid, nf);
		const char *st = ui_row_strategy(u, r, &mixed);
		int sw = cli_text_width(st), mw = cli_text_width(marks);
		int namew = width - x - sw - (mw ? mw + 1 : 0) - 2;
		if (namew < 4)
			namew = 4;
		ui_put(w, y, x, namew, ui_abbrev(ui_op_name(&u->m, r->op), namew,
		    u->gl->ellipsis, buf, sizeof buf), a);
		x = width - 1 - sw - (mw ? mw + 1 : 0);
		if (x > 0) {
			ui_put(w, y, x, sw, st, a | (mixed ? u->attr[UI_R_DIM] :
			    u->attr[UI_R_CHOSEN]));
			if (mw)
				ui_put(w, y, x + sw + 1, mw, marks,
				    a | u->attr[UI_R_PINNED]);
		}
	}
	/* rows above and below the window: marks on the separator */
	if (u->row_top > 0 && h > 1)
		ui_put(w, 1, width, 1, u->gl->arrow_u, u->attr[UI_R_DIM]);
	if (u->row_top + h - 1 < u->n_rows && h > 1)
		ui_put(w, h - 1, width, 1, u->gl->arrow_d, u->attr[UI_R_DIM]);
}

void
ui_draw_strats(WINDOW *w, const ui *u)
{
	int h = getmaxy(w), width = getmaxx(w), op = ui_row_op(u), y, s, k, c;
	int col_mem, col_comm, col_spec, mw, cw, specw = 0;
	char buf[256], mb[32], nb[32], sp[64];
	const char *spec_head = NULL;
	sl_mem mem;
	sl_comm comm;
	attr_t a;
	int64_t ns;

	werase(w);
	if (op < 0) {
		ui_title_line(w, u, _("Strategies"), false);
		return;
	}
	if (u->m.space != NULL && u->m.space->g->ops[op].kind == SL_OP_EXPERTS) {
		/* a mixture's experts: how many, and how many a device holds
		 * under the chosen plan (e explains where each lives) */
		const sl_op *o = &u->m.space->g->ops[op];
		const sl_space_op *so = &u->m.space->ops[op];
		int64_t E = u->m.space->g->tensors[o->in[2]].dims[0], parts = 1;
		int c0 = ui_chosen(&u->m, op);
		for (int l = 0; c0 >= 0 && l < so->bind->n_loop; l++)
			if (so->bind->role[l] == SL_LOOP_EXPERT)
				parts = sl_axes_parts(&u->m.space->mesh,
				    so->strat[c0].loop_axes[l]);
		snprintf(buf, sizeof buf, _("Strategies of %s (%lld experts, top-%d; "
		    "%lld a device)"), ui_op_name(&u->m, op), (long long)E, o->topk,
		    (long long)(E / parts));
	} else if (u->m.space != NULL)
		snprintf(buf, sizeof buf, _("Strategies of %s (%s)"),
		    ui_op_name(&u->m, op), sl_op_kind_name(u->m.space->g->ops[op].kind));
	else
		snprintf(buf, sizeof buf, _("Strategies of %s"), ui_op_name(&u->m, op));
	ui_title_line(w, u, buf, u->focus == UI_FOCUS_STRATS);
	k = ui_op_k(&u->m, op);
	col_mem = cli_text_width(_("strategy")) + 4;
	for (s = 0; s < k; s++)
		if (cli_text_width(ui_strat_name(&u->m, op, s)) + 4 > col_mem)
			col_mem = cli_text_width(ui_strat_name(&u->m, op, s)) + 4;
	if (col_mem > 20)
		col_mem = 20;
	/* number columns: wide enough for "1023.99 MiB" and their headings */
	mw = cli_text_width(_("mem/device")) + 1;
	mw = mw < 11 ? 11 : mw > 16 ? 16 : mw;
	cw = cli_text_width(_("comm/step")) + 1;
	cw = cw < 11 ? 11 : cw > 16 ? 16 : cw;
	if (col_mem + mw + cw + 1 > width)
		col_mem = width - mw - cw - 1 < 8 ? 8 : width - mw - cw - 1;
	col_comm = col_mem + mw + 1;
	col_spec = col_comm + cw;
	/* the output spec column only when every spec fits whole */
	if (u->m.space != NULL) {
		const sl_op *o = &u->m.space->g->ops[op];
		const sl_tensor *t = &u->m.space->g->tensors[o->out[0]];
		for (s = 0; s < k; s++) {
			sl_spec_format(&u->m.space->ops[op].strat[s].spec[o->n_in],
			    t->rank, sp, sizeof sp);
			if (cli_text_width(sp) > specw)
				specw = cli_text_width(sp);
		}
		spec_head = _("output spec");
		if (cli_text_width(spec_head) > width - col_spec - 1)
			spec_head = _("spec");
		if (specw > width - col_spec - 1 ||
		    cli_text_width(spec_head) > width - col_spec - 1)
			spec_head = NULL;
	}
	ui_put(w, 1, 3, col_mem - 3, _("strategy"), u->attr[UI_R_DIM]);
	if (u->m.space != NULL) {
		ui_put_right(w, 1, col_mem + mw, mw, _("mem/device"), u->attr[UI_R_DIM]);
		ui_put_right(w, 1, col_comm + cw - 1, cw - 1, _("comm/step"), u->attr[UI_R_DIM]);
	} else {
		ui_put_right(w, 1, col_mem + mw, mw, _("cost"), u->attr[UI_R_DIM]);
	}
	if (spec_head != NULL)
		ui_put(w, 1, col_spec + 1, width - col_spec - 1, spec_head,
		    u->attr[UI_R_DIM]);
	k = ui_op_k(&u->m, op);
	c = ui_chosen(&u->m, op);
	for (y = 2, s = u->strat_top; y < h && s < k; y++, s++) {
		a = A_NORMAL;
		if (u->m.forbid[op][s])
			a = u->attr[UI_R_FORBIDDEN];
		else if (s == c)
			a = u->attr[UI_R_CHOSEN];
		if (s == u->strat_cur && u->focus == UI_FOCUS_STRATS)
			a |= A_REVERSE;
		else if (s == u->strat_cur)
			a |= A_UNDERLINE;
		if (a & (A_REVERSE | A_UNDERLINE))
			ui_fill(w, y, 0, width, a);
		ui_put(w, y, 0, 1, s == c ? u->gl->knob : " ", a);
		ui_put(w, y, 1, 1, u->m.pin[op] == s ? u->gl->pin :
		    u->m.forbid[op][s] ? u->gl->forbid : " ", a);
		ui_put(w, y, 3, col_mem - 4, ui_abbrev(ui_strat_name(&u->m, op, s),
		    col_mem - 4, u->gl->ellipsis, buf, sizeof buf), a);
		if (u->m.space != NULL) {
			sl_node_cost(u->m.space, op, s, NULL, &mem, &comm);
			ns = 0;
			for (int i = 0; i < SL_COLL_COUNT; i++)
				ns += comm.ns[i];
			sl_format_bytes(sl_mem_total(&mem), mb, sizeof mb);
			sl_format_ns(ns, nb, sizeof nb);
		} else {
			snprintf(mb, sizeof mb, "%lld",
			    (long long)u->m.prob->cost[op][s]);
			nb[0] = '\0';
		}
		ui_put_right(w, y, col_mem + mw, mw, mb, a);
		ui_put_right(w, y, col_comm + cw - 1, cw - 1, nb, a);
		if (spec_head != NULL) {
			const sl_op *o = &u->m.space->g->ops[op];
			const sl_tensor *t = &u->m.space->g->tensors[o->out[0]];
			sl_spec_format(&u->m.space->ops[op].strat[s].spec[o->n_in],
			    t->rank, sp, sizeof sp);
			ui_put(w, y, col_spec + 1, width - col_spec - 1, sp, a);
		}
	}
	if (s < k)
		ui_put_right(w, h - 1, width, width, u->gl->arrow_d, u->attr[UI_R_DIM]);
	if (u->strat_top > 0 && h > 2)
		ui_put_right(w, 2, width, width, u->gl->arrow_u, u->attr[UI_R_DIM]);
}

static const enum ui_role ui_cat_role[5] = {
	UI_R_PARAMS, UI_R_GRADS, UI_R_OPTIM, UI_R_ACTS, UI_R_BUFFERS
};
static const char *const ui_cat_name[5] = {
	N_("params"), N_("grads"), N_("optim"), N_("acts"), N_("buffers")
};

const char *
ui_cat_short(int cat)
{
	return cat >= 0 && cat < 5 ? _(ui_cat_name[cat]) : "?";
}

static void
ui_mem_cats(const sl_mem *m, int64_t v[5])
{
	v[0] = m->params;
	v[1] = m->grads;
	v[2] = m->optim;
	v[3] = m->acts;
	v[4] = m->buffers;
}

/* Rows of the memory panel: devices with equal memory share a row. */
int
ui_dev_rows(const ui *u, int *first, int *count, int max)
{
	int d, n = 0;

	if (!u->m.have_ev)
		return 0;
	for (d = 0; d < u->m.ev.n_devices; d++) {
		if (n > 0 && memcmp(&u->m.ev.dev[d], &u->m.ev.dev[first[n - 1]],
		    sizeof(sl_mem)) == 0 && first != NULL) {
			count[n - 1]++;
			continue;
		}
		if (n == max)
			break;
		first[n] = d;
		count[n] = 1;
		n++;
	}
	return n;
}

/* One bar cell of category c (or the free track when c < 0). */
static void
ui_bar_cell(WINDOW *w, const ui *u, int y, int x, int c, bool over)
{
	const char *ch;
	attr_t a;

	if (c < 0) {
		ui_put(w, y, x, 1, u->utf8 ? "·" : ".", u->attr[UI_R_DIM]);
		return;
	}
	ch = u->color && u->utf8 ? u->gl->bar[0] : u->gl->bar[c];
	a = u->attr[ui_cat_role[c]];
	/* past the capacity: reverse video, which monochrome shows as well */
	if (over)
		a = u->attr[UI_R_OVER];
	ui_put(w, y, x, 1, ch, a);
}

/* Columns of the measured figure beside each predicted total. */
#define UI_MEAS_W 11

/*
 * The measured device memory (cudaMemGetInfo) of a row of devices: the
 * largest of the row, or why one of them did not run.
 */
static void
ui_mem_measured(WINDOW *w, const ui *u, int y, int xend, int first, int cnt)
{
	char b[32];
	int64_t m = 0;
	int d;

	for (d = first; d < first + cnt && d < u->m.vres.n_devices; d++) {
		if (!u->m.vres.dev[d].ok) {
			ui_put_right(w, y, xend, UI_MEAS_W - 1, _("failed"),
			    u->attr[UI_R_ERROR]);
			return;
		}
		if (u->m.vres.dev[d].meminfo_delta > m)
			m = u->m.vres.dev[d].meminfo_delta;
	}
	sl_format_bytes(m, b, sizeof b);
	ui_put_right(w, y, xend, UI_MEAS_W - 1, b, u->attr[UI_R_CHOSEN]);
}

/* What the line below the bars adds about validation (v). */
static void
ui_mem_vnote(const ui *u, char *buf, size_t len)
{
	double me, te;
	int failed;

	if (u->m.vrunning) {
		snprintf(buf, len, "%s", _("validating..."));
		return;
	}
	if (!u->m.have_vres) {
		buf[0] = '\0';
		return;
	}
	if (!ui_vres_current(&u->m)) {
		snprintf(buf, len, "%s", _("measured: an earlier plan (v)"));
		return;
	}
	ui_vres_errors(&u->m, &me, &te, &failed);
	snprintf(buf, len, _("error: memory %+.1f%%, step time %+.1f%%"), me, te);
}

void
ui_draw_mem(WINDOW *w, const ui *u)
{
	int h = getmaxy(w), width = getmaxx(w), y, i, j, c, n, bw, x0, cap_x, xr;
	bool vshow;
	int first[64], cnt[64];
	char buf[512], b1[32], b3[32], lab[32];
	int64_t v[5], cum, scale, cap, total;

	werase(w);
	if (!u->m.have_ev) {
		ui_title_line(w, u, _("Memory per device"), false);
		if (u->m.have_sol && u->m.prob->usage_limit >= 0) {
			snprintf(buf, sizeof buf, _("peak usage %lld of %lld"),
			    (long long)sl_problem_peak_usage(u->m.prob, u->m.sol.choice),
			    (long long)u->m.prob->usage_limit);
			ui_put(w, 1, 1, width - 2, buf, A_NORMAL);
		} else {
			ui_put(w, 1, 1, width - 2,
			    _("no per-device breakdown for this problem"),
			    u->attr[UI_R_DIM]);
		}
		return;
	}
	cap = u->m.space->mesh.hw.memory_bytes;
	vshow = ui_vres_current(&u->m);
	if (vshow)
		snprintf(buf, sizeof buf, _("Memory: predicted, measured on %s"),
		    u->m.vres.gpu);
	else {
		char mt[128];
		if (u->m.mem_limit > 0)
			snprintf(buf, sizeof buf, _("Memory per device (limit %s%s): %s"),
			    sl_format_bytes(u->m.mem_limit, b1, sizeof b1),
			    u->m.fit_none ? _(", none fits") : "",
			    sl_hw_memory_text(&u->m.space->mesh.hw, mt, sizeof mt));
		else
			snprintf(buf, sizeof buf, _("Memory per device: %s"),
			    sl_hw_memory_text(&u->m.space->mesh.hw, mt, sizeof mt));
	}
	ui_title_line(w, u, buf, false);
	{
		/* as much as fits whole: the throughput figures give way first,
		 * then the redundancy; the memory and the step time stay */
		char b4[32], b5[32];
		snprintf(buf, sizeof buf,
		    _("max %s  redundant %s  step %s  %s tokens/s  MFU %.0f%%"),
		    sl_format_bytes(u->m.ev.max_total, b1, sizeof b1),
		    sl_format_bytes(u->m.ev.redundant, b3, sizeof b3),
		    sl_format_ns(u->m.ev.step_ns, b4, sizeof b4),
		    sl_format_rate(u->m.ev.tokens_per_s, b5, sizeof b5),
		    100 * u->m.ev.mfu);
		/* recomputation: the hardware's utilisation beside the model's */
		if (u->m.ev.hw_flops > u->m.ev.model_flops) {
			size_t n = strlen(buf);
			snprintf(buf + n, sizeof buf - n, _("  HFU %.0f%%"),
			    100 * u->m.ev.hfu);
		}
		if (cli_text_width(buf) > width)
			snprintf(buf, sizeof buf, _("max %s  redundant %s  step %s"),
			    b1, b3, b4);
		if (cli_text_width(buf) > width)
			snprintf(buf, sizeof buf, _("max %s  step %s  redundant %s"),
			    b1, b4, b3);
	}
	ui_put_ell(w, h - 2, 0, width, buf, A_NORMAL, u->gl->ellipsis);
	n = ui_dev_rows(u, first, cnt, h - 3 < 64 ? h - 3 : 64);
	x0 = 7;
	bw = width - x0 - 13 - (vshow ? UI_MEAS_W : 0);
	if (bw < 4)
		bw = 4;
	scale = u->m.ev.max_total > cap ? u->m.ev.max_total : cap;
	if (scale <= 0)
		scale = 1;
	cap_x = cap > 0 ? (int)((double)cap * bw / scale) : bw;
	for (i = 0, y = 1; i < n && y < h - 2; i++, y++) {
		if (cnt[i] > 1)
			snprintf(lab, sizeof lab, "d%d-%d", first[i],
			    first[i] + cnt[i] - 1);
		else
			snprintf(lab, sizeof lab, "d%d", first[i]);
		ui_put(w, y, 0, x0 - 1, lab, A_NORMAL);
		ui_mem_cats(&u->m.ev.dev[first[i]], v);
		total = sl_mem_total(&u->m.ev.dev[first[i]]);
		/* Cumulative rounding keeps the segments adding up to the total. */
		cum = 0;
		for (c = 0, j = 0; c < 5; c++) {
			int end;
			cum += v[c];
			end = (int)((double)cum * bw / scale + 0.5);
			for (; j < end && j < bw; j++)
				ui_bar_cell(w, u, y, x0 + j, c, j >= cap_x);
		}
		for (; j < bw; j++)
			ui_bar_cell(w, u, y, x0 + j, -1, false);
		/* where the capacity ends, when some device goes past it */
		if (u->m.ev.max_total > cap && cap_x >= 0 && cap_x < bw)
			ui_put(w, y, x0 + cap_x, 1, u->gl->marker,
			    total > cap ? u->attr[UI_R_OVER] : u->attr[UI_R_DIM]);
		sl_format_bytes(total, b1, sizeof b1);
		xr = width - 1 - (vshow ? UI_MEAS_W : 0);
		ui_put_right(w, y, xr, 11, b1,
		    total > cap ? u->attr[UI_R_OVER] : A_BOLD);
		if (vshow)
			ui_mem_measured(w, u, y, width - 1, first[i], cnt[i]);
		if (total > cap)
			ui_put(w, y, width - 1, 1, "!", u->attr[UI_R_OVER]);
	}
	/* devices that found no row: a mark on the last one shown */
	{
		int covered = 0;
		for (j = 0; j < i; j++)
			covered += cnt[j];
		if (i > 0 && covered < u->m.ev.n_devices)
			ui_put(w, y - 1, x0 - 1, 1, u->gl->arrow_d, u->attr[UI_R_DIM]);
	}
	/* validation: on the row above the totals if it is free, else in
	 * place of the legend */
	ui_mem_vnote(u, buf, sizeof buf);
	if (buf[0] != '\0') {
		ui_put(w, y <= h - 3 ? h - 3 : h - 1, 0, width, buf,
		    u->attr[UI_R_DIM]);
		if (y > h - 3)
			return;
	}
	/* legend */
	x0 = 0;
	for (c = 0; c < 5 && x0 < width; c++) {
		ui_bar_cell(w, u, h - 1, x0, c, false);
		x0 += 1;
		x0 += ui_put(w, h - 1, x0, width - x0, _(ui_cat_name[c]),
		    u->attr[UI_R_DIM]) + 1;
	}
	if (u->m.ev.n_over_capacity > 0 && x0 < width) {
		snprintf(buf, sizeof buf, _("%d over capacity"),
		    u->m.ev.n_over_capacity);
		ui_put(w, h - 1, x0 + 1, width - x0 - 1, buf, u->attr[UI_R_OVER]);
	}
}

/*
 * The alpha slider steps between the plans of the frontier (each step a
 * different plan), and below it the frontier itself: memory per device (up)
 * against communication per step, which falls to the right as alpha grows
 * along the slider, so that a plan sits above its stop (plan 1, the least
 * memory, at the left of both); scaled to the plans that fit in device
 * memory, plans over capacity on the top edge, marked.
 */
void
ui_draw_alpha(WINDOW *w, const ui *u)
{
	int h = getmaxy(w), width = getmaxx(w), x0, i, knob, pw, ph, px, py, cur;
	int n_over = 0, sw;
	char buf[256], ab[32], b1[32], b2[32];
	int64_t mlo = INT64_MAX, mhi = INT64_MIN, clo = INT64_MAX, chi = INT64_MIN;
	int64_t cap;

	werase(w);
	if (u->m.space == NULL) {
		ui_title_line(w, u, _("Alpha"), false);
		ui_put(w, 1, 1, width - 2,
		    _("alpha does not apply: this problem's costs are given"),
		    u->attr[UI_R_DIM]);
		return;
	}
	cap = u->m.space->mesh.hw.memory_bytes;
	cur = ui_front_index(&u->m);
	if (cur >= 0) {
		snprintf(buf, sizeof buf, _("Alpha: plan %d of %d  ([ ] next plan)"),
		    cur + 1, u->m.front.n);
		if (cli_text_width(buf) > width - 2)
			snprintf(buf, sizeof buf, _("Alpha: plan %d of %d"), cur + 1,
			    u->m.front.n);
	} else {
		ui_format_alpha(u->m.alpha, ab, sizeof ab);
		snprintf(buf, sizeof buf, _("Alpha %s B/us  ([ ] to move)"), ab);
	}
	ui_title_line(w, u, buf, false);
	/* slider: one stop per frontier plan, least memory at the left */
	sw = width - 2;
	for (i = 0; i < sw; i++)
		ui_put(w, 1, 1 + i, 1, u->gl->track, u->attr[UI_R_DIM]);
	if (cur >= 0) {
		for (i = 0; i < u->m.front.n; i++) {
			px = u->m.front.n > 1 ? i * (sw - 1) / (u->m.front.n - 1) : 0;
			ui_put(w, 1, 1 + px, 1, u->gl->point, cap > 0 &&
			    u->m.front.pt[i].mem > cap ? u->attr[UI_R_OVER] :
			    u->attr[UI_R_DIM]);
		}
		knob = u->m.front.n > 1 ? cur * (sw - 1) / (u->m.front.n - 1) : 0;
	} else {
		knob = (int)((double)u->m.alpha_pos * (sw - 1) /
		    (ui_alpha_positions() - 1) + 0.5);
	}
	ui_put(w, 1, 1 + knob, 1, u->gl->knob, u->attr[UI_R_CHOSEN]);
	ui_alpha_meaning(u->m.alpha, width - 2, buf, sizeof buf);
	ui_put_ell(w, 2, 1, width - 2, buf, u->attr[UI_R_DIM], u->gl->ellipsis);

	ph = h - 4;
	if (ph < 1)
		return;
	if (!u->m.have_front) {
		ui_put(w, 3, 1, width - 2, u->m.front_busy ?
		    _("computing the Pareto frontier...") :
		    _("no Pareto frontier"), u->attr[UI_R_DIM]);
		return;
	}
	/* scale to the plans that fit (to all when none does) */
	for (i = 0; i < u->m.front.n; i++)
		n_over += cap > 0 && u->m.front.pt[i].mem > cap;
	for (i = 0; i <= u->m.front.n; i++) {
		int64_t m, c;
		if (i == u->m.front.n && !u->m.have_ev)
			break;
		m = i == u->m.front.n ? u->m.ev.mem_part : u->m.front.pt[i].mem;
		c = i == u->m.front.n ? u->m.ev.comm_ns : u->m.front.pt[i].comm_ns;
		if (n_over < u->m.front.n && cap > 0 && m > cap)
			continue;
		mlo = m < mlo ? m : mlo;
		mhi = m > mhi ? m : mhi;
		clo = c < clo ? c : clo;
		chi = c > chi ? c : chi;
	}
	if (mlo > mhi)
		return;
	x0 = 11;
	pw = width - x0 - 1;
	if (pw < 4)
		return;
	sl_format_bytes(mhi, b1, sizeof b1);
	ui_put_right(w, 3, x0 - 1, x0 - 1, b1, u->attr[UI_R_DIM]);
	sl_format_bytes(mlo, b1, sizeof b1);
	ui_put_right(w, 3 + ph - 1, x0 - 1, x0 - 1, b1, u->attr[UI_R_DIM]);
	for (i = 0; i < ph; i++)
		ui_put(w, 3 + i, x0 - 1, 1, u->gl->v, u->attr[UI_R_DIM]);
	/* the axis: the most communication at the left, the least at the
	 * right */
	sl_format_ns(chi, b1, sizeof b1);
	sl_format_ns(clo, b2, sizeof b2);
	snprintf(buf, sizeof buf, _("comm %s"), b1);
	if (cli_text_width(buf) + cli_text_width(b2) + 1 > pw)
		snprintf(buf, sizeof buf, "%s", b1);
	ui_put_ell(w, h - 1, x0, pw - cli_text_width(b2) - 1, buf,
	    u->attr[UI_R_DIM], u->gl->ellipsis);
	ui_put_right(w, h - 1, width - 1, pw, b2, u->attr[UI_R_DIM]);
	/* at the top left, away from the plans over capacity (top right) */
	if (n_over > 0 && n_over < u->m.front.n) {
		snprintf(buf, sizeof buf, _("%s %d over capacity"), u->gl->arrow_u,
		    n_over);
		if (cli_text_width(buf) > pw / 2)
			snprintf(buf, sizeof buf, "%s %d", u->gl->arrow_u, n_over);
		ui_put(w, 3, x0 + 1, pw / 2, buf, u->attr[UI_R_OVER]);
	}
	for (i = 0; i <= u->m.front.n; i++) {
		int64_t m, cns;
		bool is_cur = i == u->m.front.n, over;
		if (is_cur && !u->m.have_ev)
			break;
		m = is_cur ? u->m.ev.mem_part : u->m.front.pt[i].mem;
		cns = is_cur ? u->m.ev.comm_ns : u->m.front.pt[i].comm_ns;
		over = m > mhi;
		cns = cns < clo ? clo : cns > chi ? chi : cns;
		px = chi > clo ? (int)((double)(chi - cns) * (pw - 1) / (chi - clo) + 0.5) : 0;
		py = over ? 0 : mhi > mlo ?
		    (int)((double)(mhi - m) * (ph - 1) / (mhi - mlo) + 0.5) : ph - 1;
		ui_put(w, 3 + py, x0 + px, 1, is_cur ? u->gl->current : over ?
		    u->gl->arrow_u : u->gl->point, is_cur ?
		    u->attr[UI_R_CHOSEN] | A_REVERSE : over ? u->attr[UI_R_OVER] :
		    A_NORMAL);
	}
}

/*
 * The key hints: as many as fit whole, chosen by importance, shown in their
 * usual order.
 */
static void
ui_draw_hints(WINDOW *w, const ui *u)
{
	static const struct { const char *text; int prio; } hint[] = {
		{ N_("Tab panel"), 2 },
		{ N_("p/f/u pin/forbid/clear"), 3 },
		{ N_("P/F/U every layer"), 7 },
		{ N_("[ ] alpha"), 4 },
		{ N_("x explain"), 5 },
		{ N_("/ search"), 6 },
		{ N_("e export"), 8 },
		{ N_("? help"), 0 },
		{ N_("q quit"), 1 },
	};
	bool on[SL_ARRAY_LEN(hint)] = { false };
	int width = getmaxx(w), used = 0, p, x = 0, tw;
	size_t i;

	for (p = 0; p < 10; p++)
		for (i = 0; i < SL_ARRAY_LEN(hint); i++) {
			if (hint[i].prio != p)
				continue;
			tw = cli_text_width(_(hint[i].text)) + (used ? 2 : 0);
			if (used + tw <= width) {
				on[i] = true;
				used += tw;
			}
		}
	for (i = 0; i < SL_ARRAY_LEN(hint); i++) {
		if (!on[i])
			continue;
		if (x > 0)
			x += 2;
		x += ui_put(w, 0, x, width - x, _(hint[i].text), u->attr[UI_R_DIM]);
	}
}

void
ui_draw_msg(WINDOW *w, const ui *u)
{
	int width = getmaxx(w), x;
	char buf[1100];
	const char *label = NULL;

	werase(w);
	switch (u->prompt) {
	case UI_P_SEARCH:
		label = _("Search: ");
		break;
	case UI_P_EXPORT:
		label = _("Export plan to: ");
		break;
	case UI_P_SVG:
		label = _("Export graph (SVG) to: ");
		break;
	case UI_P_QUIT:
		label = _("The plan changed since the last export. Quit anyway? (y/n) ");
		break;
	case UI_P_MEMLIMIT:
		label = _("Memory limit per device (empty: none): ");
		break;
	default:
		break;
	}
	if (label != NULL) {
		x = ui_put(w, 0, 0, width, label, A_BOLD);
		if (u->prompt != UI_P_QUIT) {
			wcstombs(buf, u->input, sizeof buf);
			buf[sizeof buf - 1] = '\0';
			x += ui_put(w, 0, x, width - x - 1, buf, A_NORMAL);
		}
		ui_put(w, 0, x, 1, " ", A_REVERSE);
		return;
	}
	if (u->msg[0] != '\0') {
		ui_put_ell(w, 0, 0, width, u->msg, u->msg_error ?
		    u->attr[UI_R_ERROR] : A_NORMAL, u->gl->ellipsis);
		return;
	}
	if (u->text != NULL) {
		int rows, tw, total;
		ui_overlay_size(u, &rows, &tw);
		total = ui_wrap(u->text, tw, NULL, NULL);
		ui_put_ell(w, 0, 0, width, total > rows ?
		    _("Up/Down PgUp/PgDn scroll, any other key closes") :
		    _("any key closes"), u->attr[UI_R_DIM], u->gl->ellipsis);
		return;
	}
	ui_draw_hints(w, u);
}

/*
 * What the background search of a problem the DP cannot take is doing, long
 * and short: running, better plan taken, or finished with nothing better;
 * with the lower bound and the gap when one is proven.
 */
static void
ui_search_text(const ui_model *m, char *buf, size_t size, const char **conf,
    const char **short_conf)
{
	char gap[96] = "";

	if (m->search_bound != INT64_MIN && m->search_bound > 0 &&
	    m->sol.objective >= m->search_bound)
		snprintf(gap, sizeof gap, _(" (bound %lld, gap %.1f%%)"),
		    (long long)m->search_bound, 100.0 *
		    (double)(m->sol.objective - m->search_bound) /
		    (double)m->sol.objective);
	switch (m->search) {
	case UI_SEARCH_RUNNING:
		snprintf(buf, size, _("searching for %g s..."), m->search_limit);
		*short_conf = _("searching...");
		break;
	case UI_SEARCH_IMPROVED:
		snprintf(buf, size, _("search improved the plan%s"), gap);
		*short_conf = _("search improved");
		break;
	case UI_SEARCH_BEST:
		if (m->sol.status == SL_SOLVE_OPTIMAL)
			snprintf(buf, size, "%s", _("search proved the optimum"));
		else
			snprintf(buf, size, _("search found nothing better%s"),
			    gap);
		*short_conf = _("searched");
		break;
	case UI_SEARCH_FAILED:
		snprintf(buf, size, "%s", _("background search failed"));
		*short_conf = _("search failed");
		break;
	default:
		buf[0] = '\0';
		break;
	}
	*conf = buf;
}

void
ui_draw_status(WINDOW *w, const ui *u)
{
	int width = getmaxx(w), x, i;
	char buf[1024], tb[32], cb[64], sb[160];
	const char *conf = "", *short_conf = "", *tail;
	attr_t a = u->attr[UI_R_STATUS];

	werase(w);
	ui_fill(w, 0, 0, width, a);
	if (!u->m.have_sol) {
		ui_put(w, 0, 1, width - 2, u->m.solve_err[0] ? u->m.solve_err :
		    _("no plan"), a);
		return;
	}
	switch (u->m.confirm) {
	case UI_CONF_NONE:
		conf = "";
		break;
	case UI_CONF_RUNNING:
		conf = _("GLPK confirming...");
		break;
	case UI_CONF_YES:
		conf = _("GLPK confirmed");
		break;
	case UI_CONF_DIFFERS:
		conf = _("GLPK DISAGREES");
		break;
	case UI_CONF_TOO_LARGE:
		conf = _("not confirmed (too large for GLPK)");
		short_conf = _("GLPK: too large");
		break;
	case UI_CONF_FAILED:
		conf = _("not confirmed (GLPK failed)");
		short_conf = _("GLPK failed");
		break;
	case UI_CONF_LIMIT:
		conf = _("not confirmed (GLPK time limit)");
		short_conf = _("GLPK: time limit");
		break;
	case UI_CONF_PRECISION:
		conf = _("not confirmed (past GLPK's precision)");
		short_conf = _("GLPK: precision");
		break;
	}
	if (u->m.search != UI_SEARCH_NONE)
		ui_search_text(&u->m, sb, sizeof sb, &conf, &short_conf);
	if (short_conf[0] == '\0')
		short_conf = conf;
	/*
	 * What does not fit goes first: the solve time, then the long form of
	 * the confirmation; the names of changed operators are cut last.
	 */
	snprintf(tb, sizeof tb, "%.2f", u->m.sol.time_ms);
	snprintf(cb, sizeof cb, _("changed (%d):"), u->m.n_changed);
	tail = u->m.n_changed == 0 ? _("plan unchanged") : cb;
	for (i = 0; i < 4; i++) {
		const char *cf = i < 2 ? conf : short_conf;
		if (i == 3)
			snprintf(buf, sizeof buf, _("objective %lld  %s  "),
			    (long long)u->m.sol.objective, cf);
		else if (i == 0)
			snprintf(buf, sizeof buf, _("%s %s  objective %lld  %s ms  %s  "),
			    u->m.dp != NULL ? "DP" : sl_solver_name(u->m.sol.solver),
			    sl_solve_status_name(u->m.sol.status),
			    (long long)u->m.sol.objective, tb, cf);
		else
			snprintf(buf, sizeof buf, _("%s %s  objective %lld  %s  "),
			    u->m.dp != NULL ? "DP" : sl_solver_name(u->m.sol.solver),
			    sl_solve_status_name(u->m.sol.status),
			    (long long)u->m.sol.objective, cf);
		if (cli_text_width(buf) + cli_text_width(tail) <= width - 2)
			break;
	}
	x = 1 + ui_put_ell(w, 0, 1, width - 2, buf, a, u->gl->ellipsis);
	if (x >= width - 2)
		return;
	if (u->m.n_changed == 0) {
		ui_put_ell(w, 0, x, width - x - 1, _("plan unchanged"), a,
		    u->gl->ellipsis);
		return;
	}
	if (u->m.n_changed > 3)
		snprintf(buf, sizeof buf, _("changed (%d):"), u->m.n_changed);
	else
		snprintf(buf, sizeof buf, "%s", _("changed:"));
	for (i = 0; i < u->m.n_changed && strlen(buf) < 600; i++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " %s",
		    ui_op_name(&u->m, u->m.changed[i]));
	ui_put_ell(w, 0, x, width - x - 1, buf, a | A_BOLD, u->gl->ellipsis);
}

void
ui_show_text(ui *u, const char *title, char *text)
{
	free(u->text);
	u->text = text;
	u->text_top = 0;
	u->show_help = false;
	snprintf(u->text_title, sizeof u->text_title, "%s", title);
	u->dirty |= UI_D_ALL;
}

/* The text over the panels: rows it has for lines, and their width. */
static void
ui_overlay_size(const ui *u, int *rows, int *width)
{
	*rows = u->lines - 4 > 1 ? u->lines - 4 : 1;
	*width = u->cols - 2 > 1 ? u->cols - 2 : 1;
}

struct ui_text_ctx {
	WINDOW *w;
	int top, rows, width;
};

static void
ui_text_line(void *ctx, int idx, const char *s, size_t n, int indent)
{
	struct ui_text_ctx *c = ctx;
	char buf[2048];

	if (idx < c->top || idx >= c->top + c->rows)
		return;
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	ui_put(c->w, 1 + idx - c->top, 1 + indent, c->width - indent, buf,
	    A_NORMAL);
}

/* The first line shown: top, but never past the last full page. */
static int
ui_text_top(const ui *u, int total, int rows)
{
	int top = u->text_top;

	ui_scroll_clamp(&top, total, rows);
	return top;
}

void
ui_draw_text(WINDOW *w, const ui *u)
{
	struct ui_text_ctx c;
	char title[512], pos[64];
	int total, rows, width;

	werase(w);
	ui_overlay_size(u, &rows, &width);
	c.w = w;
	c.rows = getmaxy(w) - 1 < rows ? getmaxy(w) - 1 : rows;
	c.width = getmaxx(w) - 2 < width ? getmaxx(w) - 2 : width;
	total = ui_wrap(u->text, c.width, NULL, NULL);
	c.top = ui_text_top(u, total, c.rows);
	pos[0] = '\0';
	if (total > c.rows)
		snprintf(pos, sizeof pos, _("lines %d-%d of %d"), c.top + 1,
		    c.top + c.rows < total ? c.top + c.rows : total, total);
	ui_title_line(w, u, u->text_title, true);
	if (pos[0] != '\0') {
		int pw = cli_text_width(pos);
		attr_t a = u->attr[UI_R_HEADER] | A_REVERSE;
		ui_fill(w, 0, getmaxx(w) - pw - 3, pw + 3, a);
		ui_put(w, 0, getmaxx(w) - pw - 1, pw, pos, a);
	}
	(void)title;
	ui_wrap(u->text, c.width, ui_text_line, &c);
	if (c.top + c.rows < total)
		ui_put(w, getmaxy(w) - 1, getmaxx(w) - 1, 1, u->gl->arrow_d,
		    u->attr[UI_R_DIM]);
	if (c.top > 0 && getmaxy(w) > 1)
		ui_put(w, 1, getmaxx(w) - 1, 1, u->gl->arrow_u, u->attr[UI_R_DIM]);
}

bool
ui_overlay_scroll(ui *u, struct ui_event e)
{
	int rows, width, total;

	ui_overlay_size(u, &rows, &width);
	total = ui_wrap(u->text, width, NULL, NULL);
	if (!ui_scroll_key(e, &u->text_top, total, rows))
		return false;
	u->dirty |= UI_D_ALL;
	return true;
}

/* ------------------------------------------------------------ the scrollers */

/*
 * The scrollers.  A list with a cursor (operators, strategies) keeps the
 * cursor in view; a text (help, explain, reports) scrolls by keys, never
 * past its last full page.
 */
void
ui_scroll_follow(int cur, int *top, int visible)
{
	if (visible < 1)
		visible = 1;
	if (cur < *top)
		*top = cur;
	if (cur >= *top + visible)
		*top = cur - visible + 1;
	if (*top < 0)
		*top = 0;
}

void
ui_scroll_clamp(int *top, int total, int visible)
{
	if (*top > total - visible)
		*top = total - visible;
	if (*top < 0)
		*top = 0;
}

bool
ui_scroll_key(struct ui_event e, int *top, int total, int visible)
{
	int d;

	if (e.fn && e.key == KEY_DOWN)
		d = 1;
	else if (e.fn && e.key == KEY_UP)
		d = -1;
	else if (e.fn && e.key == KEY_NPAGE)
		d = visible > 1 ? visible - 1 : 1;
	else if (e.fn && e.key == KEY_PPAGE)
		d = visible > 1 ? -(visible - 1) : -1;
	else if (e.fn && e.key == KEY_HOME)
		d = -total;
	else if (e.fn && e.key == KEY_END)
		d = total;
	else if (!e.fn && e.key == 'j')
		d = 1;
	else if (!e.fn && e.key == 'k')
		d = -1;
	else
		return false;
	*top += d;
	ui_scroll_clamp(top, total, visible);
	return true;
}
