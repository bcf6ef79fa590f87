/*
 * ui_model.h: what the explorer explores, without a screen.  The model holds
 * the opened problem, the pins and forbids, the live plan re-solved on every
 * change, and the background work: GLPK confirming the plan, the alpha
 * sweep for the frontier, the GPU validation.  It includes no curses and
 * draws nothing; the view (ui.h) asks it to change and reads it to draw, and
 * tests drive it alone (tests/test_ui_model.c).
 */
#ifndef SL_UI_MODEL_H
#define SL_UI_MODEL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "shardlab.h"
#include "internal.h"
#include "cli.h"

#include <pthread.h>
#include <stdatomic.h>

/* GLPK confirmation state of the current plan. */
enum ui_confirm {
	UI_CONF_NONE, UI_CONF_RUNNING, UI_CONF_YES, UI_CONF_DIFFERS,
	UI_CONF_TOO_LARGE, UI_CONF_FAILED, UI_CONF_LIMIT,
	UI_CONF_PRECISION	/* past the 2^52 GLPK's doubles tell apart */
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
	int *choice;		/* search: the best plan found (malloc'd);
				 * timeline: the plan asked for */
	int64_t bound;		/* search: its lower bound (INT64_MIN: none) */
	int dev;		/* timeline: the device asked for */
	sl_timeline tl;		/* timeline: the one built */
	bool have_tl;
	char msg[256];
};

/* The background search of a problem the live DP cannot take. */
enum ui_search {
	UI_SEARCH_NONE, UI_SEARCH_RUNNING, UI_SEARCH_IMPROVED,
	UI_SEARCH_BEST, UI_SEARCH_FAILED
};

typedef struct ui_model {
	/* what was opened */
	cli_session *ses;
	const sl_space *space;	/* NULL for IOPDDL problems */
	sl_problem *prob;
	const char *source;
	sl_solver_kind solver;
	int n;			/* operators (nodes) */
	double alpha;
	int alpha_pos;		/* slider position; 0 = alpha 0 */
	sl_recompute recompute;	/* what R last set (the recipe's before) */

	/*
	 * The memory limit per device (--mem-limit, or M; <= 0 none): every
	 * re-solve is the plan fitted under it (sl_fit_plan).  fit_none: no
	 * plan fits, the one shown needs the least (fit_least); fit_searched:
	 * the optimum at alpha needed more than the limit.
	 */
	int64_t mem_limit;
	bool fit_none, fit_searched, fit_exact;
	int64_t fit_least;

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

	/*
	 * Problems the DP cannot take and that are searched (--solver anytime,
	 * or auto on a problem too large for GLPK): the live solve is the anytime search cut to a second;
	 * the same search then runs in the background for search_limit seconds
	 * and its plan replaces the live one when it is better.
	 */
	bool search_ok;
	double search_limit;
	int search_threads;	/* --threads, 0 the default */
	enum ui_search search;
	unsigned search_gen;
	int64_t search_bound;	/* INT64_MIN: none proven */
	double search_ms;

	/* background work */
	struct ui_job ilp_job, sweep_job, search_job;
	sl_ilp *ilp;		/* owned by the ILP thread */
	bool ilp_ok;		/* problem small enough to confirm */
	enum ui_confirm confirm;
	unsigned confirm_gen;
	sl_frontier front;	/* Pareto points of the current pin set */
	bool have_front, front_busy;

	/*
	 * Memory over time (m): the timeline of a plan on one device, built by
	 * a thread of its own as the solver's work is, so that the keys stay
	 * live while it is built.  tl_choice and tl_dev name the plan and
	 * device of the latest request (tl_dev -1: none); tl is theirs when
	 * have_tl, and tl_busy while it is being built.
	 */
	struct ui_job tl_job;
	sl_timeline tl;
	bool have_tl, tl_busy;
	int *tl_choice;
	int tl_dev;
	unsigned tl_gen;
	char tl_err[256];

	/* GPU validation (v): the runner as a child process, polled each tick */
	cli_vjob vjob;
	bool vrunning, have_vres;
	cli_vresult vres;
	int *vchoice;		/* the plan that was validated */
} ui_model;

