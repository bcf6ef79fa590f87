/*
 * ui.h: the explorer, a curses front end over the engine header.
 *
 *   ui_model.c  the model without a screen (ui_model.h): pins and forbids,
 *               live re-solve, background GLPK confirmation, sweep and GPU
 *               validation
 *   ui.c        the view's side of the model's changes (redraw marks,
 *               messages)
 *   ui_main.c   the main loop, terminal restore on every exit, ui_main
 *   ui_frame.c  the screen: windows laid out, dirty panels redrawn
 *   ui_draw.c   panels: operators, strategies, memory, alpha and Pareto
 *               plot, status line, help, prompts; the text primitives
 *               every panel writes with
 *   ui_graph.c  the strategy graph around the selection, laid out by
 *               Graphviz and drawn with box-drawing characters
 *   ui_keys.c   the key table: one row per key, shown by `?` and the man page
 *   ui_timeline.c  memory over time of the selected device (key m)
 *   ui_stages.c    the pipeline stages side by side (key S)
 *
 * Every draw function takes a WINDOW and the explorer's state read-only, so
 * tests can open curses on /dev/null at a fixed size, draw and read cells
 * back.  The Graphviz strategy-graph builder is the command line's
 * (src/cli/graphviz.c), shared with `shardlab render`.
 */
#ifndef SL_UI_H
#define SL_UI_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "explorer.h"
#include "ui_model.h"

#include <curses.h>
#include <signal.h>
#include <wchar.h>

/* Colours by role, not by number. */
enum ui_role {
	UI_R_NORMAL, UI_R_TITLE, UI_R_HEADER, UI_R_CURSOR, UI_R_CHOSEN,
	UI_R_PINNED, UI_R_FORBIDDEN, UI_R_PARAMS, UI_R_GRADS, UI_R_OPTIM,
	UI_R_ACTS, UI_R_BUFFERS, UI_R_OVER, UI_R_STATUS, UI_R_ERROR, UI_R_DIM,
	UI_R_EDGE, UI_R_COUNT
};

/* Glyphs: box drawing in UTF-8 locales, ASCII elsewhere. */
struct ui_glyphs {
	const char *h, *v, *ul, *ur, *ll, *lr, *tee_d, *tee_u, *tee_r, *tee_l,
	    *cross;
	const char *closed, *open, *bar[5], *marker, *knob, *track, *point,
	    *current, *arrow_d, *arrow_u, *arrow_r, *arrow_l, *ok, *pin, *forbid,
	    *ellipsis, *times;
};

enum ui_row_kind { UI_ROW_OP, UI_ROW_GROUP, UI_ROW_LAYER };

/* A row of the operators panel. */
struct ui_row {
	enum ui_row_kind kind;
	int op;			/* UI_ROW_OP */
	int group;		/* UI_ROW_GROUP, and the group an op row belongs to (-1) */
	int layer;		/* UI_ROW_LAYER */
	bool folded;		/* op row standing for the same position of every layer */
};

/* A run of identical consecutive layers (or a single layer). */
enum ui_fold { UI_FOLD_CLOSED, UI_FOLD_ONCE, UI_FOLD_ALL };
struct ui_group {
	int first_layer, n_layers;
	enum ui_fold mode;
};

enum ui_focus { UI_FOCUS_OPS, UI_FOCUS_STRATS };

enum ui_win {
	UI_W_TITLE, UI_W_OPS, UI_W_STRATS, UI_W_MEM, UI_W_ALPHA, UI_W_GRAPH,
	UI_W_MSG, UI_W_STATUS, UI_W_COUNT
};

/* Panels whose content changed since they were last drawn. */
#define UI_D_TITLE	(1u << UI_W_TITLE)
#define UI_D_OPS	(1u << UI_W_OPS)
#define UI_D_STRATS	(1u << UI_W_STRATS)
#define UI_D_MEM	(1u << UI_W_MEM)
#define UI_D_ALPHA	(1u << UI_W_ALPHA)
#define UI_D_GRAPH	(1u << UI_W_GRAPH)
#define UI_D_MSG	(1u << UI_W_MSG)
#define UI_D_STATUS	(1u << UI_W_STATUS)
#define UI_D_ALL	0xffffu

