/*
 * ui.h: the explorer, a curses front end over the engine header.
 *
 *   ui.c        state, live re-solve, background GLPK confirmation and
 *               sweep, the main loop, terminal restore on every exit path
 *   ui_draw.c   panels: operators, strategies, memory, alpha and Pareto
 *               plot, status line, help, prompts
 *   ui_graph.c  the strategy graph around the selection, laid out by
 *               Graphviz and drawn with box-drawing characters
 *   ui_keys.c   the key table: one row per key, shown by `?` and the man page
 *   ui_timeline.c  memory over time of the selected device (key m)
 *
 * Every draw function takes a WINDOW and the explorer's state read-only, so
 * tests can open curses on /dev/null at a fixed size, draw and read cells
 * back.  The Graphviz strategy-graph builder (ui_sgraph_build) is shared with
 * `shardlab render` (src/cli_render.c).
 */
#ifndef SL_UI_H
#define SL_UI_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "shardlab.h"
#include "internal.h"
#include "cli.h"

#include <pthread.h>
#include <stdatomic.h>
#include <curses.h>
#include <wchar.h>

#ifndef ENABLE_NLS
#define ngettext(a, b, n) ((n) == 1 ? (a) : (b))
#endif

struct Agraph_s;

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

enum ui_prompt_kind { UI_P_NONE, UI_P_SEARCH, UI_P_EXPORT, UI_P_SVG, UI_P_QUIT };

/* GLPK confirmation state of the current plan. */
enum ui_confirm {
	UI_CONF_NONE, UI_CONF_RUNNING, UI_CONF_YES, UI_CONF_DIFFERS,
	UI_CONF_TOO_LARGE, UI_CONF_FAILED, UI_CONF_LIMIT
};

/* A background job slot: the newest request supersedes an older one. */
struct ui_job {
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_uint gen;	/* generation requested; a job polls it to cancel */
	unsigned have;		/* generation waiting to be taken (0: none) */
	unsigned done;		/* generation of the last finished result */
	bool busy, quit;
	/* request */
	sl_problem *prob;	/* ILP: a copy to solve */
	sl_constraints cs;	/* sweep: a copy of the pins */
	/* result */
	int rc;
	int64_t objective;
	sl_solve_status status;
	double time_ms;
	sl_frontier front;
	bool have_front;
	char msg[256];
};

struct ui_event {
	int key;		/* character, or KEY_* code when fn */
	bool fn;
};

struct ui;
typedef void (*ui_hook)(struct ui *u);

typedef struct ui {
	/* what was opened */
	cli_session *ses;
	const sl_space *space;	/* NULL for IOPDDL problems */
	sl_problem *prob;
	const char *source;
	sl_solver_kind solver;
	int n;			/* operators (nodes) */
	double alpha;
	int alpha_pos;		/* slider position; 0 = alpha 0 */

	/* constraints: per operator the pinned strategy (-1) and forbidden set */
	int *pin;
	uint8_t **forbid;
	sl_constraints cs;
	unsigned cs_gen;	/* bumped whenever the pin set changes */

	/* live solver */
	sl_dp *dp;
	sl_solution sol;
	bool have_sol;
	sl_eval ev;
	bool have_ev;
	int *prev_choice;	/* plan before the last change */
	int *changed;		/* operators that changed, n_changed of them */
	int n_changed;
	int *export_choice;	/* plan at the last export (or at start) */
	double export_alpha;
	char solve_err[512];

	/* background work */
	struct ui_job ilp_job, sweep_job;
	sl_ilp *ilp;		/* owned by the ILP thread */
	bool ilp_ok;		/* problem small enough to confirm */
	enum ui_confirm confirm;
	unsigned confirm_gen;
	sl_frontier front;	/* Pareto points of the current pin set */
	bool have_front, front_busy;

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

	/* GPU validation (v): the runner as a child process, polled each tick */
	cli_vjob vjob;
	bool vrunning, have_vres;
	cli_vresult vres;
	int *vchoice;		/* the plan that was validated */

	/* memory over time (ui_timeline.c); NULL until first opened */
	struct ui_tl *tl;

	/* hooks for x and v: when set they replace the built-in behaviour */
	ui_hook explain, validate;
	bool quit;
} ui;

/* ---- ui.c */
int ui_init(ui *u, cli_session *s, const cli_opts *o, sl_error *err);
void ui_free(ui *u);
/* Rebuilds constraints from pin/forbid, re-solves live; SL_OK or error (reverted by caller). */
int ui_resolve(ui *u, sl_error *err);
void ui_set_alpha_pos(ui *u, int pos);
/* [ ]: to the next frontier plan (true), or a log-scale step while the
 * frontier is not known yet (false). */
