/*
 * ui_timeline.c: the memory-over-time panel (key m).  Over the other
 * panels it draws the selected device's timeline of one training step of
 * the plan on screen (timeline.c, optimised order): memory stacked by
 * category per task, the peak marked, a cursor whose task and alive
 * buffers (largest first) are listed below the chart.  Keys inside: Left
 * and Right move the cursor, p jumps to the peak, < and > change the
 * device, any other key closes.  The model builds the timeline off the
 * input thread (ui_model_request_timeline) when the plan or the device
 * changes; until it is there the panel says so, and every key works.
 */
#include "ui.h"

#include <stdlib.h>

struct ui_tl {
	bool open;
	int dev;
	int cur;		/* cursor position (task index in the order) */
	int *idx;		/* scratch: alive buffers (n_bufs of the model's) */
	int n_idx;
	const sl_timeline *shown;	/* the timeline cur belongs to */
};

static const int cat_role[SL_CAT_COUNT] = {
	UI_R_PARAMS, UI_R_GRADS, UI_R_OPTIM, UI_R_ACTS, UI_R_BUFFERS
};

/* Asks the model for the timeline of the plan and device on screen, and
 * puts the cursor at the peak of one that has come. */
static void
tl_refresh(ui *u)
{
	struct ui_tl *t = u->tl;
	const ui_model *m = &u->m;

	if (!ui_model_timeline_current(m, t->dev)) {
		ui_model_request_timeline(&u->m, t->dev);
		t->shown = NULL;
		return;
	}
	if (t->shown == &m->tl)
		return;
	if (t->n_idx < m->tl.n_bufs || t->idx == NULL) {
		free(t->idx);
		t->n_idx = m->tl.n_bufs ? m->tl.n_bufs : 1;
		t->idx = sl_xmalloc(t->n_idx * sizeof *t->idx);
	}
	t->cur = m->tl.peak_pos;
	t->shown = &m->tl;
}

void
ui_timeline_open(ui *u)
{
	if (u->tl == NULL)
		u->tl = sl_xcalloc(1, sizeof *u->tl);
	u->tl->dev = 0;
	u->tl->open = true;
	u->tl->shown = NULL;
	tl_refresh(u);
	u->dirty |= UI_D_ALL;
}

void
ui_timeline_polled(ui *u, unsigned what)
{
	if (!ui_timeline_is_open(u))
		return;
	/* a timeline came, or the plan changed under the open panel */
	if ((what & UI_M_TIMELINE) || (u->tl->shown != NULL &&
	    !ui_model_timeline_current(&u->m, u->tl->dev))) {
		u->tl->shown = NULL;
		tl_refresh(u);
		u->dirty |= UI_D_ALL;
	}
}

void
ui_timeline_free(ui *u)
{
	if (u->tl == NULL)
		return;
	free(u->tl->idx);
	free(u->tl);
	u->tl = NULL;
}

bool
ui_timeline_is_open(const ui *u)
{
	return u->tl != NULL && u->tl->open;
}

bool
ui_timeline_key(ui *u, struct ui_event e)
{
	struct ui_tl *t = u->tl;
	const sl_timeline *tl = t != NULL && u->m.have_tl ? t->shown : NULL;

	if (t == NULL || !t->open)
		return false;
	if (e.fn && e.key == KEY_RESIZE)
		return false;
	if (e.fn && (e.key == KEY_LEFT || e.key == KEY_RIGHT)) {
		if (tl != NULL) {
			t->cur += e.key == KEY_LEFT ? -1 : 1;
			if (t->cur < 0)
				t->cur = 0;
			if (t->cur >= tl->n_tasks)
				t->cur = tl->n_tasks - 1;
		}
	} else if (e.fn && (e.key == KEY_HOME || e.key == KEY_END)) {
		if (tl != NULL)
			t->cur = e.key == KEY_HOME ? 0 : tl->n_tasks - 1;
	} else if (!e.fn && e.key == 'p') {
		if (tl != NULL)
			t->cur = tl->peak_pos;
	} else if (!e.fn && (e.key == '<' || e.key == '>')) {
		int n = u->m.space != NULL ? u->m.space->mesh.n_devices : 1;
		t->dev = (t->dev + (e.key == '<' ? n - 1 : 1)) % n;
		tl_refresh(u);
	} else {
		t->open = false;
	}
	u->dirty |= UI_D_ALL;
	return true;
}

