/*
 * ui.c: the explorer's view over its model (ui_model.c).  Each change asks
 * the model, then marks what it changed for redrawing and says what happened
 * on the message line; the loop (ui_main.c) polls the model's background
 * work here every tick.
 */
#include "graphviz.h"
#include "ui.h"

#include <errno.h>
#include <stdlib.h>

/* The GPU runner's pid while a validation runs, for the crash handler
 * (ui_main.c). */
volatile sig_atomic_t ui_child_pid = -1;

void
ui_message(ui *u, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof u->msg, fmt, ap);
	va_end(ap);
	u->msg_error = error;
	u->dirty |= UI_D_MSG;
}

/* ------------------------------------------------------ the model's changes */

int
ui_init(ui *u, cli_session *s, const cli_opts *o, sl_error *err)
{
	int st;

	memset(u, 0, sizeof *u);
	if (ui_model_init(&u->m, s, o, err) != SL_OK)
		return err->code;
	ui_rows_build(u);
	ui_stages_setup(u, o);
	/* Tab on a fresh model lands on the strategy the plan chose. */
	st = ui_chosen(&u->m, ui_row_op(u));
	u->strat_cur = st < 0 ? 0 : st;
	u->dirty = UI_D_ALL;
	return SL_OK;
}

void
ui_free(ui *u)
{
	/*
	 * GLPK and the sweep poll their cancel flags and stop soon; this waits
	 * for them (the caller frees the space they read next).
	 */
	ui_validate_cancel(u);
	ui_timeline_free(u);
	ui_stages_free(u);
	ui_model_free(&u->m);
	free(u->text);
	free(u->groups);
	free(u->op_group);
	free(u->rows);
	ui_graph_free(u);
	ui_destroy_windows(u);
}

int
ui_resolve(ui *u, sl_error *err)
{
	int rc = ui_model_resolve(&u->m, err);

	if (rc == SL_OK) {
		ui_graph_invalidate(u);
		u->dirty |= UI_D_ALL;
	}
	return rc;
}

void
ui_constrain(ui *u, int op, int s, enum ui_act act, bool every_layer)
{
	int *ops, n, cleared, rc;
	const char *sname;
	sl_error err;
	char buf[2048];

	if (op < 0)
		return;
	ops = sl_xmalloc(u->m.n * sizeof(int));
	n = every_layer ? ui_same_position(&u->m, op, ops) : 1;
	if (!every_layer)
		ops[0] = op;
	if (s < 0 || s >= ui_op_k(&u->m, op))
		s = 0;
	sname = ui_strat_name(&u->m, op, s);
	sl_error_clear(&err);
	rc = ui_model_constrain(&u->m, ops, n, op, s, act, &cleared, &err);
	ui_graph_invalidate(u);
	u->dirty |= UI_D_ALL;
	if (rc != SL_OK) {
		sl_error_format(&err, buf, sizeof buf);
		ui_message(u, true, _("not applied: %s"), buf);
	} else if (act == UI_ACT_CLEAR) {
		ui_message(u, false, ngettext("cleared pins and forbids of %d operator",
		    "cleared pins and forbids of %d operators", cleared), cleared);
	} else if (n == 1) {
		ui_message(u, false, act == UI_ACT_PIN ? _("pinned %s = %s") :
		    _("forbade %s = %s"), ui_op_name(&u->m, op), sname);
	} else {
		/* n > 1 here; the plural forms of some languages differ still */
		ui_message(u, false, act == UI_ACT_PIN ?
		    ngettext("pinned %s at %d operator", "pinned %s at %d operators", n) :
		    ngettext("forbade %s at %d operator", "forbade %s at %d operators", n),
		    sname, n);
	}
	free(ops);
}

/* Re-solves for alpha and says what alpha now means (or why not). */
static void
ui_set_alpha(ui *u, double alpha)
{
	sl_error err;
	char buf[2048];

	sl_error_clear(&err);
	if (ui_model_set_alpha(&u->m, alpha, &err) != SL_OK) {
		ui_message(u, true, "%s", sl_error_format(&err, buf, sizeof buf));
		return;
	}
	ui_graph_invalidate(u);
	u->dirty |= UI_D_ALL;
	ui_alpha_meaning(u->m.alpha, u->cols, buf, sizeof buf);
	ui_message(u, false, "%s", buf);
}

/* R: every layer's recomputation none -> selective -> full -> none. */
void
ui_recompute_cycle(ui *u)
{
	sl_recompute next = u->m.recompute == SL_RECOMP_NONE ? SL_RECOMP_SELECTIVE :
	    u->m.recompute == SL_RECOMP_SELECTIVE ? SL_RECOMP_FULL : SL_RECOMP_NONE;
	sl_error err;
	char buf[2048];

	sl_error_clear(&err);
	if (ui_model_set_recompute(&u->m, next, &err) != SL_OK) {
		ui_message(u, true, "%s", sl_error_format(&err, buf, sizeof buf));
		return;
	}
	ui_graph_invalidate(u);
	u->dirty |= UI_D_ALL;
	ui_message(u, false, _("recomputation: %s in every layer; re-solved"),
	    sl_recompute_name(next));
}

