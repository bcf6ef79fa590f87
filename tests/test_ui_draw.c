/*
 * test_ui_draw.c: the explorer's panels drawn into curses on /dev/null at
 * fixed sizes (80x24, 200x60), read back cell by cell.  The numbers on screen
 * must be the evaluator's and the solver's, and for an all-replicated plan of
 * the two-layer MLP they must equal a hand calculation.
 */
#include "ui.h"
#include "testutil.h"

#include <locale.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>

static FILE *t_out, *t_in;
static SCREEN *t_scr;

struct fixture {
	cli_session s;
	cli_opts o;
	ui u;
};

/* Opens a model the way `shardlab tui` does, on a 1-D mesh of ndev devices. */
static int
open_model(struct fixture *f, const char *model, int ndev)
{
	sl_hw hw;
	sl_model_opts mo = { 0 };
	sl_space_opts so;
	sl_error err;
	int shape[1] = { ndev };
	static char *args[1];

	memset(f, 0, sizeof *f);
	sl_error_clear(&err);
	f->o.n_axes = 1;
	f->o.shape[0] = ndev;
	f->o.hw = "h100-nvlink";
	f->o.solver = SL_SOLVER_AUTO;
	f->o.micro_batch = 1;
	f->o.mem_limit = -1;
	args[0] = (char *)model;
	f->o.args = args;
	f->o.n_args = 1;
	if (sl_hw_load(f->o.hw, &hw, &err) != SL_OK ||
	    sl_mesh_make(&hw, 1, shape, &f->s.mesh, &err) != SL_OK) {
		print_error("%s\n", err.msg);
		return -1;
	}
	mo.micro_batch = 1;
	mo.devices = ndev;
	f->s.source = model;
	f->s.g = sl_model_open(model, &mo, &err);
	if (f->s.g == NULL) {
		print_error("%s\n", err.msg);
		return -1;
	}
	sl_space_opts_default(&so);
	f->s.space = sl_space_build(f->s.g, &f->s.mesh, &so, &err);
	if (f->s.space == NULL)
		return -1;
	f->s.prob = sl_space_problem(f->s.space, 0, NULL, &err);
	if (f->s.prob == NULL)
		return -1;
	if (ui_init(&f->u, &f->s, &f->o, &err) != SL_OK) {
		print_error("%s\n", err.msg);
		return -1;
	}
	return 0;
}

static void
close_model(struct fixture *f)
{
	ui_free(&f->u);
	sl_problem_free(f->s.prob);
	sl_space_free(f->s.space);
	sl_graph_free(f->s.g);
}

static void
term_open(struct fixture *f, int lines, int cols, bool utf8)
{
	t_out = fopen("/dev/null", "w");
	t_in = fopen("/dev/null", "r");
	assert_non_null(t_out);
	t_scr = newterm("xterm", t_out, t_in);
	assert_non_null(t_scr);
	resizeterm(lines, cols);
	f->u.utf8 = utf8;
	ui_screen_setup(&f->u, false);
	ui_layout(&f->u, lines, cols);
	ui_draw(&f->u);
}

static void
term_close(struct fixture *f)
{
	ui_destroy_windows(&f->u);
	endwin();
	delscreen(t_scr);
	fclose(t_out);
	fclose(t_in);
}

/* Row y of window w as UTF-8 (static buffer). */
static const char *
row(WINDOW *w, int y)
{
	static char buf[2048];
	wchar_t wb[512];
	int n;

	n = mvwinnwstr(w, y, 0, wb, (int)(sizeof wb / sizeof wb[0]) - 1);
	if (n < 0)
		n = 0;
	wb[n] = L'\0';
	if (wcstombs(buf, wb, sizeof buf) == (size_t)-1)
		buf[0] = '\0';
	return buf;
}

/* Whether any row of w contains s. */
static bool
win_has(WINDOW *w, const char *s)
{
	int y;

	for (y = 0; y < getmaxy(w); y++)
		if (strstr(row(w, y), s) != NULL)
			return true;
	return false;
}

static void
dump(WINDOW *w)
{
	int y;

	for (y = 0; y < getmaxy(w); y++)
		fprintf(stderr, "|%s|\n", row(w, y));
}

