/*
 * ui_stages.c: the pipeline stages panel (key S).  Over the other panels it
 * shows the opened model split into pipeline stages on the mesh's devices:
 * the stages side by side, each with its layers, its device's memory by
 * category against the device capacity, its time per micro-batch and its
 * recomputation, and above them the bubble and the step time.  The first
 * configuration is the hybrid search's best (`shardlab plan`) at the
 * pipeline degree --pp gave, or at the best degree; when nothing fits, the
 * one with the least memory; when the search fails, an even split into two
 * stages.  A plan file of `shardlab plan --json` opens with its own stages.
 * Keys inside: Left and Right move the selected boundary one layer, Tab
 * and Up/Down select a boundary, + and - change the pipeline degree; each
 * re-evaluates the pipeline (sl_pipe_ctx_eval, which keeps the spaces and
 * stage plans of earlier evaluations, so a move solves only the stages it
 * changed) and shows how long that took.  The pins and forbids of the
 * operator view hold inside the stages.
 */
#include "ui.h"

#include <stdlib.h>
#include <time.h>

struct ui_st {
	bool open, started;
	/* what the command line said */
	int want_pp;
	char *model;
	/* the search's and evaluation's options (ctx reads them) */
	sl_hybrid_opts ho;
	sl_pipe_ctx *ctx;
	/* the configuration shown */
	int pp, virt, outer, inner, n_stages, n_layers;
	int dp_replicate;	/* HSDP's replicate degree (sl_pipe_config) */
	int64_t graph_batch, micro_batches;
	int *layers;
	sl_recompute *rec;
	int sel;			/* boundary after stage sel */
	sl_pipeline pl;
	bool have;
	int skipped;			/* pins naming nothing in the stages */
	unsigned cs_gen;		/* pins the pipeline was evaluated under */
	double eval_ms, search_ms;
	char err[512];
};

static const int cat_role[SL_CAT_COUNT] = {
	UI_R_PARAMS, UI_R_GRADS, UI_R_OPTIM, UI_R_ACTS, UI_R_BUFFERS
};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The model at a micro-batch of batch samples, as `shardlab plan` opens it. */
static sl_graph *
st_model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	const struct ui_st *t = ctx;
	sl_model_opts mo;

	memset(&mo, 0, sizeof mo);
	mo.micro_batch = batch;
	mo.devices = 1;
	mo.seq = seq;
	return sl_model_open(t->model, &mo, err);
}

void
ui_stages_setup(ui *u, const cli_opts *o)
{
	struct ui_st *t;

	if (u->st == NULL)
		u->st = sl_xcalloc(1, sizeof *u->st);
	t = u->st;
	t->want_pp = o->pp;
	sl_hybrid_opts_default(&t->ho);
	t->ho.schedule = o->schedule;
	t->ho.virt = o->virt;
	t->ho.tp = o->tp;
	t->ho.offload_optimizer = o->offload;
	t->ho.mem_limit = o->mem_limit;
	t->ho.global_batch = o->recipe.global_batch;
	t->ho.slack = o->slack;
	t->ho.micro_batch = o->micro_batch_set ? o->micro_batch : 0;
}

static void
st_release(struct ui_st *t)
{
	if (t->have)
		sl_pipeline_free(&t->pl);
	t->have = false;
}

void
ui_stages_free(ui *u)
{
	struct ui_st *t = u->st;

	if (t == NULL)
		return;
	st_release(t);
	sl_pipe_ctx_free(t->ctx);
	free(t->layers);
	free(t->rec);
	free(t->model);
	free(t);
	u->st = NULL;
}

bool
ui_stages_is_open(const ui *u)
{
	return u->st != NULL && u->st->open;
}