#define UI_MIN_COLS 60
#define UI_MIN_LINES 18

enum ui_prompt_kind { UI_P_NONE, UI_P_SEARCH, UI_P_EXPORT, UI_P_SVG, UI_P_QUIT,
	UI_P_MEMLIMIT };

struct ui_event {
	int key;		/* character, or KEY_* code when fn */
	bool fn;
};

struct ui;
typedef void (*ui_hook)(struct ui *u);

typedef struct ui {
	/* what is explored: the model, pins, plans, background jobs */
	ui_model m;

	/* operators panel */
	int n_groups;
	struct ui_group *groups;
	int *op_group;		/* per layer: its group */
	int n_rows, cap_rows;
	struct ui_row *rows;
	int row_cur, row_top;
	int strat_cur, strat_top;
	enum ui_focus focus;
	char search[128];

	/* screen */
	bool utf8, color, mono;
	const struct ui_glyphs *gl;
	attr_t attr[UI_R_COUNT];
	int lines, cols;
	bool too_small, wide, show_graph, show_help;
	WINDOW *win[UI_W_COUNT];
	unsigned dirty;

	/* message line and prompts */
	char msg[512];
	bool msg_error;
	enum ui_prompt_kind prompt;
	wchar_t input[512];
	int input_len;

	/* strategy graph cache (laid out for graph_op, graph_w x graph_h) */
	struct ui_gdraw *gdraw;

	/* a scrolling text over the panels (help, explain, validate reports);
	 * show_help: the text is the help */
	char *text;
	char text_title[256];
	int text_top;

	/* memory over time (ui_timeline.c); NULL until first opened */
	struct ui_tl *tl;
	/* pipeline stages (ui_stages.c); the options at init, the rest when
	 * first opened */
	struct ui_st *st;

	/* hooks for x and v: when set they replace the built-in behaviour */
	ui_hook explain, validate;
	bool quit;
} ui;

/* ---- ui.c: the view's side of the model's changes */
int ui_init(ui *u, cli_session *s, const cli_opts *o, sl_error *err);
void ui_free(ui *u);
/* Re-solves (ui_model_resolve) and marks everything for redrawing. */
int ui_resolve(ui *u, sl_error *err);
/* Pins, forbids or clears on op, or on op at every layer; reports. */
void ui_constrain(ui *u, int op, int s, enum ui_act act, bool every_layer);
/* [ ]: to the next frontier plan, or a log-scale step while the frontier is
 * not known yet. */