bool ui_alpha_step(ui *u, int d);
/* { }: alpha times factor. */
void ui_alpha_scale(ui *u, double factor);
double ui_front_alpha(const sl_frontier *f, int i);
/* The frontier plan whose alpha range holds the current alpha, or -1. */
int ui_front_index(const ui *u);
double ui_alpha_at(int pos);
int ui_alpha_nearest(double alpha);
int ui_alpha_positions(void);
int ui_export_plan(ui *u, const char *path, sl_error *err);
int ui_export_svg(ui *u, const char *path, sl_error *err);
void ui_message(ui *u, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *ui_op_name(const ui *u, int op);
const char *ui_strat_name(const ui *u, int op, int s);
int ui_op_k(const ui *u, int op);
int ui_chosen(const ui *u, int op);
bool ui_plan_changed(const ui *u);
/* Operators at the same position of every layer as op (op itself when none). */
int ui_same_position(const ui *u, int op, int *out);
void ui_poll_jobs(ui *u);
void ui_request_background(ui *u);
/* v: starts a validation of the plan; while one runs, cancels it; when the
 * current plan has been validated, shows the report. */
void ui_validate(ui *u);
/* Whether the validation result is for the plan on screen. */
bool ui_vres_current(const ui *u);
void ui_validate_cancel(ui *u);
/* The worst (largest in size) errors in percent of device memory and step
 * time over the devices that ran; failed: the first that did not (-1). */
void ui_vres_errors(const ui *u, double *mem_err, double *time_err,
    int *failed);

/* ---- ui_draw.c */
void ui_screen_setup(ui *u, bool color);	/* glyphs and attributes */
void ui_layout(ui *u, int lines, int cols);	/* (re)creates the windows */
void ui_destroy_windows(ui *u);
void ui_draw(ui *u);				/* dirty panels, then doupdate */
void ui_rows_build(ui *u);
void ui_rows_select_op(ui *u, int op);
int ui_row_op(const ui *u);			/* selected operator, or -1 */
int ui_text_width(const char *s);
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
void ui_draw_text(WINDOW *w, const ui *u);
/* Shows text (taken over, malloc'd) over the panels until a key closes it. */
void ui_show_text(ui *u, const char *title, char *text);
void ui_format_alpha(double alpha, char *buf, size_t len);
/* What alpha means in the units a user trades in (per device, per step). */
void ui_alpha_meaning(double alpha, int width, char *buf, size_t len);
/* ui_put that ends with ell when s had to be cut. */
int ui_put_ell(WINDOW *w, int y, int x, int maxw, const char *s, attr_t a,
    const char *ell);
/* s in maxw columns, the middle replaced by ell when too long. */
const char *ui_abbrev(const char *s, int maxw, const char *ell, char *out,
    size_t len);
typedef void (*ui_line_fn)(void *ctx, int idx, const char *s, size_t n,
    int indent);
int ui_wrap(const char *text, int width, ui_line_fn fn, void *ctx);
char *ui_help_text(void);
/* Scrollers: a cursor kept in view; a text moved by a key (true when the
 * key was one of the scroll keys). */
void ui_scroll_follow(int cur, int *top, int visible);
void ui_scroll_clamp(int *top, int total, int visible);
bool ui_scroll_key(struct ui_event e, int *top, int total, int visible);
bool ui_overlay_scroll(ui *u, struct ui_event e);

/* ---- ui_graph.c */
enum ui_sgraph_mode { UI_SG_CELLS, UI_SG_CELLS_COMPACT, UI_SG_RENDER };
/*
 * Builds the strategy graph: operators as nodes holding their strategies
 * (the chosen one marked), edges between neighbours labelled with the
 * resharding buffer and time of the chosen pair.  No seeds: the whole
 * model; else the seed operators and their neighbours within radius edges.  Nodes are named by
 * operator index.  UI_SG_CELLS sizes nodes in terminal cells for drawing;
 * UI_SG_RENDER gives HTML-table labels for SVG/dot output.
 */
struct Agraph_s *ui_sgraph_build(const sl_space *s, const int *choice,
    const int *seeds, int n_seeds, int radius, enum ui_sgraph_mode mode,
    bool lr);
/* Lays g out with dot and writes it as format ("svg", "dot") to fp. */
int ui_sgraph_render(struct Agraph_s *g, const char *format, FILE *fp,
    sl_error *err);
void ui_sgraph_free(struct Agraph_s *g);
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

/* ---- entry points */
int ui_run(ui *u);			/* the loop; returns exit status */
int cli_cmd_tui(int argc, char **argv);

#endif
