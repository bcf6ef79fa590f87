/*
 * ui_keys.c: what each key does.  One table row per key: the help screen
 * (`?`) and the man page list the same rows.  Text prompts (search, export
 * paths, the quit question) take the keys while they are open.
 */
#include "ui.h"

#include <stdlib.h>
#include <wctype.h>

static int
ui_visible(const ui *u, enum ui_win w, int chrome)
{
	int h = u->win[w] != NULL ? getmaxy(u->win[w]) - chrome : 1;
	return h < 1 ? 1 : h;
}

static void
ui_move(ui *u, int d)
{
	int op, k;

	if (u->focus == UI_FOCUS_OPS || (u->show_graph && !u->wide)) {
		u->row_cur += d;
		if (u->row_cur >= u->n_rows)
			u->row_cur = u->n_rows - 1;
		if (u->row_cur < 0)
			u->row_cur = 0;
		op = ui_row_op(u);
		u->strat_cur = ui_chosen(&u->m, op) < 0 ? 0 : ui_chosen(&u->m, op);
		u->strat_top = 0;
		u->dirty |= UI_D_OPS | UI_D_STRATS | UI_D_GRAPH;
	} else {
		op = ui_row_op(u);
		k = op < 0 ? 1 : ui_op_k(&u->m, op);
		u->strat_cur += d;
		if (u->strat_cur >= k)
			u->strat_cur = k - 1;
		if (u->strat_cur < 0)
			u->strat_cur = 0;
		u->dirty |= UI_D_STRATS;
	}
}

static void k_up(ui *u, struct ui_event e) { ui_move(u, -1); }
static void k_down(ui *u, struct ui_event e) { ui_move(u, 1); }
static void k_pgup(ui *u, struct ui_event e)
{
	ui_move(u, -ui_visible(u, u->focus == UI_FOCUS_OPS ? UI_W_OPS :
	    UI_W_STRATS, 2));
}
static void k_pgdn(ui *u, struct ui_event e)
{
	ui_move(u, ui_visible(u, u->focus == UI_FOCUS_OPS ? UI_W_OPS :
	    UI_W_STRATS, 2));
}
static void k_home(ui *u, struct ui_event e) { ui_move(u, -1000000); }
static void k_end(ui *u, struct ui_event e) { ui_move(u, 1000000); }

static void
k_tab(ui *u, struct ui_event e)
{
	if (u->show_graph && !u->wide) {
		u->show_graph = false;
		u->focus = UI_FOCUS_STRATS;
		u->dirty |= UI_D_ALL;
		return;
	}
	u->focus = u->focus == UI_FOCUS_OPS ? UI_FOCUS_STRATS : UI_FOCUS_OPS;
	u->dirty |= UI_D_OPS | UI_D_STRATS;
}

static struct ui_row *
ui_cur_row(ui *u)
{
	return u->n_rows > 0 ? &u->rows[u->row_cur] : NULL;
}

static void
ui_set_fold(ui *u, int group, enum ui_fold m)
{
	int i;

	u->groups[group].mode = m;
	ui_rows_build(u);
	for (i = 0; i < u->n_rows; i++)
		if (u->rows[i].kind == UI_ROW_GROUP && u->rows[i].group == group)
			u->row_cur = i;
}

static void
k_enter(ui *u, struct ui_event e)
{
	struct ui_row *r = ui_cur_row(u);

	if (r == NULL)
		return;
	if (r->kind == UI_ROW_GROUP) {
		struct ui_group *g = &u->groups[r->group];
		enum ui_fold next = g->mode == UI_FOLD_CLOSED ? UI_FOLD_ONCE :
		    g->mode == UI_FOLD_ONCE && g->n_layers > 1 ? UI_FOLD_ALL :
		    UI_FOLD_CLOSED;
		ui_set_fold(u, r->group, next);
	} else if (u->focus == UI_FOCUS_OPS) {
		k_tab(u, e);
	}
}

static void
k_right(ui *u, struct ui_event e)
{
	struct ui_row *r = ui_cur_row(u);

	if (r == NULL)
		return;
	if (r->kind == UI_ROW_GROUP) {
		struct ui_group *g = &u->groups[r->group];
		if (g->mode == UI_FOLD_CLOSED)
			ui_set_fold(u, r->group, UI_FOLD_ONCE);
		else if (g->mode == UI_FOLD_ONCE && g->n_layers > 1)
			ui_set_fold(u, r->group, UI_FOLD_ALL);
	} else if (u->focus == UI_FOCUS_OPS) {
		k_tab(u, e);
	}
}