/* Takes the configuration of pl as the one shown. */
static void
st_take(struct ui_st *t, const sl_pipeline *pl)
{
	t->pp = pl->pp;
	t->virt = pl->virt;
	t->outer = pl->mesh.n_axes == 2 ? pl->mesh.axes[0].size : 1;
	t->inner = pl->mesh.axes[pl->mesh.n_axes - 1].size;
	/* HSDP: its sub-mesh is replicate x shard, not outer x inner */
	t->dp_replicate = pl->dp_replicate > 1 ? pl->dp_replicate : 1;
	if (t->dp_replicate > 1) {
		t->outer = pl->outer;
		t->inner = pl->inner;
	}
	t->graph_batch = pl->graph_batch;
	t->micro_batches = pl->micro_batches;
	t->n_stages = pl->n_stages;
	for (int j = 0; j < pl->n_stages && j < t->n_layers; j++) {
		t->layers[j] = pl->stage[j].n_layers;
		t->rec[j] = pl->stage[j].recompute;
	}
}

/* Layers split as evenly as they go, the larger stages first. */
static void
st_even(struct ui_st *t)
{
	for (int j = 0; j < t->n_stages; j++)
		t->layers[j] = t->n_layers / t->n_stages +
		    (j < t->n_layers % t->n_stages);
}

/* Evaluates the configuration shown under the current pins; false (and
 * the reason in err) when it cannot be. */
static bool
st_eval(ui *u)
{
	struct ui_st *t = u->st;
	sl_pipe_config c;
	sl_pipeline pl;
	sl_error err;
	double t0;
	int rc;

	c = (sl_pipe_config){ .pp = t->pp, .virt = t->virt, .outer = t->outer,
	    .inner = t->inner, .dp_replicate = t->dp_replicate > 1 ? t->dp_replicate : 1,
	    .graph_batch = t->graph_batch,
	    .micro_batches = t->micro_batches, .layers = t->layers,
	    .recompute = t->rec };
	sl_error_clear(&err);
	if (t->cs_gen != u->m.cs_gen) {
		sl_pipe_ctx_constrain(t->ctx, &u->m.cs);
		t->cs_gen = u->m.cs_gen;
	}
	t0 = now_ms();
	rc = sl_pipe_ctx_eval(t->ctx, &c, &pl, &t->skipped, &err);
	t->eval_ms = now_ms() - t0;
	if (rc != SL_OK) {
		sl_error_format(&err, t->err, sizeof t->err);
		return false;
	}
	st_release(t);
	t->pl = pl;
	t->have = true;
	t->err[0] = '\0';
	return true;
}

/* The configuration before a key, put back when the key's cannot be
 * evaluated (the pipeline on screen stays the one shown). */
struct st_saved {
	int pp, virt, outer, inner, dp_replicate, n_stages, sel;
	int64_t graph_batch, micro_batches;
	int *layers;
	sl_recompute *rec;
};

static void
st_save(const struct ui_st *t, struct st_saved *v)
{
	v->pp = t->pp;
	v->virt = t->virt;
	v->outer = t->outer;
	v->inner = t->inner;
	v->dp_replicate = t->dp_replicate;
	v->n_stages = t->n_stages;
	v->sel = t->sel;
	v->graph_batch = t->graph_batch;
	v->micro_batches = t->micro_batches;
	v->layers = sl_xmalloc(t->n_layers * sizeof *v->layers);
	v->rec = sl_xmalloc(t->n_layers * sizeof *v->rec);
	memcpy(v->layers, t->layers, t->n_layers * sizeof *v->layers);
	memcpy(v->rec, t->rec, t->n_layers * sizeof *v->rec);
}

static void
st_restore(struct ui_st *t, struct st_saved *v, bool put_back)
{
	if (put_back) {
		t->pp = v->pp;
		t->virt = v->virt;
		t->outer = v->outer;
		t->inner = v->inner;
		t->dp_replicate = v->dp_replicate;
		t->n_stages = v->n_stages;
		t->sel = v->sel;
		t->graph_batch = v->graph_batch;
		t->micro_batches = v->micro_batches;
		memcpy(t->layers, v->layers, t->n_layers * sizeof *v->layers);
		memcpy(t->rec, v->rec, t->n_layers * sizeof *v->rec);
	}
	free(v->layers);
	free(v->rec);
}