void ui_alpha_step(ui *u, int d);
void ui_recompute_cycle(ui *u);
/* { } and 0: alpha times factor. */
void ui_alpha_scale(ui *u, double factor);
int ui_export_plan(ui *u, const char *path, sl_error *err);
int ui_export_svg(ui *u, const char *path, sl_error *err);
void ui_message(ui *u, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Takes finished background work; marks what it changed for redrawing. */
void ui_poll_jobs(ui *u);
/* v: starts a validation of the plan; while one runs, cancels it; when the
 * current plan has been validated, shows the report. */
void ui_validate(ui *u);
void ui_validate_cancel(ui *u);
/* The runner's pid while a validation runs (-1: none), for the crash
 * handler, which may read nothing else. */
extern volatile sig_atomic_t ui_child_pid;

/* ---- ui_frame.c */
void ui_layout(ui *u, int lines, int cols);	/* (re)creates the windows */
void ui_destroy_windows(ui *u);
void ui_draw(ui *u);				/* dirty panels, then doupdate */

/* ---- ui_draw.c */
void ui_screen_setup(ui *u, bool color);	/* glyphs and attributes */
void ui_rows_build(ui *u);
void ui_rows_select_op(ui *u, int op);
int ui_row_op(const ui *u);			/* selected operator, or -1 */
/* Writes s at (y, x) in at most maxw columns; returns columns used. */
int ui_put(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a);
void ui_draw_title(WINDOW *w, const ui *u);
void ui_draw_ops(WINDOW *w, const ui *u);
void ui_draw_strats(WINDOW *w, const ui *u);
void ui_draw_mem(WINDOW *w, const ui *u);
void ui_draw_alpha(WINDOW *w, const ui *u);
void ui_draw_msg(WINDOW *w, const ui *u);
void ui_draw_status(WINDOW *w, const ui *u);
void ui_draw_too_small(WINDOW *w, const ui *u);
/* The memory panel's rows: devices with equal memory share one (first
 * device and count of each, at most max); how many rows. */
int ui_dev_rows(const ui *u, int *first, int *count, int max);
void ui_draw_text(WINDOW *w, const ui *u);
/* Shows text (taken over, malloc'd) over the panels until a key closes it. */
void ui_show_text(ui *u, const char *title, char *text);
void ui_format_alpha(double alpha, char *buf, size_t len);
/* What alpha means in the units a user trades in (per device, per step). */
void ui_alpha_meaning(double alpha, int width, char *buf, size_t len);
/* ui_put right-aligned so that s ends at column xend (exclusive). */
int ui_put_right(WINDOW *w, int y, int xend, int maxw, const char *s, attr_t a);
/* A memory category's short name in legends ("params"), translated. */
const char *ui_cat_short(int cat);
/* ui_put that ends with ell when s had to be cut. */
int ui_put_ell(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a,
    const char *ell);
/* s in maxw columns, the middle replaced by ell when too long. */
const char *ui_abbrev(const char *s, int maxw, const char *ell, char *out,
    size_t len);
typedef void (*ui_line_fn)(void *ctx, int idx, const char *s, size_t n,
    int indent);
int ui_wrap(const char *text, int width, ui_line_fn fn, void *ctx);
/* Scrollers: a cursor kept in view; a text moved by a key (true when the
 * key was one of the scroll keys). */
void ui_scroll_follow(int cur, int *top, int visible);
void ui_scroll_clamp(int *top, int total, int visible);
bool ui_scroll_key(struct ui_event e, int *top, int total, int visible);
bool ui_overlay_scroll(ui *u, struct ui_event e);

/* ---- ui_graph.c (the graph itself: src/cli/graphviz.h) */
void ui_draw_graph(WINDOW *w, ui *u);
void ui_graph_invalidate(ui *u);
void ui_graph_free(ui *u);

/* ---- ui_keys.c */
struct ui_key {
	int key;
	bool fn;
	const char *name;	/* shown in help, N_() */
	const char *help;	/* N_() */
	void (*run)(ui *u, struct ui_event ev);
};
extern const struct ui_key ui_keys[];
extern const size_t ui_n_keys;
void ui_handle_event(ui *u, struct ui_event ev);

/* ---- ui_timeline.c */
void ui_timeline_open(ui *u);
bool ui_timeline_is_open(const ui *u);
/* Handles a key while the panel is open (true), else false. */
bool ui_timeline_key(ui *u, struct ui_event e);
void ui_draw_timeline(WINDOW *w, const ui *u);
void ui_timeline_free(ui *u);
/* After ui_model_poll: takes a timeline that came (what: UI_M_* bits). */
void ui_timeline_polled(ui *u, unsigned what);

/* ---- ui_stages.c */
/* Keeps what the command line said about the pipeline (--pp, --tp,
 * --schedule, --virtual-stages, --global-batch, ...). */
void ui_stages_setup(ui *u, const cli_opts *o);
/* Shows these stages when the panel first opens (a plan file's). */
int ui_stages_set(ui *u, sl_schedule sched, int pp, int virt, int outer, int inner,
    int dp_replicate, int64_t graph_batch, int64_t micro_batches, int n, const int *layers,
    const sl_recompute *rec);
void ui_stages_open(ui *u);
bool ui_stages_is_open(const ui *u);
bool ui_stages_key(ui *u, struct ui_event e);
void ui_draw_stages(WINDOW *w, const ui *u);
/* Memory of stage j's device as its column shows it (-1: none). */
int64_t ui_stages_mem(const ui *u, int j);
void ui_stages_free(ui *u);

/* ---- ui_main.c (ui_main: explorer.h) */
int ui_run(ui *u);			/* the loop; returns exit status */

#endif