static void
k_left(ui *u, struct ui_event e)
{
	struct ui_row *r = ui_cur_row(u);
	int i;

	if (r == NULL)
		return;
	if (u->focus == UI_FOCUS_STRATS) {
		k_tab(u, e);
		return;
	}
	if (r->kind == UI_ROW_GROUP) {
		struct ui_group *g = &u->groups[r->group];
		if (g->mode == UI_FOLD_ALL)
			ui_set_fold(u, r->group, UI_FOLD_ONCE);
		else if (g->mode == UI_FOLD_ONCE)
			ui_set_fold(u, r->group, UI_FOLD_CLOSED);
		return;
	}
	if (r->group >= 0)
		for (i = u->row_cur; i >= 0; i--)
			if (u->rows[i].kind == UI_ROW_GROUP) {
				u->row_cur = i;
				u->dirty |= UI_D_OPS | UI_D_STRATS | UI_D_GRAPH;
				return;
			}
}

/* Finds the next operator after the selection whose name contains the search. */
static void
ui_search_next(ui *u, bool from_current)
{
	int start = ui_row_op(u), i, op;
	const char *name;

	if (u->search[0] == '\0')
		return;
	for (i = from_current ? 0 : 1; i <= u->m.n; i++) {
		op = ((start < 0 ? 0 : start) + i) % u->m.n;
		name = ui_op_name(&u->m, op);
		if (strcasestr(name, u->search) != NULL) {
			ui_rows_select_op(u, op);
			ui_message(u, false, _("found %s"), name);
			return;
		}
	}
	ui_message(u, true, _("no operator matches \"%s\""), u->search);
}

static void
ui_prompt_open(ui *u, enum ui_prompt_kind p, const char *init)
{
	u->prompt = p;
	u->input_len = 0;
	if (init != NULL) {
		size_t n = mbstowcs(u->input, init, SL_ARRAY_LEN(u->input) - 1);
		u->input_len = n == (size_t)-1 ? 0 : (int)n;
	}
	u->input[u->input_len] = L'\0';
	u->dirty |= UI_D_MSG;
}

static void k_search(ui *u, struct ui_event e) { ui_prompt_open(u, UI_P_SEARCH, NULL); }
static void k_next(ui *u, struct ui_event e)
{
	if (u->search[0] == '\0')
		ui_prompt_open(u, UI_P_SEARCH, NULL);
	else
		ui_search_next(u, false);
}

/* p f u and P F U: the strategy under the cursor, at the operator or at
 * its position in every layer; a change that leaves no plan is refused. */
static void
ui_constrain_key(ui *u, enum ui_act act, bool every_layer)
{
	ui_constrain(u, ui_row_op(u), u->strat_cur, act, every_layer);
}

static void k_pin(ui *u, struct ui_event e) { ui_constrain_key(u, UI_ACT_PIN, false); }
static void k_forbid(ui *u, struct ui_event e) { ui_constrain_key(u, UI_ACT_FORBID, false); }
static void k_clear(ui *u, struct ui_event e) { ui_constrain_key(u, UI_ACT_CLEAR, false); }
static void k_pin_all(ui *u, struct ui_event e) { ui_constrain_key(u, UI_ACT_PIN, true); }
static void k_forbid_all(ui *u, struct ui_event e) { ui_constrain_key(u, UI_ACT_FORBID, true); }
static void k_clear_all(ui *u, struct ui_event e) { ui_constrain_key(u, UI_ACT_CLEAR, true); }

static void k_alpha_dn(ui *u, struct ui_event e) { ui_alpha_step(u, -1); }
static void k_alpha_up(ui *u, struct ui_event e) { ui_alpha_step(u, 1); }
static void k_alpha_dn3(ui *u, struct ui_event e) { ui_alpha_scale(u, 0.1); }
static void k_alpha_up3(ui *u, struct ui_event e) { ui_alpha_scale(u, 10); }
static void k_alpha_0(ui *u, struct ui_event e) { ui_alpha_scale(u, 0); }
static void k_recompute(ui *u, struct ui_event e) { ui_recompute_cycle(u); }

/* M: the memory limit, asked for with the current one to edit. */
static void
k_mem_limit(ui *u, struct ui_event e)
{
	char cur[32] = "";

	if (u->m.space == NULL) {
		ui_message(u, true, "%s",
		    _("a memory limit does not apply: this problem's costs are given"));
		return;
	}
	if (u->m.mem_limit > 0)
		snprintf(cur, sizeof cur, "%lldB", (long long)u->m.mem_limit);
	ui_prompt_open(u, UI_P_MEMLIMIT, cur);
}