static int64_t
eval_total(struct fixture *f, int dev)
{
	sl_eval ev;
	sl_error err;
	int64_t t;

	sl_error_clear(&err);
	assert_int_equal(sl_evaluate(f->s.space, f->u.sol.choice, f->u.alpha,
	    &ev, &err), SL_OK);
	t = sl_mem_total(&ev.dev[dev]);
	sl_eval_free(&ev);
	return t;
}

static int
select_strategy(struct fixture *f, const char *op, const char *strat)
{
	int o = sl_graph_find_op(f->s.g, op);
	int s = sl_space_find_strategy(f->s.space, o, strat);

	assert_true(o >= 0);
	assert_true(s >= 0);
	ui_rows_select_op(&f->u, o);
	f->u.strat_cur = s;
	return o;
}

static void
key(struct fixture *f, int k)
{
	struct ui_event e = { .key = k, .fn = false };
	ui_handle_event(&f->u, e);
	ui_draw(&f->u);
}

/* ------------------------------------------------------------------ tests */

static void
test_mlp_80x24(void **state)
{
	struct fixture f;
	WINDOW **W;
	char buf[64], want[128];
	int op, c;
	sl_solution bf;
	sl_error err;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	W = f.u.win;
	assert_false(f.u.too_small);
	assert_false(f.u.wide);

	/* operators: every name with its chosen strategy on the same row */
	for (op = 0; op < f.u.n; op++) {
		int y, found = 0;
		c = f.u.sol.choice[op];
		for (y = 1; y < getmaxy(W[UI_W_OPS]); y++) {
			const char *r = row(W[UI_W_OPS], y);
			if (strstr(r, f.s.g->ops[op].name) != NULL &&
			    strstr(r, f.s.space->ops[op].strat[c].name) != NULL)
				found = 1;
		}
		if (!found)
			dump(W[UI_W_OPS]);
		assert_true(found);
	}
	assert_non_null(strstr(row(W[UI_W_OPS], 0), "Operators (3)"));
	assert_non_null(strstr(row(W[UI_W_OPS], 1), "layer0"));

	/* strategies of fc1 (the first group's first operator) */
	assert_non_null(strstr(row(W[UI_W_STRATS], 0), "fc1"));
	for (c = 0; c < f.s.space->ops[0].n_strat; c++)
		assert_true(win_has(W[UI_W_STRATS], f.s.space->ops[0].strat[c].name));
	/* the chosen strategy's row carries the knob */
	c = f.u.sol.choice[0];
	snprintf(want, sizeof want, "●  %s", f.s.space->ops[0].strat[c].name);
	assert_true(win_has(W[UI_W_STRATS], want));
	/* fc1 replicated keeps w1 whole (512x2048 x 16 B) and x (8x512 bf16) */
	snprintf(want, sizeof want, "rep %s", "");
	assert_true(win_has(W[UI_W_STRATS], "16.01 MiB"));

	/* memory: the evaluator's total of device 0 */
	sl_format_bytes(eval_total(&f, 0), buf, sizeof buf);
	assert_true(win_has(W[UI_W_MEM], buf));
	assert_true(win_has(W[UI_W_MEM], "d0-3"));

	/* status: the objective is brute force's */
	sl_error_clear(&err);
	sl_solution_init(&bf, f.u.n);
	assert_int_equal(sl_solve_brute(f.s.prob, NULL, &bf, &err), SL_OK);
	snprintf(want, sizeof want, "objective %lld", (long long)bf.objective);
	if (!win_has(W[UI_W_STATUS], want))
		dump(W[UI_W_STATUS]);
	assert_true(win_has(W[UI_W_STATUS], want));
	sl_solution_free(&bf);

	term_close(&f);
	close_model(&f);
}

