/*
 * ui_main.c: the explorer's loop and its entry point.  The loop draws, reads
 * a key and hands it to the key table (ui_keys.c), polling the model's
 * background work every tick.  The terminal is restored on every way out:
 * normal exit, atexit, every signal that ends a process by default
 * (cli_exit_signals: SIGTERM, SIGHUP, SIGINT, SIGUSR1, SIGALRM... end the
 * loop) and a crash (SIGSEGV/SIGABRT/SIGBUS/SIGFPE restore, remove the
 * temporary files of a write under way, then re-raise).
 */
#include "ui.h"

#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>
#include <term.h>

/* ------------------------------------------------------ terminal restore */

static volatile sig_atomic_t ui_signalled;
static bool ui_curses_on;
static struct termios ui_saved_tio;
static bool ui_have_tio;
/* Bytes that put the terminal back, computed before any signal can come. */
static char ui_reset_seq[256];
static size_t ui_reset_len;

static void
ui_restore(void)
{
	if (ui_curses_on) {
		ui_curses_on = false;
		endwin();
	}
}

/* Async-signal-safe: write and tcsetattr only. */
static void
ui_restore_raw(void)
{
	ssize_t r;

	if (!ui_curses_on)
		return;
	if (ui_reset_len > 0)
		r = write(STDOUT_FILENO, ui_reset_seq, ui_reset_len);
	if (ui_have_tio)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &ui_saved_tio);
	(void)r;
}

static void
ui_on_signal(int sig)
{
	ui_signalled = sig;
}