/* The limit typed at the M prompt (empty: none), and what it did. */
static void
ui_mem_limit_submit(ui *u, const char *text)
{
	size_t n = sl_decimal_len(text);
	int64_t v = text[0] != '\0' ? sl_parse_size(text) : 0;
	char b1[32], b2[32], buf[1200];
	sl_error err;

	if (text[0] != '\0' && (v <= 0 || (n > 0 && text[n + strspn(text + n, " ")] == '\0'))) {
		ui_message(u, true, _("not a memory size: '%s' (with its unit: 40GiB, 80GB)"),
		    sl_esc(text));
		return;
	}
	sl_error_clear(&err);
	if (ui_model_set_mem_limit(&u->m, v, &err) != SL_OK) {
		ui_message(u, true, "%s", sl_error_format(&err, buf, sizeof buf));
		return;
	}
	u->dirty |= UI_D_ALL;
	if (v <= 0)
		ui_message(u, false, "%s", _("no memory limit"));
	else if (u->m.fit_none)
		ui_message(u, true, _("no plan fits in %s per device: the least the search found peaks at %s"),
		    sl_format_bytes(v, b1, sizeof b1),
		    sl_format_bytes(u->m.fit_least, b2, sizeof b2));
	else if (u->m.fit_searched)
		ui_message(u, false, _("memory limit %s: the best plan under it%s"),
		    sl_format_bytes(v, b1, sizeof b1),
		    u->m.fit_exact ? _(" (exact)") : "");
	else
		ui_message(u, false, _("memory limit %s: the plan fits already"),
		    sl_format_bytes(v, b1, sizeof b1));
}

static void
k_graph(ui *u, struct ui_event e)
{
	u->show_graph = !u->show_graph;
	/* the graph takes the strategies panel's place: keys go to the operators */
	if (u->show_graph && !u->wide)
		u->focus = UI_FOCUS_OPS;
	u->dirty |= UI_D_ALL;
	if (u->wide)
		ui_message(u, false, "%s", _("the graph is always shown on wide terminals"));
}

static void
k_export(ui *u, struct ui_event e)
{
	char path[600];
	const char *base = u->m.space != NULL ? u->m.space->g->name : "plan";

	snprintf(path, sizeof path, "%s-plan.json", base);
	ui_prompt_open(u, UI_P_EXPORT, path);
}

static void
k_export_svg(ui *u, struct ui_event e)
{
	char path[600];
	int op = ui_row_op(u);

	snprintf(path, sizeof path, "%s.svg", op < 0 ? "graph" : ui_op_name(&u->m, op));
	ui_prompt_open(u, UI_P_SVG, path);
}

/* x: the engine's step-by-step account of the strategy under the cursor. */
static void
k_explain(ui *u, struct ui_event e)
{
	int op = ui_row_op(u);
	char title[256], buf[1200], *text;
	sl_error err;

	if (u->explain != NULL) {
		u->explain(u);
		return;
	}
	if (u->m.space == NULL || op < 0 || !u->m.have_sol) {
		ui_message(u, true, "%s", _("explain needs a model"));
		return;
	}
	sl_error_clear(&err);
	text = sl_explain(u->m.space, u->m.sol.choice, op, u->strat_cur, &err);
	if (text == NULL) {
		ui_message(u, true, _("explain failed: %s"),
		    sl_error_format(&err, buf, sizeof buf));
		return;
	}
	snprintf(title, sizeof title, "%s = %s", ui_op_name(&u->m, op),
	    ui_strat_name(&u->m, op, u->strat_cur));
	ui_show_text(u, title, text);
}

static void
k_validate(ui *u, struct ui_event e)
{
	if (u->validate != NULL)
		u->validate(u);
	else
		ui_validate(u);
}

static void
k_timeline(ui *u, struct ui_event e)
{
	ui_timeline_open(u);
}

static void
k_stages(ui *u, struct ui_event e)
{
	ui_stages_open(u);
}