/* The first configuration: the hybrid search's best, else its least
 * memory, else two even stages. */
static void
st_start(ui *u)
{
	struct ui_st *t = u->st;
	const sl_space *sp = u->m.space;
	sl_hybrid_opts so;
	sl_hybrid_result r;
	sl_error err;
	double t0;

	t->started = true;
	if (sp == NULL) {
		snprintf(t->err, sizeof t->err, "%s",
		    _("pipeline stages need a model (not an IOPDDL problem)"));
		return;
	}
	free(t->model);
	t->model = sl_xstrdup(u->m.source != NULL ? u->m.source : sp->g->name);
	t->ho.model = st_model;
	t->ho.model_ctx = t;
	t->ho.hw = sp->mesh.hw;
	t->ho.devices = sp->mesh.n_devices;
	t->ho.space = sp->opts;
	t->ho.space.recipe.micro_batch = 1;
	t->n_layers = sp->g->n_layers;
	if (t->n_layers < 1) {
		snprintf(t->err, sizeof t->err, "%s",
		    _("the model has no layers to split into pipeline stages"));
		return;
	}
	if (t->layers == NULL) {
		t->layers = sl_xcalloc(t->n_layers, sizeof *t->layers);
		t->rec = sl_xcalloc(t->n_layers, sizeof *t->rec);
	}
	t->ctx = sl_pipe_ctx_new(&t->ho);
	if (t->pp > 0) {
		/* a plan file's stages */
		st_eval(u);
		return;
	}
	so = t->ho;
	so.pp = t->want_pp;
	sl_error_clear(&err);
	t0 = now_ms();
	if (sl_hybrid_search(&so, &r, &err) == SL_OK) {
		if (r.found)
			st_take(t, &r.best);
		else if (r.have_least)
			st_take(t, &r.least);
		sl_hybrid_result_free(&r);
	}
	t->search_ms = now_ms() - t0;
	if (t->pp == 0) {
		int d = t->ho.devices, p = t->want_pp > 0 ? t->want_pp : 2;
		int64_t b = t->ho.global_batch > 0 ? t->ho.global_batch : d;
		if (p > t->n_layers)
			p = t->n_layers;
		if (p < 1 || d % p != 0)
			p = 1;
		t->pp = p;
		t->virt = 1;
		t->outer = 1;
		t->inner = d / p;
		t->dp_replicate = 1;
		t->n_stages = p;
		t->micro_batches = b % p == 0 ? p : 1;
		t->graph_batch = b / t->micro_batches;
		st_even(t);
		for (int j = 0; j < p; j++)
			t->rec[j] = SL_RECOMP_NONE;
	}
	st_eval(u);
}

void
ui_stages_open(ui *u)
{
	if (u->st == NULL)
		u->st = sl_xcalloc(1, sizeof *u->st);
	u->st->open = true;
	if (!u->st->started)
		st_start(u);
	else if (u->st->cs_gen != u->m.cs_gen && u->st->ctx != NULL)
		st_eval(u);		/* pins changed in the operator view */
	u->dirty |= UI_D_ALL;
}

/* Moves boundary b (after stage b) by d layers. */
static bool
st_move(struct ui_st *t, int b, int d)
{
	int from = d > 0 ? b + 1 : b, to = d > 0 ? b : b + 1;

	if (b < 0 || b + 1 >= t->n_stages || t->layers[from] <= 1)
		return false;
	t->layers[from]--;
	t->layers[to]++;
	return true;
}

static int
gcd(int a, int b)
{
	while (b != 0) {
		int r = a % b;
		a = b;
		b = r;
	}
	return a;
}

/*
 * The next pipeline degree in direction d that divides the devices and
 * leaves each stage a layer; the sub-mesh keeps its inner axis where it
 * divides, the batch stays, and there are at least as many micro-batches as
 * stages where the batch allows, each splitting over the outer axis.
 */
