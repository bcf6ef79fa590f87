/*
 * ui_frame.c: the explorer's screen.  ui_layout cuts the terminal into the
 * panels' windows; ui_draw redraws the panels marked dirty (ui_draw.c and
 * one file per overlay panel) and sends them with one doupdate, so a key
 * press costs the cells that changed and nothing more.
 */
#include "ui.h"

#include <string.h>

/* ----------------------------------------------------------------- layout */

static void
ui_delwin(WINDOW **w)
{
	if (*w != NULL) {
		delwin(*w);
		*w = NULL;
	}
}

void
ui_destroy_windows(ui *u)
{
	int i;

	for (i = 0; i < UI_W_COUNT; i++)
		ui_delwin(&u->win[i]);
}

static int
ui_clamp(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void
ui_layout(ui *u, int lines, int cols)
{
	int bh, opsw, rw, rx, alpha_h, mem_h, strat_h, midw, first[64], cnt[64];
	int ndev;

	ui_destroy_windows(u);
	ui_graph_invalidate(u);
	u->lines = lines;
	u->cols = cols;
	u->dirty = UI_D_ALL;
	u->too_small = lines < UI_MIN_LINES || cols < UI_MIN_COLS;
	if (u->too_small) {
		u->win[UI_W_TITLE] = newwin(lines, cols, 0, 0);
		return;
	}
	bh = lines - 3;
	u->win[UI_W_TITLE] = newwin(1, cols, 0, 0);
	u->win[UI_W_MSG] = newwin(1, cols, lines - 2, 0);
	u->win[UI_W_STATUS] = newwin(1, cols, lines - 1, 0);
	ndev = ui_dev_rows(u, first, cnt, 64);
	u->wide = cols >= 140 && lines >= 30;
	if (!u->wide) {
		opsw = ui_clamp(cols * 2 / 5, 24, 36);
		rx = opsw;
		rw = cols - opsw;
		alpha_h = bh >= 26 ? 10 : 7;
		mem_h = ui_clamp(4 + ndev, 5, bh / 3);
		strat_h = bh - alpha_h - mem_h;
		u->win[UI_W_OPS] = newwin(bh, opsw, 1, 0);
		u->win[UI_W_STRATS] = newwin(strat_h, rw, 1, rx);
		u->win[UI_W_MEM] = newwin(mem_h, rw, 1 + strat_h, rx);
		u->win[UI_W_ALPHA] = newwin(alpha_h, rw, 1 + strat_h + mem_h, rx);
		u->win[UI_W_GRAPH] = newwin(strat_h + mem_h, rw, 1, rx);
	} else {
		opsw = ui_clamp(cols / 4, 30, 48);
		midw = (cols - opsw) * 9 / 20;
		rx = opsw + midw;
		rw = cols - rx;
		mem_h = ui_clamp(5 + ndev, 6, bh / 2);
		alpha_h = ui_clamp(bh / 3, 9, 16);
		u->win[UI_W_OPS] = newwin(bh, opsw, 1, 0);
		u->win[UI_W_STRATS] = newwin(bh - mem_h, midw, 1, opsw);
		u->win[UI_W_MEM] = newwin(mem_h, midw, 1 + bh - mem_h, opsw);
		u->win[UI_W_GRAPH] = newwin(bh - alpha_h, rw, 1, rx);
		u->win[UI_W_ALPHA] = newwin(alpha_h, rw, 1 + bh - alpha_h, rx);
	}
	clearok(curscr, TRUE);
}

/* ------------------------------------------------------------ the frame */

static void
ui_out(WINDOW *w)
{
	if (w != NULL)
		wnoutrefresh(w);
}

/* The message and status lines, under the panels and under an overlay
 * alike, then everything marked is on the screen. */
static void
ui_draw_lines(ui *u)
{
	WINDOW **W = u->win;

	if (u->dirty & UI_D_MSG) {
		ui_draw_msg(W[UI_W_MSG], u);
		ui_out(W[UI_W_MSG]);
	}
	if (u->dirty & UI_D_STATUS) {
		ui_draw_status(W[UI_W_STATUS], u);
		ui_out(W[UI_W_STATUS]);
	}
	u->dirty = 0;
	doupdate();
}

void
ui_draw(ui *u)
{
	WINDOW **W = u->win;

	if (u->too_small) {
		if (u->dirty) {
			ui_draw_too_small(W[UI_W_TITLE], u);
			ui_out(W[UI_W_TITLE]);
		}
		u->dirty = 0;
		doupdate();
		return;
	}
	if (u->dirty == 0)
		return;
	ui_scroll_follow(u->row_cur, &u->row_top, getmaxy(W[UI_W_OPS]) - 1);
	ui_scroll_follow(u->strat_cur, &u->strat_top, getmaxy(W[UI_W_STRATS]) - 2);
	if (u->text != NULL || ui_timeline_is_open(u) || ui_stages_is_open(u)) {
		WINDOW *hw = W[UI_W_OPS] ? newwin(u->lines - 3, u->cols, 1, 0) : NULL;
		if (hw != NULL) {
			if (ui_stages_is_open(u))
				ui_draw_stages(hw, u);
			else if (ui_timeline_is_open(u))
				ui_draw_timeline(hw, u);
			else
				ui_draw_text(hw, u);
			ui_out(hw);
			delwin(hw);
		}
		ui_draw_lines(u);
		return;
	}
	if (u->dirty & UI_D_TITLE) {
		ui_draw_title(W[UI_W_TITLE], u);
		ui_out(W[UI_W_TITLE]);
	}
	if (u->dirty & UI_D_OPS) {
		ui_draw_ops(W[UI_W_OPS], u);
		ui_out(W[UI_W_OPS]);
	}
	if (!u->wide && u->show_graph) {
		if (u->dirty & (UI_D_GRAPH | UI_D_STRATS | UI_D_MEM)) {
			ui_draw_graph(W[UI_W_GRAPH], u);
			ui_out(W[UI_W_GRAPH]);
		}
	} else {
		if (u->dirty & UI_D_STRATS) {
			ui_draw_strats(W[UI_W_STRATS], u);
			ui_out(W[UI_W_STRATS]);
		}
		if (u->dirty & UI_D_MEM) {
			ui_draw_mem(W[UI_W_MEM], u);
			ui_out(W[UI_W_MEM]);
		}
		if (u->wide && (u->dirty & UI_D_GRAPH)) {
			ui_draw_graph(W[UI_W_GRAPH], u);
			ui_out(W[UI_W_GRAPH]);
		}
	}
	if (u->dirty & UI_D_ALPHA) {
		ui_draw_alpha(W[UI_W_ALPHA], u);
		ui_out(W[UI_W_ALPHA]);
	}
	ui_draw_lines(u);
}