/* What a change of pins or forbids does to the operators it names. */
enum ui_act { UI_ACT_PIN, UI_ACT_FORBID, UI_ACT_CLEAR };

/* What ui_model_poll found finished. */
#define UI_M_CONFIRM	0x1u	/* GLPK's answer for the plan */
#define UI_M_FRONT	0x2u	/* the frontier of the current pins */
#define UI_M_VALIDATED	0x4u	/* a validation ended (ok or not: see vmsg) */
#define UI_M_SEARCHED	0x8u	/* the background search ended (see search) */
#define UI_M_TIMELINE	0x10u	/* the timeline asked for is built (or failed) */

int ui_model_init(ui_model *m, cli_session *s, const cli_opts *o,
    sl_error *err);
void ui_model_free(ui_model *m);
/* Rebuilds the constraints from pin/forbid and re-solves live. */
int ui_model_resolve(ui_model *m, sl_error *err);
/*
 * Applies act with strategy s of operator op (by name) to ops[0..n); when no
 * plan is left, puts everything back and returns the reason.  cleared: how
 * many of them had a pin or a forbid before (UI_ACT_CLEAR).
 */
int ui_model_constrain(ui_model *m, const int *ops, int n, int op, int s,
    enum ui_act act, int *cleared, sl_error *err);
/* Recomputes every layer by r (none, selective, full) and re-solves; the
 * frontier is swept again for the new costs. */
int ui_model_set_recompute(ui_model *m, sl_recompute r, sl_error *err);
/* Sets the memory limit (<= 0: none) and re-solves; SL_EINPUT when the
 * problem has no memory of its own (an IOPDDL problem). */
int ui_model_set_mem_limit(ui_model *m, int64_t limit, sl_error *err);
/* Re-solves for alpha; SL_EINPUT when the problem has no alpha. */
int ui_model_set_alpha(ui_model *m, double alpha, sl_error *err);
/* The alpha one step d from the current: to the next frontier plan when the
 * frontier is known (*on_front true), else along the log scale. */
double ui_model_alpha_step(const ui_model *m, int d, bool *on_front);
/* alpha times factor, kept on the slider's range (0 for factor 0). */
double ui_model_alpha_scaled(const ui_model *m, double factor);
double ui_front_alpha(const sl_frontier *f, int i);
/* The frontier plan whose alpha range holds the current alpha, or -1. */
int ui_front_index(const ui_model *m);
/* Slider positions of the log scale used until the frontier is known. */
double ui_alpha_at(int pos);
int ui_alpha_nearest(double alpha);
int ui_alpha_positions(void);

/*
 * Asks for the timeline of the current plan on device dev (optimised
 * order), built in the background: nothing is done when the one held or
 * being built is for them.  ui_model_poll says UI_M_TIMELINE when it is
 * there (m->tl, or m->tl_err when it failed).
 */
void ui_model_request_timeline(ui_model *m, int dev);
/* Whether m->tl is the timeline of the current plan on device dev. */
bool ui_model_timeline_current(const ui_model *m, int dev);

/* Starts GLPK and the sweep for the current plan and pins. */
void ui_model_request_background(ui_model *m);
/* Takes finished background results (UI_M_* bits); a validation that ended
 * leaves its error, if any, in err. */
unsigned ui_model_poll(ui_model *m, sl_error *err);
/* Starts a validation of the plan (GPU runner, a child process). */
int ui_model_validate_start(ui_model *m, sl_error *err);
void ui_model_validate_cancel(ui_model *m);
bool ui_vres_current(const ui_model *m);
/* The worst (largest in size) errors in percent of device memory and step
 * time over the devices that ran; failed: the first that did not (-1). */
void ui_vres_errors(const ui_model *m, double *mem_err, double *time_err,
    int *failed);
int ui_model_export_plan(ui_model *m, const char *path, sl_error *err);

const char *ui_op_name(const ui_model *m, int op);
const char *ui_strat_name(const ui_model *m, int op, int s);
int ui_op_k(const ui_model *m, int op);
int ui_chosen(const ui_model *m, int op);
bool ui_plan_changed(const ui_model *m);
/* Operators at the same position of every layer as op (op itself when none). */
int ui_same_position(const ui_model *m, int op, int *out);

#endif