/* Position shown by chart column c of cols: the one with the largest total
 * among those the column covers. */
static int
col_pos(const sl_timeline *tl, int c, int cols)
{
	int lo = (int)((int64_t)c * tl->n_tasks / cols);
	int hi = (int)((int64_t)(c + 1) * tl->n_tasks / cols);
	int best = lo;

	if (hi <= lo)
		hi = lo + 1;
	for (int p = lo; p < hi && p < tl->n_tasks; p++)
		if (tl->total[p] > tl->total[best])
			best = p;
	return best;
}

static int
pos_col(const sl_timeline *tl, int p, int cols)
{
	int c = (int)((int64_t)p * cols / tl->n_tasks);

	return c < cols ? c : cols - 1;
}

void
ui_draw_timeline(WINDOW *w, const ui *u)
{
	const struct ui_tl *t = u->tl;
	/* (the model drops its timeline when the plan's costs change) */
	const sl_timeline *tl = u->m.have_tl ? t->shown : NULL;
	int h = getmaxy(w), width = getmaxx(w);
	int label = 11, cols, chart_h, y0, n_alive, shown, peak_col, cur_col;
	char b1[32], b2[32], b3[32], b4[32], title[512], name[128];

	werase(w);
	if (tl == NULL) {
		ui_put(w, 0, 1, width - 2, _("Memory over time"), u->attr[UI_R_HEADER]);
		if (u->m.tl_busy) {
			snprintf(title, sizeof title, _("building the timeline of "
			    "device %d (any key but Left, Right, p, < and > closes)"),
			    t->dev);
			ui_put(w, 2, 1, width - 2, title, u->attr[UI_R_DIM]);
		} else
			ui_put(w, 2, 1, width - 2, u->m.tl_err, u->attr[UI_R_ERROR]);
		return;
	}
	/* the whole title where it fits; else the peak and where it falls,
	 * cut with an ellipsis if even that is too long */
	sl_task_name(u->m.space, &tl->task[tl->order[tl->peak_pos]], name, sizeof name);
	snprintf(title, sizeof title,
	    _("Memory over time, device %d: peak %s at %s (default order %s), sum %s, reserved %s"),
	    tl->dev, sl_format_bytes(tl->peak, b1, sizeof b1), name,
	    sl_format_bytes(tl->peak_default, b2, sizeof b2),
	    sl_format_bytes(tl->sum, b3, sizeof b3),
	    sl_format_bytes(tl->reserved_peak, b4, sizeof b4));
	if (cli_text_width(title) > width - 2)
		snprintf(title, sizeof title, _("Memory over time, device %d: peak %s at %s"),
		    tl->dev, b1, name);
	wattr_on(w, u->attr[UI_R_HEADER] | A_REVERSE, NULL);
	for (int x = 0; x < width; x++)
		mvwaddch(w, 0, x, ' ');
	wattr_off(w, u->attr[UI_R_HEADER] | A_REVERSE, NULL);
	ui_put_ell(w, 0, 1, width - 2, title, u->attr[UI_R_HEADER] | A_REVERSE,
	    u->gl->ellipsis);

	/* The chart: the upper part, one column per bucket of tasks. */
	cols = width - label - 1;
	chart_h = (h - 4) / 2;
	if (chart_h < 3)
		chart_h = h - 4 > 1 ? h - 4 : 1;
	if (cols < 1 || tl->peak <= 0)
		return;
	y0 = 1 + chart_h;		/* baseline row */
	ui_put(w, 1, 0, label, sl_format_bytes(tl->peak, b1, sizeof b1), A_NORMAL);
	ui_put(w, y0 - 1, 0, label, "0", A_NORMAL);
	peak_col = pos_col(tl, tl->peak_pos, cols);
	cur_col = pos_col(tl, t->cur, cols);
	for (int c = 0; c < cols; c++) {
		int p = col_pos(tl, c, cols);
		double acc = 0;
		int filled = 0;
		for (int cat = 0; cat < SL_CAT_COUNT; cat++) {
			int to;
			acc += (double)tl->live[p][cat];
			to = (int)(acc * chart_h / (double)tl->peak + 0.5);
			if (to > chart_h)
				to = chart_h;
			for (; filled < to; filled++)
				ui_put(w, y0 - 1 - filled, label + c, 1, u->gl->bar[cat],
				    u->attr[cat_role[cat]]);
		}
		if (c == peak_col)
			for (int r = filled; r < chart_h; r++)
				ui_put(w, y0 - 1 - r, label + c, 1, u->gl->marker,
				    u->attr[UI_R_OVER]);
		if (c == cur_col)
			ui_put(w, y0, label + c, 1, u->gl->arrow_u, u->attr[UI_R_CURSOR]);
	}
	/* Legend: the categories' names, short ones when the long do not fit
	 * with the keys, and the keys when there is room for them. */
	{
		const char *keys = _("(Left/Right move, p peak, < > device)");
		int need = 0, x;
		bool full;

		for (int cat = 0; cat < SL_CAT_COUNT; cat++)
			need += 3 + cli_text_width(_(sl_mem_cat_name(cat)));
		full = label + need <= width;
		x = label;
		for (int cat = 0; cat < SL_CAT_COUNT && x < width; cat++) {
			x += ui_put(w, y0 + 1, x, width - x, u->gl->bar[cat],
			    u->attr[cat_role[cat]]);
			x += ui_put(w, y0 + 1, x, width - x, " ", A_NORMAL);
			x += ui_put(w, y0 + 1, x, width - x, full ?
			    _(sl_mem_cat_name(cat)) : ui_cat_short(cat), A_NORMAL);
			x += ui_put(w, y0 + 1, x, width - x, " ", A_NORMAL);
		}
		if (x + 1 + cli_text_width(keys) <= width)
			ui_put(w, y0 + 1, x + 1, width - x - 1, keys, u->attr[UI_R_DIM]);
	}
	/* What is alive at the cursor, largest first. */
	n_alive = sl_timeline_alive(tl, t->cur, t->idx);
	shown = h - (y0 + 3) < n_alive ? h - (y0 + 3) : n_alive;
	if (shown < 0)
		shown = 0;
	sl_task_name(u->m.space, &tl->task[tl->order[t->cur]], name, sizeof name);
	sl_format_bytes(tl->total[t->cur], b1, sizeof b1);
	if (shown < n_alive) {
		snprintf(title, sizeof title,
		    _("%s (%d of %d): %s alive, largest first (%d of %d shown)"),
		    name, t->cur + 1, tl->n_tasks, b1, shown, n_alive);
		if (cli_text_width(title) > width - 2)
			snprintf(title, sizeof title, _("%s: %s alive (%d of %d shown)"),
			    name, b1, shown, n_alive);
	}
	else
		snprintf(title, sizeof title, _("%s (%d of %d): %s alive, largest first"),
		    name, t->cur + 1, tl->n_tasks, b1);
	ui_put_ell(w, y0 + 2, 1, width - 2, title, u->attr[UI_R_HEADER],
	    u->gl->ellipsis);
	for (int i = 0, y = y0 + 3; i < shown; i++, y++) {
		const sl_tl_buf *b = &tl->buf[t->idx[i]];
		char line[256], nm[160];
		/* the buffer's name last, its middle giving way when long; the
		 * kind of buffer goes first on a narrow screen */
		bool kind = width >= 76;
		int namew = width - 2 - (kind ? 49 : 28) -
		    (i + 1 == shown && shown < n_alive ? 2 : 0);
		ui_abbrev(b->name, namew > 4 ? namew : 4, u->gl->ellipsis, nm, sizeof nm);
		if (kind)
			snprintf(line, sizeof line, "%12s  %-12s %-20s %s",
			    sl_format_bytes(b->bytes, b1, sizeof b1),
			    sl_mem_cat_name(b->cat), sl_buf_kind_name(b->kind), nm);
		else
			snprintf(line, sizeof line, "%12s  %-12s %s",
			    sl_format_bytes(b->bytes, b1, sizeof b1),
			    sl_mem_cat_name(b->cat), nm);
		ui_put_ell(w, y, 1, width - 2, line, u->attr[cat_role[b->cat]],
		    u->gl->ellipsis);
	}
	/* more follow than the panel holds */
	if (shown > 0 && shown < n_alive)
		ui_put(w, y0 + 2 + shown, width - 1, 1, u->gl->arrow_d,
		    u->attr[UI_R_DIM]);
}