/* The help screen's text: one line per key of the table. */
static char *
ui_help_text(void)
{
	char *text = NULL, pad[64];
	size_t len = 0, k;
	FILE *fp = open_memstream(&text, &len);
	int w = 0, tw;

	if (fp == NULL)
		return NULL;
	for (k = 0; k < ui_n_keys; k++)
		if (ui_keys[k].help != NULL &&
		    (tw = cli_text_width(_(ui_keys[k].name))) > w)
			w = tw;
	for (k = 0; k < ui_n_keys; k++) {
		if (ui_keys[k].help == NULL)
			continue;
		tw = w + 2 - cli_text_width(_(ui_keys[k].name));
		snprintf(pad, sizeof pad, "%*s", tw < 2 ? 2 : tw, "");
		fprintf(fp, "%s%s%s\n", _(ui_keys[k].name), pad, _(ui_keys[k].help));
	}
	fclose(fp);
	return text;
}

static void
k_help(ui *u, struct ui_event e)
{
	ui_show_text(u, _("Keys"), ui_help_text());
	u->show_help = true;
}

static void
k_redraw(ui *u, struct ui_event e)
{
	clearok(curscr, TRUE);
	u->dirty |= UI_D_ALL;
}

static void
k_quit(ui *u, struct ui_event e)
{
	if (ui_plan_changed(&u->m))
		ui_prompt_open(u, UI_P_QUIT, NULL);
	else
		u->quit = true;
}

#define K(c) (c), false
#define F(c) (c), true
const struct ui_key ui_keys[] = {
	{ F(KEY_UP), N_("Up, k"), N_("previous operator or strategy"), k_up },
	{ K('k'), NULL, NULL, k_up },
	{ F(KEY_DOWN), N_("Down, j"), N_("next operator or strategy"), k_down },
	{ K('j'), NULL, NULL, k_down },
	{ F(KEY_PPAGE), N_("PgUp"), N_("page up"), k_pgup },
	{ F(KEY_NPAGE), N_("PgDn"), N_("page down"), k_pgdn },
	{ F(KEY_HOME), N_("Home"), N_("first row"), k_home },
	{ F(KEY_END), N_("End"), N_("last row"), k_end },
	{ K('\t'), N_("Tab"), N_("switch between operators and strategies"), k_tab },
	{ K('\r'), N_("Enter"), N_("fold or unfold a layer group; on an operator, go to its strategies"), k_enter },
	{ K('\n'), NULL, NULL, k_enter },
	{ F(KEY_ENTER), NULL, NULL, k_enter },
	{ K(' '), NULL, NULL, k_enter },
	{ F(KEY_RIGHT), N_("Right, l"), N_("unfold: repeated layers once, then every layer"), k_right },
	{ K('l'), NULL, NULL, k_right },
	{ F(KEY_LEFT), N_("Left, h"), N_("fold, or go back to the layer group"), k_left },
	{ K('h'), NULL, NULL, k_left },
	{ K('/'), "/", N_("search operators by name"), k_search },
	{ K('n'), "n", N_("next search match"), k_next },
	{ K('p'), "p", N_("pin the strategy under the cursor"), k_pin },
	{ K('f'), "f", N_("forbid the strategy under the cursor"), k_forbid },
	{ K('u'), "u", N_("clear pins and forbids of the operator"), k_clear },
	{ K('P'), "P", N_("pin at the same position in every layer"), k_pin_all },
	{ K('F'), "F", N_("forbid at the same position in every layer"), k_forbid_all },
	{ K('U'), "U", N_("clear at the same position in every layer"), k_clear_all },
	{ K('['), "[ ]", N_("alpha to the previous or next plan of the frontier"), k_alpha_dn },
	{ K(']'), NULL, NULL, k_alpha_up },
	{ K('{'), "{ }", N_("alpha ten times smaller or larger"), k_alpha_dn3 },
	{ K('}'), NULL, NULL, k_alpha_up3 },
	{ K('0'), "0", N_("alpha 0: memory only"), k_alpha_0 },
	{ K('R'), "R", N_("recompute every layer: none, selective, full (re-solves)"), k_recompute },
	{ K('M'), "M", N_("memory limit per device: every plan fits under it (empty: none)"), k_mem_limit },
	{ K('g'), "g", N_("show the strategy graph (narrow terminals)"), k_graph },
	{ K('e'), "e", N_("export the plan as JSON"), k_export },
	{ K('E'), "E", N_("export the strategy graph as SVG"), k_export_svg },
	{ K('x'), "x", N_("explain the strategy under the cursor step by step"), k_explain },
	{ K('v'), "v", N_("validate the plan on local GPUs in the background; again: the report"), k_validate },
	{ K('m'), "m", N_("memory over time of a device: the peak and what is alive there"), k_timeline },
	{ K('S'), "S", N_("pipeline stages side by side: move a boundary, change the degree"), k_stages },
	{ K('\f'), N_("Ctrl-L"), N_("redraw the screen"), k_redraw },
	{ K('?'), "?", N_("this help"), k_help },
	{ K('q'), "q", N_("quit (asks first if the plan changed since the last export)"), k_quit },
};
const size_t ui_n_keys = SL_ARRAY_LEN(ui_keys);
#undef K
#undef F