/* Pinning every operator replicated: hand-computed memory on every device. */
static void
test_mlp_pin_rep(void **state)
{
	struct fixture f;
	WINDOW **W;
	char buf[64], want[128];
	/* w1, w2: 512*2048 elements x 16 B each; saved: x 8x512, h1 and g
	 * 8x2048, all bf16. */
	const int64_t hand = 2 * 512 * 2048 * 16LL + (8 * 512 + 2 * 8 * 2048) * 2LL;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	W = f.u.win;
	select_strategy(&f, "fc1", "rep");
	key(&f, 'p');
	assert_true(win_has(W[UI_W_MSG], "pinned fc1 = rep"));
	if (!win_has(W[UI_W_STATUS], "changed: fc1"))
		dump(W[UI_W_STATUS]);
	assert_true(win_has(W[UI_W_STATUS], "changed: fc1"));
	select_strategy(&f, "gelu", "rep");
	key(&f, 'p');
	select_strategy(&f, "fc2", "rep");
	key(&f, 'p');
	assert_int_equal(f.u.cs.n, 3);
	assert_int_equal(eval_total(&f, 0), hand);
	assert_int_equal(eval_total(&f, 3), hand);
	sl_format_bytes(hand, buf, sizeof buf);
	assert_true(win_has(W[UI_W_MEM], buf));
	/* the pin mark on the operator rows */
	snprintf(want, sizeof want, "rep P");
	assert_true(win_has(W[UI_W_OPS], want));

	/* forbidding the pinned strategy clears the pin; u clears all */
	key(&f, 'u');
	assert_int_equal(f.u.pin[2], -1);
	assert_int_equal(f.u.cs.n, 2);

	/* forbidding every strategy of an operator is refused, plan kept */
	{
		int s, k = f.s.space->ops[1].n_strat;
		select_strategy(&f, "gelu", "rep");
		key(&f, 'u');
		for (s = 0; s < k; s++) {
			f.u.strat_cur = s;
			key(&f, 'f');
		}
		assert_true(f.u.msg_error);
		assert_true(win_has(W[UI_W_MSG], "not applied"));
		for (s = 0, k = 0; s < f.s.space->ops[1].n_strat; s++)
			k += f.u.forbid[1][s];
		assert_int_equal(k, f.s.space->ops[1].n_strat - 1);
	}
	term_close(&f);
	close_model(&f);
}

static void
test_alpha_slider(void **state)
{
	struct fixture f;
	int i;
	double a0;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	assert_int_equal(ui_alpha_nearest(0), 0);
	assert_true(ui_alpha_at(0) == 0);
	assert_true(ui_alpha_at(1) == 0.1);
	assert_true(ui_alpha_at(4) == 1);
	assert_true(ui_alpha_at(5) == 2);
	assert_int_equal(ui_alpha_nearest(1000), 13);
	a0 = f.u.alpha;
	for (i = 0; i < 13; i++)
		key(&f, ']');
	assert_true(f.u.alpha == 1000 && a0 == 0);
	assert_true(win_has(f.u.win[UI_W_ALPHA], "Alpha 1000 B/us"));
	/* the objective shown is the weighed one of the new alpha */
	{
		char want[64];
		snprintf(want, sizeof want, "objective %lld",
		    (long long)sl_problem_score(f.s.prob, f.u.sol.choice));
		assert_true(win_has(f.u.win[UI_W_STATUS], want));
	}
	key(&f, '0');
	assert_true(f.u.alpha == 0);
	term_close(&f);
	close_model(&f);
}

static void
test_mlp_200x60_graph(void **state)
{
	struct fixture f;
	WINDOW **W;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 60, 200, true);
	W = f.u.win;
	assert_true(f.u.wide);
	select_strategy(&f, "gelu", "dp");
	ui_draw(&f.u);
	/* gelu and both neighbours are boxes in the graph */
	if (!win_has(W[UI_W_GRAPH], "gelu"))
		dump(W[UI_W_GRAPH]);
	assert_true(win_has(W[UI_W_GRAPH], "Strategy graph around gelu"));
	assert_true(win_has(W[UI_W_GRAPH], "┌fc1"));
	assert_true(win_has(W[UI_W_GRAPH], "┌gelu"));
	assert_true(win_has(W[UI_W_GRAPH], "┌fc2"));
	assert_true(win_has(W[UI_W_STRATS], "Strategies of gelu"));
	assert_true(win_has(W[UI_W_MEM], "Memory per device"));
	term_close(&f);
	close_model(&f);
}