static bool
st_degree(struct ui_st *t, int d)
{
	int D = t->ho.devices, v = t->virt > 0 ? t->virt : 1, p = t->pp + d;
	int old = t->n_stages, sub;
	int64_t total = t->micro_batches * t->graph_batch;
	sl_recompute *prev;

	while (p >= 1 && p * v <= t->n_layers && D % p != 0)
		p += d;
	if (p < 1 || p * v > t->n_layers)
		return false;
	sub = D / p;
	prev = sl_xmalloc(old * sizeof *prev);
	memcpy(prev, t->rec, old * sizeof *prev);
	t->pp = p;
	t->inner = gcd(sub, t->inner > 0 ? t->inner : sub);
	t->outer = sub / t->inner;
	t->dp_replicate = 1;	/* a new sub-mesh: sharded over all of it */
	t->n_stages = p * v;
	for (int j = 0; j < t->n_stages; j++)
		t->rec[j] = prev[(int64_t)j * old / t->n_stages];
	free(prev);
	if (t->micro_batches < p)
		for (int64_t m = p; m <= total; m++)
			if (total % m == 0 && (total / m) % t->outer == 0) {
				t->micro_batches = m;
				t->graph_batch = total / m;
				break;
			}
	/* a micro-batch splits over the data-parallel outer axis */
	if (t->graph_batch % t->outer != 0)
		for (int64_t m = t->micro_batches; m >= 1; m--)
			if (total % m == 0 && (total / m) % t->outer == 0) {
				t->micro_batches = m;
				t->graph_batch = total / m;
				break;
			}
	st_even(t);
	return true;
}

bool
ui_stages_key(ui *u, struct ui_event e)
{
	struct ui_st *t = u->st;
	int nb;

	if (t == NULL || !t->open)
		return false;
	if (e.fn && e.key == KEY_RESIZE)
		return false;
	nb = t->n_stages - 1;
	if (e.fn && (e.key == KEY_LEFT || e.key == KEY_RIGHT)) {
		struct st_saved v;
		if (t->ctx != NULL) {
			st_save(t, &v);
			st_restore(t, &v, st_move(t, t->sel, e.key == KEY_LEFT ? -1 : 1) &&
			    !st_eval(u));
		}
	} else if ((!e.fn && e.key == '\t') || (e.fn && (e.key == KEY_DOWN || e.key == KEY_UP ||
	    e.key == KEY_BTAB))) {
		if (nb > 0)
			t->sel = (t->sel + ((e.fn && e.key != KEY_DOWN) ? nb - 1 : 1)) % nb;
	} else if (!e.fn && (e.key == '+' || e.key == '=' || e.key == '-')) {
		struct st_saved v;
		if (t->ctx != NULL) {
			bool moved;
			st_save(t, &v);
			if ((moved = st_degree(t, e.key == '-' ? -1 : 1)) &&
			    t->sel >= t->n_stages - 1)
				t->sel = t->n_stages > 1 ? t->n_stages - 2 : 0;
			st_restore(t, &v, moved && !st_eval(u));
		}
	} else if (!e.fn && (e.key == 'S' || e.key == 'q' || e.key == 27)) {
		t->open = false;
	}
	u->dirty |= UI_D_ALL;
	return true;
}

/* Sets the pipeline shown to the stages of a `shardlab plan --json` file
 * (before the panel is first opened). */