static void
ui_prompt_submit(ui *u)
{
	char path[2048];
	sl_error err;
	char buf[1200];
	enum ui_prompt_kind p = u->prompt;

	u->prompt = UI_P_NONE;
	u->dirty |= UI_D_MSG;
	if (wcstombs(path, u->input, sizeof path) == (size_t)-1)
		path[0] = '\0';
	path[sizeof path - 1] = '\0';
	if (p == UI_P_SEARCH) {
		snprintf(u->search, sizeof u->search, "%.127s", path);
		ui_search_next(u, true);
		return;
	}
	if (p == UI_P_MEMLIMIT) {
		ui_mem_limit_submit(u, path);
		return;
	}
	if (path[0] == '\0') {
		ui_message(u, false, "%s", _("cancelled"));
		return;
	}
	sl_error_clear(&err);
	if (p == UI_P_EXPORT) {
		if (ui_export_plan(u, path, &err) != SL_OK)
			ui_message(u, true, _("export failed: %s"),
			    sl_error_format(&err, buf, sizeof buf));
		else
			ui_message(u, false, _("plan written to %s"), path);
	} else if (p == UI_P_SVG) {
		if (ui_export_svg(u, path, &err) != SL_OK)
			ui_message(u, true, _("export failed: %s"),
			    sl_error_format(&err, buf, sizeof buf));
		else
			ui_message(u, false, _("strategy graph written to %s"), path);
	}
}

static void
ui_prompt_key(ui *u, struct ui_event e)
{
	if (u->prompt == UI_P_QUIT) {
		u->prompt = UI_P_NONE;
		u->dirty |= UI_D_MSG;
		if (!e.fn && (e.key == 'y' || e.key == 'Y'))
			u->quit = true;
		else
			ui_message(u, false, "%s", _("not quitting"));
		return;
	}
	if (!e.fn && (e.key == '\r' || e.key == '\n')) {
		ui_prompt_submit(u);
	} else if ((e.fn && e.key == KEY_ENTER)) {
		ui_prompt_submit(u);
	} else if (!e.fn && e.key == 27) {
		u->prompt = UI_P_NONE;
		ui_message(u, false, "%s", _("cancelled"));
	} else if ((e.fn && e.key == KEY_BACKSPACE) ||
	    (!e.fn && (e.key == 127 || e.key == 8))) {
		if (u->input_len > 0)
			u->input[--u->input_len] = L'\0';
	} else if (!e.fn && e.key == 21) {	/* Ctrl-U */
		u->input_len = 0;
		u->input[0] = L'\0';
	} else if (!e.fn && iswprint((wint_t)e.key) &&
	    u->input_len < (int)SL_ARRAY_LEN(u->input) - 1) {
		u->input[u->input_len++] = (wchar_t)e.key;
		u->input[u->input_len] = L'\0';
	}
	u->dirty |= UI_D_MSG;
}

void
ui_handle_event(ui *u, struct ui_event e)
{
	size_t i;

	if (u->prompt != UI_P_NONE) {
		ui_prompt_key(u, e);
		return;
	}
	if (ui_stages_key(u, e) || ui_timeline_key(u, e))
		return;
	/* help and texts over the panels: scroll keys scroll, others close */
	if (u->text != NULL || u->show_help) {
		if (!ui_overlay_scroll(u, e) && !(e.fn && e.key == KEY_RESIZE)) {
			free(u->text);
			u->text = NULL;
			u->show_help = false;
		}
		u->dirty |= UI_D_ALL;
		return;
	}
	if (u->msg[0] != '\0' && !(e.fn && e.key == KEY_RESIZE)) {
		u->msg[0] = '\0';
		u->msg_error = false;
		u->dirty |= UI_D_MSG;
	}
	for (i = 0; i < ui_n_keys; i++)
		if (ui_keys[i].key == e.key && ui_keys[i].fn == e.fn) {
			ui_keys[i].run(u, e);
			return;
		}
}
