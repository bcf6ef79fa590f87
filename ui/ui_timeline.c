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
	int label = 11, cols, chart_h, y0, n_alive, peak_col, cur_col;
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
	snprintf(title, sizeof title,
	    _("Memory over time, device %d: peak %s at %s (default order %s), sum %s, reserved %s"),
	    tl->dev, sl_format_bytes(tl->peak, b1, sizeof b1),
	    sl_task_name(u->m.space, &tl->task[tl->order[tl->peak_pos]], name, sizeof name),
	    sl_format_bytes(tl->peak_default, b2, sizeof b2),
	    sl_format_bytes(tl->sum, b3, sizeof b3),
	    sl_format_bytes(tl->reserved_peak, b4, sizeof b4));
	wattr_on(w, u->attr[UI_R_HEADER] | A_REVERSE, NULL);
	for (int x = 0; x < width; x++)
		mvwaddch(w, 0, x, ' ');
	wattr_off(w, u->attr[UI_R_HEADER] | A_REVERSE, NULL);
	ui_put(w, 0, 1, width - 2, title, u->attr[UI_R_HEADER] | A_REVERSE);

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
	/* Legend. */
	{
		int x = label;
		for (int cat = 0; cat < SL_CAT_COUNT && x < width; cat++) {
			x += ui_put(w, y0 + 1, x, width - x, u->gl->bar[cat],
			    u->attr[cat_role[cat]]);
			x += ui_put(w, y0 + 1, x, width - x, " ", A_NORMAL);
			x += ui_put(w, y0 + 1, x, width - x, sl_mem_cat_name(cat), A_NORMAL);
			x += ui_put(w, y0 + 1, x, width - x, "  ", A_NORMAL);
		}
		ui_put(w, y0 + 1, x, width - x, _("(Left/Right move, p peak, < > device)"),
		    u->attr[UI_R_DIM]);
	}
	/* What is alive at the cursor, largest first. */
	snprintf(title, sizeof title, _("%s (%d of %d): %s alive, largest first"),
	    sl_task_name(u->m.space, &tl->task[tl->order[t->cur]], name, sizeof name),
	    t->cur + 1, tl->n_tasks, sl_format_bytes(tl->total[t->cur], b1, sizeof b1));
	ui_put(w, y0 + 2, 1, width - 2, title, u->attr[UI_R_HEADER]);
	n_alive = sl_timeline_alive(tl, t->cur, t->idx);
	for (int i = 0, y = y0 + 3; i < n_alive && y < h; i++, y++) {
		const sl_tl_buf *b = &tl->buf[t->idx[i]];
		char line[256];
		snprintf(line, sizeof line, "%12s  %-12s %-20s %s",
		    sl_format_bytes(b->bytes, b1, sizeof b1), sl_mem_cat_name(b->cat),
		    sl_buf_kind_name(b->kind), b->name);
		ui_put(w, y, 1, width - 2, line, u->attr[cat_role[b->cat]]);
	}
}