int
ui_stages_set(ui *u, sl_schedule sched, int pp, int virt, int outer, int inner,
    int dp_replicate, int64_t graph_batch, int64_t micro_batches, int n, const int *layers,
    const sl_recompute *rec)
{
	struct ui_st *t = u->st;
	int L = u->m.space != NULL ? u->m.space->g->n_layers : 0, sum = 0;

	if (t == NULL || n != pp * (virt > 0 ? virt : 1) || n < 1 || n > L)
		return SL_EINPUT;
	for (int j = 0; j < n; j++)
		sum += layers[j] >= 1 ? layers[j] : L + 1;
	if (sum != L)
		return SL_EINPUT;
	t->ho.schedule = sched;
	t->pp = pp;
	t->virt = virt > 0 ? virt : 1;
	t->outer = outer;
	t->inner = inner;
	t->dp_replicate = dp_replicate > 1 ? dp_replicate : 1;
	t->graph_batch = graph_batch;
	t->micro_batches = micro_batches;
	t->n_stages = n;
	t->n_layers = L;
	free(t->layers);
	free(t->rec);
	sl_pipe_ctx_free(t->ctx);
	t->ctx = NULL;
	st_release(t);
	t->layers = sl_xcalloc(L, sizeof *t->layers);
	t->rec = sl_xcalloc(L, sizeof *t->rec);
	memcpy(t->layers, layers, n * sizeof *layers);
	memcpy(t->rec, rec, n * sizeof *rec);
	t->started = false;
	return SL_OK;
}

/* The memory of stage j's device by category: the states of every stage
 * it holds (one unless interleaved) and the activations of the
 * micro-batches it keeps in flight; they add up to its peak. */
static void
st_mem(const sl_pipeline *pl, int j, int64_t cat[SL_CAT_COUNT])
{
	int d = pl->stage[j].device;
	const sl_pipe_dev *dv = &pl->dev[d];

	memset(cat, 0, SL_CAT_COUNT * sizeof *cat);
	for (int i = 0; i < pl->n_stages; i++) {
		const sl_pipe_stage *st = &pl->stage[i];
		if (st->device != d)
			continue;
		cat[SL_CAT_PARAMS] += st->states.params;
		cat[SL_CAT_GRADS] += st->states.grads;
		cat[SL_CAT_OPTIM] += st->states.optim;
		cat[SL_CAT_BUFFERS] += st->states.buffers;
	}
	cat[SL_CAT_ACTS] = dv->acts;
}

/* What one stage's column shows; the test reads it back. */
int64_t
ui_stages_mem(const ui *u, int j)
{
	int64_t c[SL_CAT_COUNT], s = 0;

	if (u->st == NULL || !u->st->have || j < 0 || j >= u->st->pl.n_stages)
		return -1;
	st_mem(&u->st->pl, j, c);
	for (int k = 0; k < SL_CAT_COUNT; k++)
		s = sl_add_sat(s, c[k]);
	return s;
}