static void
test_too_small_and_ascii(void **state)
{
	struct fixture f;
	WINDOW **W;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 17, 59, false);
	assert_true(f.u.too_small);
	assert_true(win_has(f.u.win[UI_W_TITLE], "terminal too small: 59x17"));
	ui_layout(&f.u, 24, 80);
	ui_draw(&f.u);
	W = f.u.win;
	assert_false(f.u.too_small);
	/* ASCII glyphs: the legend marks categories by letter */
	assert_true(win_has(W[UI_W_MEM], "Pparams"));
	assert_true(win_has(W[UI_W_OPS], "- layer0"));
	assert_false(win_has(W[UI_W_OPS], "▾"));
	term_close(&f);
	close_model(&f);
}

static void
test_gpt_folded_layers(void **state)
{
	struct fixture f;
	WINDOW **W;
	int n_before;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	term_open(&f, 24, 80, true);
	W = f.u.win;
	/* 24 identical layers shown once with their count */
	assert_true(win_has(W[UI_W_OPS], "layer0..layer23 ×24"));
	n_before = f.u.n_rows;
	/* unfold every layer: 24x as many operator rows plus layer headers */
	{
		int i;
		for (i = 0; i < f.u.n_rows; i++)
			if (f.u.rows[i].kind == UI_ROW_GROUP)
				break;
		f.u.row_cur = i;
		key(&f, 'l');
	}
	assert_true(f.u.n_rows > n_before + 23 * 10);
	/* search jumps to an operator of a later layer */
	{
		int op = sl_graph_find_op(f.s.g, "layer7.qkv");
		if (op < 0)
			op = f.s.g->layers[7].first_op;
		snprintf(f.u.search, sizeof f.u.search, "%s", f.s.g->ops[op].name);
		key(&f, 'n');
		assert_int_equal(ui_row_op(&f.u), op);
		assert_true(win_has(W[UI_W_STRATS], f.s.g->ops[op].name));
	}
	term_close(&f);
	close_model(&f);
}

/* e writes a plan that reads back to the same strategies and pins. */
static void
test_export_roundtrip(void **state)
{
	struct fixture f;
	sl_plan_file pf;
	sl_error err;
	char path[] = "/tmp/test_ui_draw_XXXXXX";
	int fd, *choice, i;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	select_strategy(&f, "fc2", "row");
	key(&f, 'p');
	assert_true(ui_plan_changed(&f.u));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sl_error_clear(&err);
	assert_int_equal(ui_export_plan(&f.u, path, &err), SL_OK);
	assert_false(ui_plan_changed(&f.u));
	memset(&pf, 0, sizeof pf);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	choice = calloc(f.u.n, sizeof(int));
	assert_int_equal(sl_plan_choice(f.s.space, &pf, choice, &err), SL_OK);
	for (i = 0; i < f.u.n; i++)
		assert_int_equal(choice[i], f.u.sol.choice[i]);
	assert_int_equal(pf.cs.n, 1);
	assert_string_equal(pf.cs.c[0].op, "fc2");
	assert_string_equal(pf.cs.c[0].strategy, "row");
	assert_true(pf.cs.c[0].pin);
	free(choice);
	sl_plan_file_free(&pf);
	unlink(path);

	/* x shows the engine's explanation over the panels; a key closes it */
	key(&f, 'x');
	assert_non_null(f.u.text);
	assert_non_null(strstr(f.u.text, "fc2"));
	key(&f, 'q');
	assert_null(f.u.text);
	assert_false(f.u.quit);
	term_close(&f);
	close_model(&f);
}