void
ui_alpha_step(ui *u, int d)
{
	bool on_front;

	ui_set_alpha(u, ui_model_alpha_step(&u->m, d, &on_front));
}

void
ui_alpha_scale(ui *u, double factor)
{
	ui_set_alpha(u, ui_model_alpha_scaled(&u->m, factor));
}

int
ui_export_plan(ui *u, const char *path, sl_error *err)
{
	int rc = ui_model_export_plan(&u->m, path, err);

	u->dirty |= UI_D_STATUS;
	return rc;
}

int
ui_export_svg(ui *u, const char *path, sl_error *err)
{
	struct Agraph_s *g;
	sl_atomic a;
	int rc, op = ui_row_op(u);

	if (u->m.space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("the strategy graph needs a model"));
	if (sl_atomic_open(&a, path, err) != SL_OK)
		return err->code;
	if (op < 0)
		op = 0;
	g = cli_sgraph_build(u->m.space, u->m.sol.choice, &op, 1, 1, CLI_SG_RENDER,
	    false, CLI_SG_ALTS);
	rc = cli_sgraph_render(g, "svg", a.fp, err);
	cli_sgraph_free(g);
	if (rc != SL_OK) {
		sl_atomic_abort(&a);
		return rc;
	}
	return sl_atomic_commit(&a, err);
}

/* ---------------------------------------------------------- GPU validation */

/*
 * v runs the GPU runner (shardlab-runner) on the plan as a child process,
 * exactly as `shardlab validate` does; the main loop polls it every tick, so
 * the explorer stays live while it runs.  The result belongs to the plan
 * that was on screen when it started: the memory panel shows the measured
 * figures only while that plan is the current one.
 */

void
ui_validate_cancel(ui *u)
{
	if (!u->m.vrunning)
		return;
	ui_child_pid = -1;
	ui_model_validate_cancel(&u->m);
	u->dirty |= UI_D_MEM;
}

static void
ui_validate_report(ui *u)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	if (fp == NULL) {
		ui_message(u, true, _("cannot show the report: %s"), strerror(errno));
		return;
	}
	cli_validate_print(fp, u->m.source, u->m.space, &u->m.vres);
	if (fclose(fp) != 0 || text == NULL) {
		free(text);
		ui_message(u, true, _("cannot show the report: %s"), strerror(errno));
		return;
	}
	ui_show_text(u, _("Validation on local GPUs"), text);
}

void
ui_validate(ui *u)
{
	sl_error err;

	if (u->m.vrunning) {
		ui_validate_cancel(u);
		ui_message(u, false, "%s", _("validation cancelled"));
		return;
	}
	if (u->m.space != NULL && ui_vres_current(&u->m)) {
		ui_validate_report(u);
		return;
	}
	sl_error_clear(&err);
	if (ui_model_validate_start(&u->m, &err) != SL_OK) {
		ui_message(u, true, u->m.space == NULL ? "%s" :
		    _("cannot validate: %s"), err.msg);
		return;
	}
	ui_child_pid = u->m.vjob.pid;
	u->dirty |= UI_D_MEM;
	ui_message(u, false, "%s", _("validating the plan on the local GPUs "
	    "(v again cancels)..."));
}

void
ui_poll_jobs(ui *u)
{
	unsigned what;
	sl_error err;
	double me, te;
	int failed;

	sl_error_clear(&err);
	what = ui_model_poll(&u->m, &err);
	ui_timeline_polled(u, what);
	if (what & UI_M_CONFIRM)
		u->dirty |= UI_D_STATUS;
	if (what & UI_M_FRONT)
		u->dirty |= UI_D_ALPHA;
	if ((what & UI_M_SEARCHED) && u->m.search == UI_SEARCH_IMPROVED) {
		/* the background search's better plan is the live one now */
		ui_graph_invalidate(u);
		u->dirty |= UI_D_ALL;
	} else if (what & UI_M_SEARCHED) {
		u->dirty |= UI_D_STATUS;
	}
	if (!(what & UI_M_VALIDATED))
		return;
	ui_child_pid = -1;
	u->dirty |= UI_D_MEM;
	if (!u->m.have_vres) {
		ui_message(u, true, _("validation failed: %s"), err.msg);
		return;
	}
	ui_vres_errors(&u->m, &me, &te, &failed);
	if (failed >= 0)
		ui_message(u, true, _("validation: device %d could not run: %s"),
		    failed, u->m.vres.dev[failed].error);
	else
		ui_message(u, false, _("validated on %s: device memory %+.1f%%, "
		    "step time %+.1f%% (worst device); v shows the report"),
		    u->m.vres.gpu, me, te);
}