/* The title row and the lines under it: the step, the memory, the pins. */
static void
stages_header(WINDOW *w, const ui *u, int64_t cap)
{
	const struct ui_st *t = u->st;
	const sl_pipeline *pl = &t->pl;
	int width = getmaxx(w);
	char b1[32], b2[32], b3[32], b4[32], line[512];
	double bubble;

	bubble = pl->pipe_ns > 0 ? 100.0 * (double)pl->bubble_ns / (double)pl->pipe_ns : 0;
	{
		char st[48], dv[48], mb[48], sm[48];
		snprintf(st, sizeof st, ngettext("%d stage", "%d stages", pl->n_stages),
		    pl->n_stages);
		snprintf(dv, sizeof dv, ngettext("%d device", "%d devices",
		    pl->mesh.n_devices), pl->mesh.n_devices);
		snprintf(mb, sizeof mb, ngettext("%lld micro-batch", "%lld micro-batches",
		    pl->micro_batches), (long long)pl->micro_batches);
		snprintf(sm, sizeof sm, ngettext("%lld sample", "%lld samples",
		    pl->graph_batch), (long long)pl->graph_batch);
		/* TRANSLATORS: "Pipeline: 4 stages x 2 devices, 1f1b, 16
		 * micro-batches of 4 samples" */
		snprintf(line, sizeof line, _("Pipeline: %s x %s, %s, %s of %s"), st, dv,
		    sl_schedule_name(pl->schedule), mb, sm);
	}
	ui_put_ell(w, 0, 1, width - 2, line, u->attr[UI_R_HEADER] | A_REVERSE,
	    u->gl->ellipsis);
	/* the step, the bubble and the peak first; the reserve and the time
	 * of the re-solve when they fit too */
	sl_format_ns(pl->step_ns, b1, sizeof b1);
	sl_format_bytes(pl->max_mem, b2, sizeof b2);
	sl_format_bytes(cap, b3, sizeof b3);
	sl_format_bytes(t->ho.hw.reserve_bytes, b4, sizeof b4);
	snprintf(line, sizeof line,
	    _("step %s, MFU %.0f%%, bubble %.1f%%, peak %s of %s%s, reserve %s; re-solved in %.1f ms"),
	    b1, 100 * pl->mfu, bubble, b2, b3, pl->fits ? "" : _(" (does not fit)"), b4,
	    t->eval_ms);
	if (cli_text_width(line) > width - 2)
		snprintf(line, sizeof line, _("step %s, MFU %.0f%%, bubble %.1f%%, peak %s of %s%s"),
		    b1, 100 * pl->mfu, bubble, b2, b3, pl->fits ? "" : _(" (does not fit)"));
	ui_put_ell(w, 1, 1, width - 2, line, pl->fits ? A_NORMAL : u->attr[UI_R_OVER],
	    u->gl->ellipsis);
	if (t->err[0] != '\0')
		ui_put(w, 2, 1, width - 2, t->err, u->attr[UI_R_ERROR]);
	else if (u->m.cs.n > 0) {
		if (t->skipped > 0)
			snprintf(line, sizeof line, ngettext(
			    "pins hold in the stages at each layer's position; %d names no strategy here",
			    "pins hold in the stages at each layer's position; %d name no strategy here",
			    t->skipped), t->skipped);
		else
			snprintf(line, sizeof line, "%s",
			    _("pins hold in the stages at each layer's position"));
		ui_put(w, 2, 1, width - 2, line, u->attr[UI_R_PINNED]);
	}
}

/*
 * Where the stage columns go on a window of h x width: as many stages as
 * fit 13 columns each, the selection in view; when some do not fit, a
 * column at each side for the marks that say more stages lie that way.
 * Per column, 4 rows of text from y0, the bar (bar_h rows), the categories
 * when there is room (n_cat), the time and the device; the legend below.
 */
struct stages_layout {
	int cw, first, shown, y0, bar_h, n_cat;
	int64_t cap, scale;
};

static void
stages_layout(const ui *u, int h, int width, int64_t cap, struct stages_layout *L)
{
	const struct ui_st *t = u->st;
	const sl_pipeline *pl = &t->pl;

	L->cw = 13;
	L->shown = (width - 1) / L->cw;
	if (L->shown < pl->n_stages)
		L->shown = (width - 3) / L->cw;
	if (L->shown > pl->n_stages)
		L->shown = pl->n_stages;
	if (L->shown < 1)
		L->shown = 1;
	L->cw = (width - (L->shown < pl->n_stages ? 3 : 1)) / L->shown;
	L->first = t->sel - L->shown / 2 + 1;
	if (L->first > pl->n_stages - L->shown)
		L->first = pl->n_stages - L->shown;
	if (L->first < 0)
		L->first = 0;
	L->y0 = 4;
	L->n_cat = h - L->y0 - 4 - 3 - SL_CAT_COUNT >= 3 ? SL_CAT_COUNT : 0;
	L->bar_h = h - L->y0 - 4 - 3 - L->n_cat;
	L->cap = cap;
	L->scale = cap > pl->max_mem ? cap : pl->max_mem;
}

/* Stage j's bar at column x, bw wide: bottom up by category, capacity
 * marked. */
