/*
 * test_ui_draw.c: the explorer's panels drawn into curses on /dev/null at
 * fixed sizes (80x24, 200x60), read back cell by cell.  The numbers on screen
 * must be the evaluator's and the solver's, and for an all-replicated plan of
 * the two-layer MLP they must equal a hand calculation.
 */
#include "ui.h"
#include "testutil.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <malloc.h>
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

/* Opens a model the way `shardlab tui` does, on a mesh of the given shape. */
static int
open_model_mesh(struct fixture *f, const char *model, int n_axes,
    const int *shape)
{
	sl_hw hw;
	sl_model_opts mo = { 0 };
	sl_space_opts so;
	sl_error err;
	static char *args[1];
	int i, ndev = 1;

	memset(f, 0, sizeof *f);
	sl_error_clear(&err);
	f->o.n_axes = n_axes;
	for (i = 0; i < n_axes; i++) {
		f->o.shape[i] = shape[i];
		ndev *= shape[i];
	}
	f->o.hw = "h100-nvlink";
	f->o.solver = SL_SOLVER_AUTO;
	f->o.micro_batch = 1;
	f->o.mem_limit = -1;
	args[0] = (char *)model;
	f->o.args = args;
	f->o.n_args = 1;
	if (sl_hw_load(f->o.hw, &hw, &err) != SL_OK ||
	    sl_mesh_make(&hw, n_axes, shape, &f->s.mesh, &err) != SL_OK) {
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

/* On a 1-D mesh of ndev devices. */
static int
open_model(struct fixture *f, const char *model, int ndev)
{
	return open_model_mesh(f, model, 1, &ndev);
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

/* The rows of w joined by one space, runs of spaces made one (a wrapped
 * text read back as it was before wrapping). */
static void
join_rows(WINDOW *w, int from, char *out, size_t len)
{
	int y;
	size_t o = strlen(out);
	const char *r;

	for (y = from; y < getmaxy(w); y++)
		for (r = row(w, y); *r != '\0' && o + 2 < len; r++) {
			if (*r == ' ' && (o == 0 || out[o - 1] == ' '))
				continue;
			out[o++] = *r;
			out[o] = '\0';
		}
	if (o + 2 < len && o > 0 && out[o - 1] != ' ') {
		out[o++] = ' ';
		out[o] = '\0';
	}
}

/* The display column just after the first s in row y of w, or -1. */
static int
col_after(WINDOW *w, int y, const char *s)
{
	wchar_t wb[512], ws[128], *hit;
	int n = mvwinnwstr(w, y, 0, wb, 511);

	if (n < 0 || mbstowcs(ws, s, 127) == (size_t)-1)
		return -1;
	wb[n] = L'\0';
	ws[127] = L'\0';
	if ((hit = wcsstr(wb, ws)) == NULL)
		return -1;
	return wcswidth(wb, (hit - wb) + wcslen(ws));
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
	assert_int_equal(sl_evaluate(f->s.space, f->u.m.sol.choice, f->u.m.alpha,
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
	for (op = 0; op < f.u.m.n; op++) {
		int y, found = 0;
		c = f.u.m.sol.choice[op];
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
	c = f.u.m.sol.choice[0];
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
	sl_solution_init(&bf, f.u.m.n);
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
	assert_int_equal(f.u.m.cs.n, 3);
	assert_int_equal(eval_total(&f, 0), hand);
	assert_int_equal(eval_total(&f, 3), hand);
	sl_format_bytes(hand, buf, sizeof buf);
	assert_true(win_has(W[UI_W_MEM], buf));
	/* the pin mark on the operator rows */
	snprintf(want, sizeof want, "rep P");
	assert_true(win_has(W[UI_W_OPS], want));

	/* forbidding the pinned strategy clears the pin; u clears all */
	key(&f, 'u');
	assert_int_equal(f.u.m.pin[2], -1);
	assert_int_equal(f.u.m.cs.n, 2);

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
			k += f.u.m.forbid[1][s];
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
	a0 = f.u.m.alpha;
	for (i = 0; i < 13; i++)
		key(&f, ']');
	assert_true(f.u.m.alpha == 1000 && a0 == 0);
	assert_true(win_has(f.u.win[UI_W_ALPHA], "Alpha 1000 B/us"));
	/* the objective shown is the weighed one of the new alpha */
	{
		char want[64];
		snprintf(want, sizeof want, "objective %lld",
		    (long long)sl_problem_score(f.s.prob, f.u.m.sol.choice));
		assert_true(win_has(f.u.win[UI_W_STATUS], want));
	}
	key(&f, '0');
	assert_true(f.u.m.alpha == 0);
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

/*
 * R recomputes every layer (none -> selective -> full -> none) and re-solves:
 * with full recomputation the plan on screen is the optimum of a space built
 * with --recompute full, and going back to none gives the first plan again.
 */
static void
test_recompute_key(void **state)
{
	struct fixture f;
	WINDOW **W;
	int64_t obj0, obj_full;
	sl_space_opts so;
	sl_space *s2;
	sl_problem *p2;
	sl_solution sol;
	sl_error err;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	term_open(&f, 24, 160, true);
	W = f.u.win;
	assert_true(win_has(W[UI_W_TITLE], "recompute none"));
	obj0 = f.u.m.sol.objective;
	key(&f, 'R');
	assert_true(win_has(W[UI_W_TITLE], "recompute selective"));
	/* flash attention keeps no s^2 tensor: selective changes nothing */
	assert_int_equal(f.u.m.sol.objective, obj0);
	key(&f, 'R');
	assert_true(win_has(W[UI_W_TITLE], "recompute full"));
	assert_true(win_has(W[UI_W_MSG], "recomputation: full"));
	/* the reference: a fresh space with full recomputation, solved */
	sl_error_clear(&err);
	sl_space_opts_default(&so);
	so.recipe.recompute = SL_RECOMP_FULL;
	s2 = sl_space_build(f.s.g, &f.s.mesh, &so, &err);
	assert_non_null(s2);
	p2 = sl_space_problem(s2, 0, NULL, &err);
	assert_non_null(p2);
	sl_solution_init(&sol, p2->n);
	assert_int_equal(sl_solve(p2, SL_SOLVER_DP, NULL, &sol, &err), SL_OK);
	obj_full = sol.objective;
	assert_int_equal(f.u.m.sol.objective, obj_full);
	assert_true(obj_full < obj0);
	sl_solution_free(&sol);
	sl_problem_free(p2);
	sl_space_free(s2);
	key(&f, 'R');
	assert_true(win_has(W[UI_W_TITLE], "recompute none"));
	assert_int_equal(f.u.m.sol.objective, obj0);
	term_close(&f);
	close_model(&f);
}

/* Types text at an open prompt and submits it. */
static void
type_line(struct fixture *f, const char *text)
{
	for (const char *c = text; *c != '\0'; c++)
		key(f, (unsigned char)*c);
	key(f, '\r');
}

/*
 * M asks for the memory limit: a size with its unit fits the plan under
 * it (its timeline's peak) and the memory panel's title says so; one below
 * every plan says how much the least found needs; a size without a unit
 * is refused; empty lifts it.
 */
/* The peak of device 0's timeline under the plan on screen. */
static int64_t
plan_peak(struct fixture *f)
{
	sl_timeline tl;
	sl_error err;
	int64_t peak;

	sl_error_clear(&err);
	assert_int_equal(sl_timeline_build(f->u.m.space, f->u.m.sol.choice, 0,
	    false, &tl, &err), SL_OK);
	peak = tl.peak;
	sl_timeline_free(&tl);
	return peak;
}

static void
test_mem_limit_key(void **state)
{
	struct fixture f;
	WINDOW **W;
	int64_t free_peak, free_sum, least;
	char line[64];
	sl_error err;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	term_open(&f, 24, 160, true);
	W = f.u.win;
	sl_error_clear(&err);
	assert_int_equal(ui_model_set_alpha(&f.u.m, 1e7, &err), SL_OK);
	free_peak = plan_peak(&f);
	free_sum = f.u.m.ev.max_total;
	key(&f, 'M');
	assert_int_equal(f.u.prompt, UI_P_MEMLIMIT);
	assert_true(win_has(W[UI_W_MSG], "Memory limit per device"));
	type_line(&f, "1MiB");
	assert_true(f.u.msg_error);
	assert_true(win_has(W[UI_W_MSG], "no plan fits in 1.00 MiB"));
	assert_true(win_has(W[UI_W_MEM], "limit 1.00 MiB, none fits"));
	least = plan_peak(&f);
	assert_int_equal(least, f.u.m.fit_least);
	assert_true(least < free_peak);
	key(&f, 'M');
	/* the prompt holds the limit in force: clear it first (Ctrl-U) */
	key(&f, 21);
	type_line(&f, "20");
	assert_true(f.u.msg_error);
	assert_true(win_has(W[UI_W_MSG], "not a memory size"));
	key(&f, 'M');
	key(&f, 21);
	snprintf(line, sizeof line, "%lldB", (long long)(least + (free_peak - least) / 2));
	type_line(&f, line);
	assert_false(f.u.msg_error);
	assert_false(f.u.m.fit_none);
	assert_true(f.u.m.fit_searched);
	assert_true(plan_peak(&f) <= least + (free_peak - least) / 2);
	assert_true(win_has(W[UI_W_MSG], "the best plan under it"));
	assert_true(win_has(W[UI_W_MEM], "limit "));
	key(&f, 'M');
	key(&f, 21);
	type_line(&f, "");
	assert_true(win_has(W[UI_W_MSG], "no memory limit"));
	assert_int_equal(f.u.m.ev.max_total, free_sum);
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
	assert_true(ui_plan_changed(&f.u.m));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sl_error_clear(&err);
	assert_int_equal(ui_export_plan(&f.u, path, &err), SL_OK);
	assert_false(ui_plan_changed(&f.u.m));
	memset(&pf, 0, sizeof pf);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	choice = calloc(f.u.m.n, sizeof(int));
	assert_int_equal(sl_plan_choice(f.s.space, &pf, choice, &err), SL_OK);
	for (i = 0; i < f.u.m.n; i++)
		assert_int_equal(choice[i], f.u.m.sol.choice[i]);
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

/*
 * The graph panel lays its neighbourhood out again on every move: with one
 * Graphviz context for the process (a context per drawing kept part of
 * the plugin configuration each time, 17.6 KB a render), thirty layouts
 * leave the heap where one left it, within 256 bytes a layout.  The heap
 * is counted by glibc (mallinfo2); under AddressSanitizer, whose allocator
 * it does not see, LeakSanitizer checks at exit instead.
 */
static void
test_graph_layouts_no_growth(void **state)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33) && \
    !defined(__SANITIZE_ADDRESS__)
	struct fixture f;
	size_t before, after;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 60, 200, true);
	select_strategy(&f, "gelu", "dp");
	/* the background work (GLPK, the sweep) done: its allocations are not
	 * the layouts' */
	for (int i = 0; i < 6000 && (f.u.m.front_busy ||
	    f.u.m.confirm == UI_CONF_RUNNING); i++) {
		ui_poll_jobs(&f.u);
		usleep(10000);
	}
	/* the first layouts fill Graphviz's and fontconfig's caches */
	for (int i = 0; i < 3; i++) {
		ui_graph_invalidate(&f.u);
		f.u.dirty |= UI_D_ALL;
		ui_draw(&f.u);
	}
	before = mallinfo2().uordblks;
	for (int i = 0; i < 30; i++) {
		ui_graph_invalidate(&f.u);
		f.u.dirty |= UI_D_ALL;
		ui_draw(&f.u);
	}
	after = mallinfo2().uordblks;
	print_message("30 layouts: heap %zu -> %zu bytes\n", before, after);
	/* (closed before asserting: a failure must not leave threads behind) */
	bool drawn = win_has(f.u.win[UI_W_GRAPH], "┌gelu");
	term_close(&f);
	close_model(&f);
	assert_true(drawn);
	assert_true(after <= before + 30 * 256);
#else
	skip();
#endif
}

/* Reads a whole file into a malloc'd string (NULL when it cannot). */
static char *
slurp_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (fp == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 &&
	    fseek(fp, 0, SEEK_SET) == 0 && (s = calloc(1, (size_t)n + 1)) != NULL &&
	    fread(s, 1, (size_t)n, fp) != (size_t)n) {
		free(s);
		s = NULL;
	}
	fclose(fp);
	return s;
}

/*
 * e and E never write over what the explorer read: the open model (here a
 * copy of mlp-2layer) and a plan it reopened are refused, said in the
 * message, and left as they were; another file is written.
 */
static void
test_export_over_inputs(void **state)
{
	struct fixture f;
	sl_plan_file pf;
	sl_error err;
	char model[] = "/tmp/test_ui_draw_model_XXXXXX", plan[] =
	    "/tmp/test_ui_draw_plan_XXXXXX";
	char *before, *after, *src, p[4096];
	FILE *fp;
	int fd;

	/* as the program (main.c) guards what it read */
	sl_inputs_guard(true);
	snprintf(p, sizeof p, "%s/models/mlp-2layer.json", sl_datadir());
	assert_non_null(src = slurp_file(p));
	assert_true((fd = mkstemp(model)) >= 0);
	assert_non_null(fp = fdopen(fd, "w"));
	fputs(src, fp);
	fclose(fp);
	assert_int_equal(open_model(&f, model, 4), 0);
	term_open(&f, 24, 80, true);
	before = slurp_file(model);
	sl_error_clear(&err);
	assert_int_equal(ui_export_plan(&f.u, model, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "would overwrite an input of the command"));
	sl_error_clear(&err);
	assert_int_equal(ui_export_svg(&f.u, model, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "would overwrite an input of the command"));
	after = slurp_file(model);
	assert_string_equal(before, after);
	free(after);

	/* a plan written, then read as the explorer reopens one */
	assert_true((fd = mkstemp(plan)) >= 0);
	close(fd);
	assert_int_equal(ui_export_plan(&f.u, plan, &err), SL_OK);
	memset(&pf, 0, sizeof pf);
	assert_int_equal(sl_plan_read(plan, &pf, &err), SL_OK);
	sl_plan_file_free(&pf);
	sl_error_clear(&err);
	assert_int_equal(ui_export_plan(&f.u, plan, &err), SL_EINPUT);
	term_close(&f);
	close_model(&f);
	unlink(model);
	unlink(plan);
	free(before);
	free(src);
	sl_inputs_guard(false);
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

	for (i = 0; i < 2000 && f->u.m.vrunning; i++) {
		ui_poll_jobs(&f->u);
		if (f->u.m.vrunning)
			usleep(10000);
	}
	assert_false(f->u.m.vrunning);
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
	assert_true(f.u.m.vrunning);
	assert_true(win_has(W[UI_W_MSG], "validating the plan"));
	assert_true(win_has(W[UI_W_MEM], "validating..."));
	wait_validation(&f);
	assert_true(f.u.m.have_vres);
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
	/* the stand-in replays the events (with jq): the timeline's peak,
	 * 8,912,896 bytes, held exactly */
	if (system("command -v jq >/dev/null 2>&1") == 0)
		assert_non_null(strstr(f.u.text,
		    "timeline peak          8.50 MiB       8.50 MiB     +0.00%"));
	key(&f, 'q');		/* closes the report */
	assert_null(f.u.text);
	assert_false(f.u.quit);

	/* another plan: the measurement no longer applies */
	op = select_strategy(&f, "fc2", "rep");
	key(&f, 'p');
	assert_int_equal(f.u.m.sol.choice[op],
	    sl_space_find_strategy(f.s.space, op, "rep"));
	assert_false(win_has(W[UI_W_MEM], "10.00 MiB"));
	assert_true(win_has(W[UI_W_MEM], "an earlier plan"));

	/* a runner that does not finish: v cancels it */
	setenv("FAKE_MODE", "slow", 1);
	key(&f, 'v');
	assert_true(f.u.m.vrunning);
	assert_true(f.u.m.vjob.pid > 0);
	key(&f, 'v');
	assert_false(f.u.m.vrunning);
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
	assert_false(f.u.m.vrunning);
	assert_true(win_has(W[UI_W_MSG], "SHARDLAB_RUNNER names"));

	/* quitting while one runs stops the runner */
	setenv("SHARDLAB_RUNNER", runner, 1);
	setenv("FAKE_MODE", "slow", 1);
	key(&f, 'v');
	assert_true(f.u.m.vrunning);
	{
		pid_t pid = f.u.m.vjob.pid;
		term_close(&f);
		close_model(&f);
		assert_int_equal(kill(pid, 0), -1);
	}
	unlink(runner);
	unsetenv("SHARDLAB_RUNNER");
	unsetenv("FAKE_MODE");
}


/*
 * The help at 80x24 and 60x18: it says that it scrolls and where it is, and
 * paging down shows every key with its whole text (wrapped, not cut), up
 * to the last; past the end there is no blank page.
 */
static void
help_at(int lines, int cols)
{
	struct fixture f;
	struct ui_event pgdn = { .key = KEY_NPAGE, .fn = true };
	static char seen[65536];
	char want[512];
	WINDOW *hw;
	size_t k;
	int i, top;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	term_open(&f, lines, cols, true);
	key(&f, '?');
	assert_non_null(f.u.text);
	assert_true(f.u.show_help);
	hw = newwin(f.u.lines - 3, f.u.cols, 1, 0);
	ui_draw_text(hw, &f.u);
	assert_non_null(strstr(row(hw, 0), "lines 1-"));
	assert_true(win_has(f.u.win[UI_W_MSG], "PgDn scroll"));
	assert_false(win_has(f.u.win[UI_W_MSG], "Tab panel"));
	seen[0] = '\0';
	for (i = 0; i < 20; i++) {
		werase(hw);
		ui_draw_text(hw, &f.u);
		join_rows(hw, 1, seen, sizeof seen);
		top = f.u.text_top;
		ui_handle_event(&f.u, pgdn);
		if (f.u.text_top == top)
			break;
	}
	assert_true(i < 20);
	/* the last page is full: no blank rows below the last key */
	{
		const char *r = row(hw, getmaxy(hw) - 1);
		assert_true(strspn(r, " ") < strlen(r));
	}
	for (k = 0; k < ui_n_keys; k++) {
		if (ui_keys[k].help == NULL)
			continue;
		snprintf(want, sizeof want, "%s %s ", ui_keys[k].name,
		    ui_keys[k].help);
		if (strstr(seen, want) == NULL)
			print_error("help at %dx%d lacks \"%s\" in \"%s\"\n", cols,
			    lines, want, seen);
		assert_non_null(strstr(seen, want));
	}
	delwin(hw);
	key(&f, 'x');			/* not a scroll key: closes */
	assert_null(f.u.text);
	assert_false(f.u.show_help);
	term_close(&f);
	close_model(&f);
}

static void
test_help_scrolls(void **state)
{
	help_at(24, 80);
	help_at(18, 60);
}

/*
 * Nothing of the headers is cut at 80x24 and 60x18 on a 16x8 mesh, where
 * strategy names are long: the strategies header has its columns whole, the
 * output specs (when shown) are whole, the status line and the key hints
 * end with what they started.
 */
static void
headers_at(int lines, int cols)
{
	struct fixture f;
	int shape[2] = { 16, 8 }, op, s, y;
	char sp[64];
	WINDOW **W;
	const char *r;

	assert_int_equal(open_model_mesh(&f, "gpt-1.7b", 2, shape), 0);
	term_open(&f, lines, cols, true);
	W = f.u.win;
	for (op = 0; op < 3; op++) {
		const sl_op *o = &f.s.g->ops[op];
		const sl_tensor *t = &f.s.g->tensors[o->out[0]];
		ui_rows_select_op(&f.u, op);
		ui_draw(&f.u);
		r = row(W[UI_W_STRATS], 1);
		assert_non_null(strstr(r, "strategy"));
		assert_non_null(strstr(r, "mem/device"));
		assert_non_null(strstr(r, "comm/step"));
		if (strstr(r, "output") != NULL || strstr(r, "spec") != NULL) {
			assert_true(strstr(r, "output spec") != NULL ||
			    strstr(r, " spec") != NULL);
			/* every visible spec whole */
			for (y = 2, s = f.u.strat_top; y < getmaxy(W[UI_W_STRATS]) &&
			    s < f.s.space->ops[op].n_strat; y++, s++) {
				sl_spec_format(&f.s.space->ops[op].strat[s].spec[o->n_in],
				    t->rank, sp, sizeof sp);
				assert_non_null(strstr(row(W[UI_W_STRATS], y), sp));
			}
		}
		/* the title names the operator whole, or says it was cut */
		r = row(W[UI_W_STRATS], 0);
		assert_true(strstr(r, f.s.g->ops[op].name) != NULL ||
		    strstr(r, "…") != NULL);
	}
	r = row(W[UI_W_STATUS], 0);
	if (strstr(r, "plan unchanged") == NULL)
		dump(W[UI_W_STATUS]);
	assert_non_null(strstr(r, "plan unchanged"));
	assert_null(strstr(r, "…"));
	assert_null(strstr(r, "(too large"));
	r = row(W[UI_W_MSG], 0);
	assert_non_null(strstr(r, "? help  q quit"));
	term_close(&f);
	close_model(&f);
}

static void
test_no_cut_headers(void **state)
{
	headers_at(24, 80);
	headers_at(18, 60);
}

/*
 * Names stay distinguishable when they must be shortened: the middle gives
 * way, the start and the end stay.  At 60x18 with a pin and forbids on
 * every layer's ln1 (marks take room), no two operator rows read the same.
 */
static void
test_names_distinguishable(void **state)
{
	struct fixture f;
	char a[64], b[64], seen[64][64];
	int shape[2] = { 16, 8 }, y, i, n = 0;

	assert_string_equal(ui_abbrev("layer0.ln1", 8, "…", a, sizeof a),
	    "la…0.ln1");
	assert_string_equal(ui_abbrev("layer0.ln2", 8, "…", b, sizeof b),
	    "la…0.ln2");
	assert_string_equal(ui_abbrev("fc1", 8, "…", a, sizeof a), "fc1");
	assert_int_equal(cli_text_width(ui_abbrev("layer12.attention_out", 9, "…",
	    a, sizeof a)), 9);

	assert_int_equal(open_model_mesh(&f, "gpt-1.7b", 2, shape), 0);
	term_open(&f, 18, 60, true);
	select_strategy(&f, "layer0.ln1", f.s.space->ops[sl_graph_find_op(f.s.g,
	    "layer0.ln1")].strat[0].name);
	key(&f, 'P');
	f.u.strat_cur = 1;
	key(&f, 'F');
	f.u.strat_cur = 2;
	key(&f, 'F');
	for (y = 1; y < getmaxy(f.u.win[UI_W_OPS]); y++) {
		const char *r = row(f.u.win[UI_W_OPS], y);
		char name[64];
		if (sscanf(r, " %63s", name) != 1 || strncmp(name, "layer0.", 2) != 0)
			continue;
		for (i = 0; i < n; i++)
			if (strcmp(seen[i], name) == 0) {
				dump(f.u.win[UI_W_OPS]);
				fail_msg("two operator rows read \"%s\"", name);
			}
		snprintf(seen[n++], sizeof seen[0], "%s", name);
	}
	assert_true(n >= 10);
	term_close(&f);
	close_model(&f);
}

/*
 * The strategy graph at 80x24 (g): every edge carries its label, the
 * resharding buffer and time of the chosen pair, as the cost model gives
 * them; the operators panel keeps the keys.
 */
static void
test_graph_edge_labels(void **state)
{
	struct fixture f;
	char want[64], b1[32], b2[32];
	int e, y, n, found;
	WINDOW *gw;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	select_strategy(&f, "gelu", "dp");
	f.u.focus = UI_FOCUS_STRATS;
	key(&f, 'g');
	assert_true(f.u.show_graph);
	assert_int_equal(f.u.focus, UI_FOCUS_OPS);
	gw = f.u.win[UI_W_GRAPH];
	assert_true(win_has(gw, "Strategy graph around gelu"));
	for (e = 0; e < f.s.space->n_edges; e++) {
		const sl_space_edge *ed = &f.s.space->edges[e];
		sl_mem mem;
		sl_comm comm;
		int64_t ns = 0;
		int c;
		sl_edge_cost(f.s.space, e, f.u.m.sol.choice[ed->src],
		    f.u.m.sol.choice[ed->dst], NULL, &mem, &comm);
		for (c = 0; c < SL_COLL_COUNT; c++)
			ns += comm.ns[c];
		snprintf(want, sizeof want, "%s %s",
		    sl_format_bytes(sl_mem_total(&mem), b1, sizeof b1),
		    sl_format_ns(ns, b2, sizeof b2));
		/* as many rows show the label as edges have it */
		for (n = 0, c = 0; c < f.s.space->n_edges; c++) {
			char w2[64];
			const sl_space_edge *e2 = &f.s.space->edges[c];
			sl_edge_cost(f.s.space, c, f.u.m.sol.choice[e2->src],
			    f.u.m.sol.choice[e2->dst], NULL, &mem, &comm);
			for (ns = 0, y = 0; y < SL_COLL_COUNT; y++)
				ns += comm.ns[y];
			snprintf(w2, sizeof w2, "%s %s",
			    sl_format_bytes(sl_mem_total(&mem), b1, sizeof b1),
			    sl_format_ns(ns, b2, sizeof b2));
			n += strcmp(w2, want) == 0;
		}
		for (found = 0, y = 1; y < getmaxy(gw); y++)
			found += strstr(row(gw, y), want) != NULL;
		if (found < n)
			dump(gw);
		assert_true(found >= n);
	}
	/* each box: the name, the chosen strategy and how many there are */
	snprintf(want, sizeof want, "%s of %d", ui_strat_name(&f.u.m, 1,
	    f.u.m.sol.choice[1]), f.s.space->ops[1].n_strat);
	assert_true(win_has(gw, want));
	assert_true(win_has(gw, "▼"));
	/* with the graph shown, Down moves the operator cursor */
	key(&f, 'j');
	assert_int_equal(ui_row_op(&f.u), 2);
	term_close(&f);
	close_model(&f);
}

/* Tab on a freshly opened model lands on the chosen strategy; x explains it. */
static void
test_fresh_tab_explain(void **state)
{
	struct fixture f;
	char want[128];
	int op;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	term_open(&f, 24, 80, true);
	op = ui_row_op(&f.u);
	assert_int_equal(op, sl_graph_find_op(f.s.g, "embed"));
	key(&f, '\t');
	assert_int_equal(f.u.focus, UI_FOCUS_STRATS);
	assert_int_equal(f.u.strat_cur, f.u.m.sol.choice[op]);
	key(&f, 'x');
	assert_non_null(f.u.text);
	snprintf(want, sizeof want, "Operator embed (embedding), strategy %s\n",
	    f.s.space->ops[op].strat[f.u.m.sol.choice[op]].name);
	assert_non_null(strstr(f.u.text, want));
	term_close(&f);
	close_model(&f);
}

/*
 * A mixture's experts on screen: the strategies panel of an experts
 * operator says how many experts there are and how many a device holds
 * under the plan, and x explains where each lives.
 */
static void
test_moe_experts(void **state)
{
	struct fixture f;
	char path[512];
	const char *dir = getenv("TESTS_SRCDIR");
	int op;

	snprintf(path, sizeof path, "%s/data/moe-tiny.json", dir ? dir : "tests");
	assert_int_equal(open_model(&f, path, 4), 0);
	term_open(&f, 48, 160, true);
	op = sl_graph_find_op(f.s.g, "layer0.experts");
	assert_true(op >= 0);
	snprintf(f.u.search, sizeof f.u.search, "layer0.experts");
	key(&f, 'n');
	assert_int_equal(ui_row_op(&f.u), op);
	assert_true(win_has(f.u.win[UI_W_STRATS], "8 experts, top-2;"));
	/* the exp strategy: each of the 4 devices holds 2 experts */
	key(&f, '\t');
	f.u.strat_cur = sl_space_find_strategy(f.s.space, op, "exp");
	assert_true(f.u.strat_cur >= 0);
	key(&f, 'x');
	assert_non_null(f.u.text);
	assert_non_null(strstr(f.u.text, "Experts on each device"));
	assert_non_null(strstr(f.u.text, "device 3: experts 6-7"));
	term_close(&f);
	close_model(&f);
}

/* Waits for the background sweep, as the main loop would, up to 60 s. */
static void
wait_frontier(struct fixture *f)
{
	int i;

	for (i = 0; i < 6000 && !f->u.m.have_front; i++) {
		ui_poll_jobs(&f->u);
		if (!f->u.m.have_front)
			usleep(10000);
	}
	assert_true(f->u.m.have_front);
	f->u.dirty |= UI_D_ALL;
	ui_draw(&f->u);
}

/*
 * [ ] step through the frontier: from alpha 0, each step is the next plan
 * of the sweep, in order, with its memory and communication; past the end
 * it stays on the last.  The slider says which plan and what alpha means.
 */
static void
test_alpha_frontier_steps(void **state)
{
	struct fixture f;
	char want[128];
	int i, n;

	assert_int_equal(open_model(&f, "gpt-1.7b", 8), 0);
	term_open(&f, 24, 80, true);
	wait_frontier(&f);
	n = f.u.m.front.n;
	assert_true(n >= 3);
	key(&f, '0');
	assert_true(win_has(f.u.win[UI_W_ALPHA], "alpha 0: memory only"));
	for (i = 0; i < n; i++) {
		assert_int_equal(ui_front_index(&f.u.m), i);
		assert_int_equal(f.u.m.ev.mem_part, f.u.m.front.pt[i].mem);
		assert_int_equal(f.u.m.ev.comm_ns, f.u.m.front.pt[i].comm_ns);
		snprintf(want, sizeof want, "Alpha: plan %d of %d", i + 1, n);
		if (!win_has(f.u.win[UI_W_ALPHA], want))
			dump(f.u.win[UI_W_ALPHA]);
		assert_true(win_has(f.u.win[UI_W_ALPHA], want));
		if (i > 0) {
			/* alpha bytes per us: 1 ms is worth 1000 alpha bytes */
			char b[32];
			sl_format_bytes((int64_t)llround(f.u.m.alpha * 1000), b, sizeof b);
			snprintf(want, sizeof want, "is worth %s", b);
			assert_true(win_has(f.u.win[UI_W_MSG], want) ||
			    win_has(f.u.win[UI_W_ALPHA], want));
		}
		key(&f, ']');
	}
	assert_int_equal(ui_front_index(&f.u.m), n - 1);
	for (i = n - 1; i > 0; i--)
		key(&f, '[');
	assert_int_equal(ui_front_index(&f.u.m), 0);
	term_close(&f);
	close_model(&f);
}

/*
 * U says how many operators it cleared (those that had a pin or a forbid);
 * a forbid in one layer marks the folded row "mixed".
 */
static void
test_clear_count_and_mixed(void **state)
{
	struct fixture f;
	int op;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	term_open(&f, 24, 80, true);
	op = select_strategy(&f, "layer0.qkv", "dp");
	assert_false(win_has(f.u.win[UI_W_OPS], "mixed"));
	key(&f, 'P');
	assert_true(win_has(f.u.win[UI_W_MSG], "pinned dp at 24 operators"));
	key(&f, 'U');
	assert_true(win_has(f.u.win[UI_W_MSG],
	    "cleared pins and forbids of 24 operators"));
	/* one layer only: the folded row no longer speaks for all */
	ui_rows_select_op(&f.u, op);
	f.u.strat_cur = sl_space_find_strategy(f.s.space, op, "rep");
	key(&f, 'f');
	assert_true(win_has(f.u.win[UI_W_OPS], "mixed"));
	key(&f, 'U');
	assert_true(win_has(f.u.win[UI_W_MSG],
	    "cleared pins and forbids of 1 operator"));
	assert_false(win_has(f.u.win[UI_W_OPS], "mixed"));
	term_close(&f);
	close_model(&f);
}

/*
 * In Chinese, from the build tree, with only the user's language set (no
 * SHARDLAB_LOCALEDIR): the panels speak Chinese, and the strategies header
 * ends in the column where its figures end (display columns).
 */
static void
test_zh_CN_80x24(void **state)
{
	struct fixture f;
	WINDOW **W;
	int hc, rc;

	unsetenv("SHARDLAB_LOCALEDIR");
	setenv("LANGUAGE", "zh_CN", 1);
	bindtextdomain(PACKAGE, sl_localedir());
	textdomain(PACKAGE);
	if (strcmp(_("Operators (%d)"), "Operators (%d)") == 0) {
		unsetenv("LANGUAGE");
		print_message("skipped: no zh_CN catalogue under %s\n", sl_localedir());
		skip();
	}
	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	term_open(&f, 24, 80, true);
	W = f.u.win;
	assert_true(win_has(W[UI_W_OPS], "算子 (3)"));
	assert_true(win_has(W[UI_W_STATUS], "目标值"));
	hc = col_after(W[UI_W_STRATS], 1, "内存/设备");
	rc = col_after(W[UI_W_STRATS], 2, "MiB");
	if (hc < 0 || hc != rc) {
		dump(W[UI_W_STRATS]);
		fail_msg("header ends at column %d, figures at %d", hc, rc);
	}
	/* help in Chinese, each key's text whole on some page */
	key(&f, '?');
	assert_non_null(strstr(f.u.text, "帮助") != NULL ? f.u.text :
	    strstr(f.u.text_title, "按键"));
	term_close(&f);
	close_model(&f);
	unsetenv("LANGUAGE");
	textdomain(PACKAGE);
}


static sl_graph *
stages_model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	sl_model_opts mo = { .micro_batch = batch, .devices = 1, .seq = seq };

	return sl_model_open(ctx, &mo, err);
}

/* s with the boundary marker (a box-drawing bar) made a space. */
static const char *
plain(const char *s)
{
	static char buf[2048];
	const char *bar = "\xe2\x94\x82";	/* U+2502 */
	size_t o = 0;

	for (; *s != '\0' && o + 1 < sizeof buf; s++) {
		if (strncmp(s, bar, 3) == 0) {
			s += 2;
			buf[o++] = ' ';
		} else
			buf[o++] = *s;
	}
	buf[o] = '\0';
	return buf;
}

/* The configuration the stages panel shows, read back from window hw. */
struct shown_stages {
	int pp, devices, layers[2], dev[2];
	int64_t m, gb, in_flight[2];
	char sched[32], rec[2][16];
};

static void
read_stages(WINDOW *hw, struct shown_stages *s)
{
	int h = getmaxy(hw);

	memset(s, 0, sizeof *s);
	assert_int_equal(sscanf(strstr(row(hw, 0), "Pipeline: "),
	    "Pipeline: %d stages x %d devices, %31[^,], %" SCNd64 " micro-batches of %" SCNd64,
	    &s->pp, &s->devices, s->sched, &s->m, &s->gb), 5);
	assert_non_null(strstr(row(hw, 4), "stage 1"));
	assert_non_null(strstr(row(hw, 4), "stage 2"));
	assert_null(strstr(row(hw, 4), "stage 3"));
	assert_int_equal(sscanf(plain(row(hw, 5)), " %d layers %d layers", &s->layers[0],
	    &s->layers[1]), 2);
	/* per stage "dN xK" and its recomputation when it has one */
	{
		char copy[512];
		int j = -1;
		snprintf(copy, sizeof copy, "%s", plain(row(hw, h - 2)));
		for (char *tok = strtok(copy, " "); tok != NULL; tok = strtok(NULL, " ")) {
			if (tok[0] == 'd' && tok[1] >= '0' && tok[1] <= '9' && j < 1) {
				j++;
				s->dev[j] = atoi(tok + 1);
				snprintf(s->rec[j], sizeof s->rec[j], "none");
			} else if (tok[0] == 'x' && j >= 0)
				s->in_flight[j] = strtoll(tok + 1, NULL, 10);
			else if (j >= 0)
				snprintf(s->rec[j], sizeof s->rec[j], "%s", tok);
		}
		assert_int_equal(j, 1);
	}
}

/* sl_pipeline_eval of what the panel shows: the memory in each column is
 * its device's peak. */
/* layer0.fc1's strategy in stage 1 of the last pipeline checked */
static char stages_fc1[32];

static void
check_stages_mem_cs(struct fixture *f, WINDOW *hw, const struct shown_stages *s,
    const sl_constraints *cs)
{
	sl_pipe_config c;
	sl_pipeline pl;
	sl_recompute rec[2];
	sl_error err;
	char b[32];

	memset(&c, 0, sizeof c);
	c.pp = s->pp;
	c.virt = 1;
	c.outer = 1;
	c.inner = s->devices;
	c.graph_batch = s->gb;
	c.micro_batches = s->m;
	c.layers = s->layers;
	for (int j = 0; j < 2; j++)
		rec[j] = strcmp(s->rec[j], "full") == 0 ? SL_RECOMP_FULL :
		    strcmp(s->rec[j], "selective") == 0 ? SL_RECOMP_SELECTIVE :
		    SL_RECOMP_NONE;
	c.recompute = rec;
	sl_error_clear(&err);
	{
		/* the options the panel evaluates with, and the model */
		sl_hybrid_opts o;
		sl_hybrid_opts_default(&o);
		o.model = stages_model;
		o.model_ctx = (void *)"gpt-1.7b";
		o.hw = f->s.mesh.hw;
		o.devices = f->s.mesh.n_devices;
		o.space = f->s.space->opts;
		o.space.recipe.micro_batch = 1;
		if (cs == NULL)
			assert_int_equal(sl_pipeline_eval(&o, &c, &pl, &err), SL_OK);
		else {
			sl_pipe_ctx *ctx = sl_pipe_ctx_new(&o);
			int skipped = -1;
			sl_pipe_ctx_constrain(ctx, cs);
			assert_int_equal(sl_pipe_ctx_eval(ctx, &c, &pl, &skipped, &err), SL_OK);
			assert_int_equal(skipped, 0);
			sl_pipe_ctx_free(ctx);
			/* the pin holds at its position in every layer of both stages */
			for (int j = 0; j < 2; j++) {
				char nm[32];
				snprintf(nm, sizeof nm, "layer%d.fc1", pl.stage[j].first_layer);
				assert_string_equal(pl.stage[j].strategy[
				    sl_graph_find_op(f->s.g, nm) - pl.stage[j].first_op],
				    cs->c[0].strategy);
			}
		}
	}
	snprintf(stages_fc1, sizeof stages_fc1, "%s",
	    pl.stage[0].strategy[sl_graph_find_op(f->s.g, "layer0.fc1")]);
	for (int j = 0; j < 2; j++) {
		assert_int_equal(pl.stage[j].n_layers, s->layers[j]);
		assert_int_equal(pl.dev[j].in_flight, s->in_flight[j]);
		assert_int_equal(ui_stages_mem(&f->u, j), pl.dev[j].mem);
		sl_format_bytes(pl.dev[j].mem, b, sizeof b);
		if (strstr(row(hw, 7), b) == NULL)
			dump(hw);
		assert_non_null(strstr(row(hw, 7), b));
		/* the activations of the micro-batches it keeps, by category */
		sl_format_bytes(pl.dev[j].in_flight * pl.stage[j].acts, b, sizeof b);
		assert_true(win_has(hw, b));
	}
	sl_pipeline_free(&pl);
}

static void
check_stages_mem(struct fixture *f, WINDOW *hw, const struct shown_stages *s)
{
	check_stages_mem_cs(f, hw, s, NULL);
}

/*
 * The stages panel (S) at 80x24 on gpt-1.7b, 4 devices, --pp 2: two stage
 * columns whose layers add up to the model's; Right moves the boundary one
 * layer; the memory shown is sl_pipeline_eval's for the same configuration,
 * before and after.
 */
static void
test_stages_80x24(void **state)
{
	struct fixture f;
	struct ui_event right = { .key = KEY_RIGHT, .fn = true };
	struct ui_event left = { .key = KEY_LEFT, .fn = true };
	struct shown_stages a, b;
	WINDOW *hw;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	f.o.pp = 2;
	ui_stages_setup(&f.u, &f.o);
	term_open(&f, 24, 80, true);
	key(&f, 'S');
	assert_true(ui_stages_is_open(&f.u));
	hw = newwin(f.u.lines - 3, f.u.cols, 1, 0);
	ui_draw_stages(hw, &f.u);
	read_stages(hw, &a);
	assert_int_equal(a.pp, 2);
	assert_int_equal(a.devices, 2);
	assert_int_equal(a.layers[0] + a.layers[1], f.s.g->n_layers);
	check_stages_mem(&f, hw, &a);
	/* the boundary one layer to the right, or left when stage 2 has one */
	ui_handle_event(&f.u, a.layers[1] > 1 ? right : left);
	werase(hw);
	ui_draw_stages(hw, &f.u);
	read_stages(hw, &b);
	assert_int_equal(b.layers[0], a.layers[0] + (a.layers[1] > 1 ? 1 : -1));
	assert_int_equal(b.layers[1], a.layers[1] - (a.layers[1] > 1 ? 1 : -1));
	check_stages_mem(&f, hw, &b);
	/* - and + change the degree: 1 stage has no boundary, back to 2 */
	key(&f, '+');
	werase(hw);
	ui_draw_stages(hw, &f.u);
	assert_non_null(strstr(row(hw, 0), "Pipeline: 4 stages x 1 device"));
	assert_non_null(strstr(row(hw, 4), "stage 4"));
	key(&f, '-');
	werase(hw);
	ui_draw_stages(hw, &f.u);
	read_stages(hw, &b);
	assert_int_equal(b.layers[0], f.s.g->n_layers / 2);
	check_stages_mem(&f, hw, &b);
	key(&f, 'S');
	assert_false(ui_stages_is_open(&f.u));
	/*
	 * Pinned in the operator view (fc1 at every layer, to col, or row where
	 * the stages chose col): the panel re-evaluates when it opens again,
	 * says the pins hold, and shows the memory of the pinned stages.
	 */
	{
		int op = sl_graph_find_op(f.s.g, "layer0.fc1");
		const char *to = strcmp(stages_fc1, "col") == 0 ? "row" : "col";
		ui_constrain(&f.u, op, sl_space_find_strategy(f.s.space, op, to),
		    UI_ACT_PIN, true);
		assert_int_equal(f.u.m.cs.n, 24);
		key(&f, 'S');
		werase(hw);
		ui_draw_stages(hw, &f.u);
		assert_non_null(strstr(row(hw, 2), "pins hold in the stages"));
		read_stages(hw, &a);
		check_stages_mem_cs(&f, hw, &a, &f.u.m.cs);
		assert_int_equal(a.layers[0], b.layers[0]);
		assert_string_equal(stages_fc1, to);
	}
	delwin(hw);
	term_close(&f);
	close_model(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp_80x24),
		cmocka_unit_test(test_mlp_pin_rep),
		cmocka_unit_test(test_alpha_slider),
		cmocka_unit_test(test_mlp_200x60_graph),
		cmocka_unit_test(test_graph_layouts_no_growth),
		cmocka_unit_test(test_too_small_and_ascii),
		cmocka_unit_test(test_gpt_folded_layers),
		cmocka_unit_test(test_export_roundtrip),
		cmocka_unit_test(test_export_over_inputs),
		cmocka_unit_test(test_keys_in_man_page),
		cmocka_unit_test(test_recompute_key),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_help_scrolls),
		cmocka_unit_test(test_mem_limit_key),
		cmocka_unit_test(test_no_cut_headers),
		cmocka_unit_test(test_names_distinguishable),
		cmocka_unit_test(test_graph_edge_labels),
		cmocka_unit_test(test_fresh_tab_explain),
		cmocka_unit_test(test_moe_experts),
		cmocka_unit_test(test_alpha_frontier_steps),
		cmocka_unit_test(test_clear_count_and_mixed),
		cmocka_unit_test(test_zh_CN_80x24),
		cmocka_unit_test(test_stages_80x24),
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