static void
ui_on_crash(int sig)
{
	if (ui_child_pid > 0)
		kill((pid_t)ui_child_pid, SIGTERM);
	ui_restore_raw();
	sl_atomic_unlink_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
ui_add_seq(const char *cap)
{
	char *s = tigetstr((char *)cap);
	size_t n;

	if (s == NULL || s == (char *)-1)
		return;
	n = strlen(s);
	if (ui_reset_len + n < sizeof ui_reset_seq) {
		memcpy(ui_reset_seq + ui_reset_len, s, n);
		ui_reset_len += n;
	}
}

static void
ui_signals(void)
{
	struct sigaction sa;
	static const int crash_sigs[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
	int quit_sigs[CLI_MAX_EXIT_SIGNALS], n_quit;
	size_t i;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = ui_on_signal;
	/* the signals that would end the explorer end its loop instead (an
	 * abort is a crash, below) */
	n_quit = cli_exit_signals(quit_sigs, CLI_MAX_EXIT_SIGNALS);
	for (int q = 0; q < n_quit; q++)
		if (quit_sigs[q] != SIGABRT)
			sigaction(quit_sigs[q], &sa, NULL);
	sa.sa_handler = ui_on_crash;
	sa.sa_flags = SA_RESETHAND;
	for (i = 0; i < SL_ARRAY_LEN(crash_sigs); i++)
		sigaction(crash_sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------------- loop */

static void
ui_start_curses(ui *u)
{
	const char *cs;

	ui_have_tio = tcgetattr(STDIN_FILENO, &ui_saved_tio) == 0;
	sl_ilp_quiet();	/* a live GLPK solve must not write on the screen */
	initscr();
	ui_curses_on = true;
	atexit(ui_restore);
	ui_reset_len = 0;
	ui_add_seq("sgr0");
	ui_add_seq("cnorm");
	ui_add_seq("rmcup");
	ui_signals();
	cbreak();
	noecho();
	nonl();
	set_escdelay(25);
	curs_set(0);
	cs = nl_langinfo(CODESET);
	u->utf8 = cs != NULL && (strcmp(cs, "UTF-8") == 0 ||
	    strcmp(cs, "utf8") == 0);
	ui_screen_setup(u, has_colors() && getenv("NO_COLOR") == NULL);
	ui_layout(u, LINES, COLS);
}

int
ui_run(ui *u)
{
	struct ui_event ev;
	wint_t wch;
	int r, sig;
	WINDOW *in;

	ui_start_curses(u);
	while (!u->quit && ui_signalled == 0) {
		ui_poll_jobs(u);
		ui_draw(u);
		in = u->win[UI_W_STATUS] != NULL ? u->win[UI_W_STATUS] :
		    u->win[UI_W_TITLE];
		keypad(in, TRUE);
		wtimeout(in, 100);
		r = wget_wch(in, &wch);
		if (r == ERR)
			continue;
		ev.fn = r == KEY_CODE_YES;
		ev.key = (int)wch;
		if (ev.fn && ev.key == KEY_RESIZE) {
			ui_layout(u, LINES, COLS);
			continue;
		}
		ui_handle_event(u, ev);
	}
	sig = ui_signalled;
	/* A runner still going would outlive the explorer: stop it. */
	ui_validate_cancel(u);
	ui_restore();
	if (sig != 0) {
		/* Die of the signal, as the caller expects, terminal restored. */
		signal(sig, SIG_DFL);
		raise(sig);
		return 128 + sig;
	}
	return 0;
}

/* ------------------------------------------------------------ entry point */

/*
 * What a plan file (--plan) says: the model, the mesh (every device of a
 * pipeline plan), the hardware, alpha, the micro-batch, the recipe, the
 * options and the pins; a flag that contradicts it is an error.
 * plan_args holds the model's name for o->args.
 */
static int
ui_plan_options(cli_opts *o, const sl_plan_file *pf,
    char **plan_args, sl_error *err)
{
	int i, rc;

	if (pf->n_stages > 0 && o->n_args == 0 && pf->model_source == NULL &&
	    pf->model == NULL)
		return sl_error_set(err, SL_EINPUT, o->plan, 0, 0, "%s",
		    _("a pipeline plan does not name its model: "
		    "give it, as in shardlab tui MODEL --plan FILE"));
	if (o->n_args == 0 && (pf->model_source != NULL || pf->model != NULL)) {
		plan_args[0] = pf->model_source != NULL ?
		    pf->model_source : pf->model;
		o->args = plan_args;
		o->n_args = 1;
	}
	/* how the plan was made, from its file (planfile.c) */
	if ((rc = cli_plan_apply(o, pf, err)) != SL_OK)
		return rc;
	for (i = 0; i < pf->cs.n; i++)
		sl_constraints_add(&o->cs, pf->cs.c[i].op,
		    pf->cs.c[i].strategy, pf->cs.c[i].pin);
	return SL_OK;
}

/*
 * The session the explorer opens: a feasible problem, the plan file (pf,
 * when one was given) mapped onto the model, and a terminal.
 */
static int
ui_open_session(cli_opts *o, const sl_plan_file *pf, cli_session *s,
    sl_error *err)
{
	int rc = cli_open(o, true, s, err);

	if (rc == SL_OK && s->prob == NULL)
		rc = sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0, "%s",
		    _("the pins leave no feasible plan"));
	if (rc == SL_OK && pf != NULL && s->space != NULL && pf->n_stages == 0) {
		/* a plan that does not map onto the model is an error, not dropped
		 * (a pipeline plan records stages, not operators) */
		int *c = sl_xmalloc(s->g->n_ops * sizeof(int));
		rc = sl_plan_choice(s->space, pf, c, err);
		free(c);
		if (rc == SL_OK)
			cli_plan_warn(pf, s->g);
	}
	if (rc == SL_OK && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("the explorer needs a terminal (use `shardlab solve` in scripts)"));
	return rc;
}

/*
 * The plan file in the opened explorer: a pipeline plan reopens with its
 * stages; a whole-model plan is the baseline for "changed".
 */
static int
ui_plan_reopen(ui *u, const cli_opts *o, const sl_plan_file *pf, sl_error *err)
{
	if (pf->n_stages > 0) {
		int sub = pf->shape[0] * (pf->n_axes == 2 ? pf->shape[1] : 1);
		if (u->m.space == NULL || u->m.space->mesh.n_devices != pf->pp * sub ||
		    ui_stages_set(u, pf->schedule, pf->pp, pf->virt,
		    pf->has_setup ? pf->outer : pf->n_axes == 2 ? pf->shape[0] : 1,
		    pf->has_setup ? pf->inner : pf->shape[pf->n_axes == 2 ? 1 : 0],
		    pf->has_setup ? pf->dp_replicate : 1, pf->graph_batch, pf->micro_batches, pf->n_stages, pf->stage_layers,
		    pf->stage_recompute) != SL_OK) {
			int nd = u->m.space ? u->m.space->mesh.n_devices : 0;
			char st[48], dv[48], op[48];
			snprintf(st, sizeof st, ngettext("%d stage", "%d stages",
			    pf->n_stages), pf->n_stages);
			snprintf(dv, sizeof dv, ngettext("%d device", "%d devices", sub),
			    sub);
			snprintf(op, sizeof op, ngettext("%d device", "%d devices", nd), nd);
			return sl_error_set(err, SL_EINPUT, o->plan, 0, 0,
			    _("the plan's %s of %s do not fit the model's layers or "
			    "the %s opened"), st, dv, op);
		}
		ui_stages_open(u);
	} else if (u->m.space != NULL) {
		int *c = sl_xmalloc(u->m.n * sizeof(int));
		sl_error e2;
		sl_error_clear(&e2);
		if (sl_plan_choice(u->m.space, pf, c, &e2) == SL_OK) {
			memcpy(u->m.export_choice, c, u->m.n * sizeof(int));
			memcpy(u->m.prev_choice, c, u->m.n * sizeof(int));
		}
		free(c);
	}
	return SL_OK;
}

int
ui_main(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_plan_file pf;
	sl_error err;
	ui u;
	char *empty[1] = { NULL };
	char *plan_args[1];
	int rc;
	bool have_pf = false;

	setlocale(LC_ALL, "");
#ifdef ENABLE_NLS
	bindtextdomain(PACKAGE, sl_localedir());
	textdomain(PACKAGE);
#endif
	if (argv == NULL) {
		argc = 0;
		argv = empty;
	}
	memset(&o, 0, sizeof o);
	memset(&s, 0, sizeof s);
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);

	if (o.plan != NULL) {
		memset(&pf, 0, sizeof pf);
		if (sl_plan_read(o.plan, &pf, &err) != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		have_pf = true;
		if (ui_plan_options(&o, &pf, plan_args, &err) != SL_OK) {
			sl_plan_file_free(&pf);
			cli_opts_free(&o);
			return cli_report(&err);
		}
	}
	if (ui_open_session(&o, have_pf ? &pf : NULL, &s, &err) != SL_OK) {
		cli_close(&s);
		if (have_pf)
			sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (ui_init(&u, &s, &o, &err) != SL_OK ||
	    (have_pf && ui_plan_reopen(&u, &o, &pf, &err) != SL_OK)) {
		ui_free(&u);
		cli_close(&s);
		if (have_pf)
			sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	rc = ui_run(&u);
	/* GLPK and the sweep stop at their next poll; ui_free waits for them. */
	ui_free(&u);
	cli_close(&s);
	if (have_pf)
		sl_plan_file_free(&pf);
	cli_opts_free(&o);
	return rc;
}