/* Every key of the help screen is documented in the man page. */
static void
test_keys_in_man_page(void **state)
{
	char path[4096], *text, *sec, *end, *w, *r, tok[64];
	const char *src = getenv("TESTS_SRCDIR");
	FILE *fp;
	long n;
	size_t k, i;

	snprintf(path, sizeof path, "%s/../man/shardlab.1", src ? src : "tests");
	fp = fopen(path, "r");
	if (fp == NULL) {
		print_message("skipped: %s not found\n", path);
		skip();
	}
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	text = calloc(1, n + 1);
	assert_int_equal(fread(text, 1, n, fp), (size_t)n);
	fclose(fp);
	sec = strstr(text, ".\\\" BEGIN EXPLORER");
	end = strstr(text, ".\\\" END EXPLORER");
	assert_non_null(sec);
	assert_non_null(end);
	*end = '\0';
	/* drop the zero-width escapes (\&) that protect ? and [ in mdoc */
	for (w = r = sec; *r != '\0'; r++) {
		if (r[0] == '\\' && r[1] == '&') {
			r++;
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
	for (k = 0; k < ui_n_keys; k++) {
		if (ui_keys[k].help == NULL)
			continue;
		/* the first word of the key's name, e.g. "Up" of "Up, k" */
		for (i = 0; ui_keys[k].name[i] != '\0' &&
		    ui_keys[k].name[i] != ',' && ui_keys[k].name[i] != ' ' &&
		    i < sizeof tok - 5; i++)
			tok[3 + i] = ui_keys[k].name[i];
		memcpy(tok, "Ic ", 3);
		tok[3 + i] = '\0';
		if (strstr(sec, tok) == NULL)
			print_error("key \"%s\" is not in the man page\n",
			    ui_keys[k].name);
		assert_non_null(strstr(sec, tok));
	}
	free(text);
}

/* A copy of the stand-in GPU runner (tests/fake_runner.sh) in path. */
static void
fake_runner(char *path, size_t len)
{
	char src[4096], cmd[3 * 4096 + 64];
	const char *dir = getenv("TESTS_SRCDIR");
	int fd;

	snprintf(src, sizeof src, "%s/fake_runner.sh", dir ? dir : "tests");
	snprintf(path, len, "%s/shardlab-fake-runner-XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 755 '%s'", src, path,
	    path);
	assert_int_equal(system(cmd), 0);
}

/* Polls the running validation as the main loop does, up to 20 s. */
static void
wait_validation(struct fixture *f)
{
	int i;

	for (i = 0; i < 2000 && f->u.vrunning; i++) {
		ui_poll_jobs(&f->u);
		if (f->u.vrunning)
			usleep(10000);
	}
	assert_false(f->u.vrunning);
	ui_draw(&f->u);
}

/*
 * v: the Megatron MLP plan on 4 devices run by the stand-in runner, which
 * reports the predicted 8,413,184 bytes allocated per device, 10 MiB by
 * cudaMemGetInfo and a 100 us step.  The memory panel must show both figures
 * and the error (8413184 - 10485760) / 10485760 = -19.77 %.
 */
static void
test_validate(void **state)
{
	struct fixture f;
	WINDOW **W;
	char runner[4096];
	int op;

	fake_runner(runner, sizeof runner);
	setenv("SHARDLAB_RUNNER", runner, 1);
	setenv("FAKE_MODE", "ok", 1);
	unsetenv("FAKE_LOG");
	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	W = f.u.win;
	select_strategy(&f, "fc1", "col");
	key(&f, 'p');
	select_strategy(&f, "gelu", "col");
	key(&f, 'p');
	select_strategy(&f, "fc2", "row");
	key(&f, 'p');
	assert_int_equal(eval_total(&f, 0), 8413184);
	assert_false(win_has(W[UI_W_MEM], "10.00 MiB"));

	key(&f, 'v');
	assert_true(f.u.vrunning);
	assert_true(win_has(W[UI_W_MSG], "validating the plan"));
	assert_true(win_has(W[UI_W_MEM], "validating..."));
	wait_validation(&f);
	assert_true(f.u.have_vres);
	assert_false(f.u.msg_error);
	assert_true(win_has(W[UI_W_MSG], "validated on Stand-in GPU"));
	assert_true(win_has(W[UI_W_MSG], "device memory -19.8%"));
	if (!win_has(W[UI_W_MEM], "10.00 MiB"))
		dump(W[UI_W_MEM]);
	/* one row d0-3: predicted 8.02 MiB, measured 10.00 MiB */
	assert_true(win_has(W[UI_W_MEM], "d0-3"));
	assert_true(win_has(W[UI_W_MEM], "8.02 MiB"));
	assert_true(win_has(W[UI_W_MEM], "10.00 MiB"));
	if (!win_has(W[UI_W_MEM], "error: memory -19.8%"))
		dump(W[UI_W_MEM]);
	assert_true(win_has(W[UI_W_MEM], "error: memory -19.8%"));
	assert_true(win_has(W[UI_W_MEM], "measured on"));

	/* v again: the full report, as `shardlab validate` prints it */
	key(&f, 'v');
	assert_non_null(f.u.text);
	assert_non_null(strstr(f.u.text, "GPU: Stand-in GPU x1"));
	assert_non_null(strstr(f.u.text, "-19.77%"));
	key(&f, 'q');		/* closes the report */
	assert_null(f.u.text);
	assert_false(f.u.quit);

	/* another plan: the measurement no longer applies */
	op = select_strategy(&f, "fc2", "rep");
	key(&f, 'p');
	assert_int_equal(f.u.sol.choice[op],
	    sl_space_find_strategy(f.s.space, op, "rep"));
	assert_false(win_has(W[UI_W_MEM], "10.00 MiB"));
	assert_true(win_has(W[UI_W_MEM], "an earlier plan"));

	/* a runner that does not finish: v cancels it */
	setenv("FAKE_MODE", "slow", 1);
	key(&f, 'v');
	assert_true(f.u.vrunning);
	assert_true(f.u.vjob.pid > 0);
	key(&f, 'v');
	assert_false(f.u.vrunning);
	assert_true(win_has(W[UI_W_MSG], "validation cancelled"));

	/* no GPU, a crash, no runner: each says so, nothing else changes */
	setenv("FAKE_MODE", "nogpu", 1);
	key(&f, 'v');
	wait_validation(&f);
	assert_true(f.u.msg_error);
	assert_true(win_has(W[UI_W_MSG], "no CUDA-capable GPU"));
	setenv("FAKE_MODE", "crash", 1);
	key(&f, 'v');
	wait_validation(&f);
	assert_true(win_has(W[UI_W_MSG], "killed by signal"));
	setenv("SHARDLAB_RUNNER", "/nonexistent/shardlab-runner", 1);
	key(&f, 'v');
	assert_false(f.u.vrunning);
	assert_true(win_has(W[UI_W_MSG], "the GPU runner was not built"));

	/* quitting while one runs stops the runner */
	setenv("SHARDLAB_RUNNER", runner, 1);
	setenv("FAKE_MODE", "slow", 1);
	key(&f, 'v');
	assert_true(f.u.vrunning);
	{
		pid_t pid = f.u.vjob.pid;
		term_close(&f);
		close_model(&f);
		assert_int_equal(kill(pid, 0), -1);
	}
	unlink(runner);
	unsetenv("SHARDLAB_RUNNER");
	unsetenv("FAKE_MODE");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp_80x24),
		cmocka_unit_test(test_mlp_pin_rep),
		cmocka_unit_test(test_alpha_slider),
		cmocka_unit_test(test_mlp_200x60_graph),
		cmocka_unit_test(test_too_small_and_ascii),
		cmocka_unit_test(test_gpt_folded_layers),
		cmocka_unit_test(test_export_roundtrip),
		cmocka_unit_test(test_keys_in_man_page),
		cmocka_unit_test(test_validate),
	};
	const char *dd = getenv("SHARDLAB_DATADIR");
	char path[4096];

	if (setlocale(LC_ALL, "C.UTF-8") == NULL) {
		puts("C.UTF-8 locale not available");
		return 77;
	}
	if (dd == NULL) {
		snprintf(path, sizeof path, "%s/../data",
		    getenv("TESTS_SRCDIR") ? getenv("TESTS_SRCDIR") : "tests");
		setenv("SHARDLAB_DATADIR", path, 1);
	}
	setenv("TERM", "xterm", 1);
	{
		FILE *o = fopen("/dev/null", "w"), *i = fopen("/dev/null", "r");
		SCREEN *sc = o && i ? newterm("xterm", o, i) : NULL;
		if (sc == NULL) {
			puts("no terminfo entry for xterm: cannot open curses");
			return 77;
		}
		endwin();
		delscreen(sc);
		fclose(o);
		fclose(i);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