static void
stages_bar(WINDOW *w, const ui *u, const struct stages_layout *L, int x,
    int bw, const int64_t c[SL_CAT_COUNT])
{
	int filled = 0, bar_h = L->bar_h;
	int cap_row = (int)((double)L->cap * bar_h / (double)L->scale + 0.5);
	double acc = 0;

	for (int k = 0; k < SL_CAT_COUNT; k++) {
		int to;
		acc += (double)c[k];
		to = (int)(acc * bar_h / (double)L->scale + 0.5);
		if (to > bar_h)
			to = bar_h;
		for (; filled < to; filled++)
			for (int q = 0; q < bw; q++)
				ui_put(w, L->y0 + 4 + bar_h - 1 - filled, x + q, 1,
				    u->gl->bar[k], u->attr[cat_role[k]]);
	}
	if (cap_row >= 1 && cap_row <= bar_h)
		for (int q = filled >= cap_row ? bw : 0; q < bw; q++)
			ui_put(w, L->y0 + 4 + bar_h - cap_row, x + q, 1, u->gl->h,
			    u->attr[UI_R_DIM]);
}

/* Column i of the layout: stage first + i. */
static void
stages_column(WINDOW *w, const ui *u, const struct stages_layout *L, int i)
{
	const struct ui_st *t = u->st;
	const sl_pipeline *pl = &t->pl;
	int h = getmaxy(w), cw = L->cw, y0 = L->y0;
	int j = L->first + i, x = 1 + i * cw, bw = cw - 3;
	const sl_pipe_stage *st = &pl->stage[j];
	const sl_pipe_dev *dv = &pl->dev[st->device];
	int64_t c[SL_CAT_COUNT], tot = 0;
	attr_t sel_a = (j == t->sel || j == t->sel + 1) ? u->attr[UI_R_CURSOR] : A_NORMAL;
	char b1[32], b2[32], line[512];

	st_mem(pl, j, c);
	for (int k = 0; k < SL_CAT_COUNT; k++)
		tot = sl_add_sat(tot, c[k]);
	/* text in cw - 2 columns: the last is the boundary's */
	snprintf(line, sizeof line, _("stage %d"), j + 1);
	ui_put_ell(w, y0, x, cw - 2, line, u->attr[UI_R_HEADER] |
	    (j == t->sel || j == t->sel + 1 ? A_BOLD : 0), u->gl->ellipsis);
	snprintf(line, sizeof line, ngettext("%d layer", "%d layers", st->n_layers), st->n_layers);
	ui_put_ell(w, y0 + 1, x, cw - 2, line, sel_a, u->gl->ellipsis);
	snprintf(line, sizeof line, "%d-%d", st->first_layer, st->first_layer + st->n_layers - 1);
	ui_put_ell(w, y0 + 2, x, cw - 2, line, A_NORMAL, u->gl->ellipsis);
	ui_put_ell(w, y0 + 3, x, cw - 2, sl_format_bytes(tot, b1, sizeof b1),
	    tot > L->cap ? u->attr[UI_R_OVER] : A_NORMAL, u->gl->ellipsis);
	if (L->bar_h >= 2 && bw >= 1)
		stages_bar(w, u, L, x, bw, c);
	for (int k = 0; k < L->n_cat; k++) {
		int y = h - 3 - L->n_cat + k;
		int q = ui_put(w, y, x, cw - 2, u->gl->bar[k], u->attr[cat_role[k]]);
		ui_put_ell(w, y, x + q, cw - 2 - q, sl_format_bytes(c[k], b2, sizeof b2),
		    A_NORMAL, u->gl->ellipsis);
	}
	snprintf(line, sizeof line, "%s", sl_format_ns(st->micro_ns, b2, sizeof b2));
	ui_put_ell(w, h - 3, x, cw - 2, line, A_NORMAL, u->gl->ellipsis);
	/* its device (pipeline rank), the micro-batches it keeps, and
	 * its recomputation when there is one */
	if (st->recompute != SL_RECOMP_NONE)
		snprintf(line, sizeof line, _("d%d x%lld %s"), st->device,
		    (long long)dv->in_flight, sl_recompute_name(st->recompute));
	else
		snprintf(line, sizeof line, _("d%d x%lld"), st->device,
		    (long long)dv->in_flight);
	ui_put_ell(w, h - 2, x, cw - 2, line, u->attr[UI_R_DIM], u->gl->ellipsis);
	if (j == t->sel && j + 1 < pl->n_stages)
		for (int y = y0; y < h - 1; y++)
			ui_put(w, y, x + cw - 2, 1, u->gl->v, u->attr[UI_R_CURSOR]);
}

/* The legend (short names when the long do not fit), and which stages the
 * columns show when not all. */
static void
stages_legend(WINDOW *w, const ui *u, const struct stages_layout *L)
{
	const sl_pipeline *pl = &u->st->pl;
	int h = getmaxy(w), width = getmaxx(w), x = 1, need = 1;
	char line[512];
	bool full;

	if (L->shown < pl->n_stages)
		/* TRANSLATORS: the stages the columns show, of all */
		snprintf(line, sizeof line, _("stages %d-%d of %d"), L->first + 1,
		    L->first + L->shown, pl->n_stages);
	else
		line[0] = '\0';
	for (int k = 0; k < SL_CAT_COUNT; k++)
		need += 2 + cli_text_width(_(sl_mem_cat_name(k)));
	full = need + 2 + cli_text_width(line) <= width;
	for (int k = 0; k < SL_CAT_COUNT && x < width; k++) {
		x += ui_put(w, h - 1, x, width - x, u->gl->bar[k], u->attr[cat_role[k]]);
		x += ui_put(w, h - 1, x, width - x, full ? _(sl_mem_cat_name(k)) :
		    ui_cat_short(k), A_NORMAL);
		x += ui_put(w, h - 1, x, width - x, " ", A_NORMAL);
	}
	if (line[0] != '\0' && x + 1 + cli_text_width(line) <= width - 1)
		ui_put_right(w, h - 1, width - 1, width - 1 - x, line,
		    u->attr[UI_R_DIM]);
}

void
ui_draw_stages(WINDOW *w, const ui *u)
{
	const struct ui_st *t = u->st;
	const sl_pipeline *pl = &t->pl;
	int h = getmaxy(w), width = getmaxx(w);
	struct stages_layout L;
	int64_t cap;

	werase(w);
	wattr_on(w, u->attr[UI_R_HEADER] | A_REVERSE, NULL);
	for (int x = 0; x < width; x++)
		mvwaddch(w, 0, x, ' ');
	wattr_off(w, u->attr[UI_R_HEADER] | A_REVERSE, NULL);
	if (!t->have) {
		ui_put(w, 0, 1, width - 2, _("Pipeline stages"), u->attr[UI_R_HEADER] | A_REVERSE);
		ui_put(w, 2, 1, width - 2, t->err, u->attr[UI_R_ERROR]);
		return;
	}
	cap = t->ho.mem_limit > 0 ? t->ho.mem_limit : t->ho.hw.memory_bytes;
	stages_header(w, u, cap);
	stages_layout(u, h, width, cap, &L);
	ui_put_ell(w, 3, 1, width - 2,
	    _("Left/Right move the boundary, Tab select one, +/- pipeline degree, S close"),
	    u->attr[UI_R_DIM], u->gl->ellipsis);
	for (int i = 0; i < L.shown; i++)
		stages_column(w, u, &L, i);
	/* more stages than columns: which way the others lie */
	if (L.first > 0) {
		ui_put(w, L.y0, 0, 1, u->gl->arrow_l, u->attr[UI_R_DIM]);
		ui_put(w, h - 3, 0, 1, u->gl->arrow_l, u->attr[UI_R_DIM]);
	}
	if (L.first + L.shown < pl->n_stages) {
		ui_put(w, L.y0, width - 1, 1, u->gl->arrow_r, u->attr[UI_R_DIM]);
		ui_put(w, h - 3, width - 1, 1, u->gl->arrow_r, u->attr[UI_R_DIM]);
	}
	stages_legend(w, u, &L);
}
