/*
 * pipe_account.c: where a plan's gain comes from.  Beside a chosen
 * pipeline, the layout Megatron-LM's documentation recommends for the same
 * devices and batch (tensor parallel within a node, pipeline parallel
 * across, sequence parallelism, the largest micro-batch that fits), and
 * the difference between the two as a chain of single changes from that
 * layout to the plan, each evaluated in full: the pipeline degree and
 * sub-mesh (with the plan's stages), the micro-batch, the recomputation,
 * and last the per-operator choices of the stages.
 */
#include "pipe_internal.h"

#include <stdlib.h>

/* The pipeline of cfg with its layer and recomputation arrays owned. */
typedef struct own_cfg {
	sl_pipe_config c;
	int *layers;
	sl_recompute *rec;
} own_cfg;

static void
own_init(own_cfg *oc, int pp, int v, int outer, int inner, int64_t graph_batch,
    int64_t m, int n_layers, sl_recompute rc, sl_stage_layout layout)
{
	int ns = pp * v;

	oc->layers = sl_xmalloc(ns * sizeof *oc->layers);
	oc->rec = sl_xmalloc(ns * sizeof *oc->rec);
	for (int j = 0; j < ns; j++) {
		oc->layers[j] = n_layers / ns + (j < n_layers % ns);
		oc->rec[j] = rc;
	}
	/* Megatron-LM's layout shards over all of data parallel */
	oc->c = (sl_pipe_config){ .pp = pp, .virt = v, .outer = outer,
	    .inner = inner, .dp_replicate = 1, .graph_batch = graph_batch, .micro_batches = m,
	    .layers = oc->layers, .recompute = oc->rec, .layout = layout };
}

static void
own_free(own_cfg *oc)
{
	free(oc->layers);
	free(oc->rec);
	memset(oc, 0, sizeof *oc);
}

/* The chosen pipeline's own configuration (its stages and recomputation). */
static void
own_of(own_cfg *oc, const sl_pipeline *pl)
{
	int outer = pl->mesh.n_axes == 2 ? pl->mesh.axes[0].size : 1;
	int inner = pl->mesh.axes[pl->mesh.n_axes - 1].size;

	own_init(oc, pl->pp, pl->virt, outer, inner, pl->graph_batch,
	    pl->micro_batches, 0, SL_RECOMP_NONE, SL_LAYOUT_PLANNED);
	for (int j = 0; j < pl->n_stages; j++) {
		oc->layers[j] = pl->stage[j].n_layers;
		oc->rec[j] = pl->stage[j].recompute;
	}
	/* HSDP: the sub-mesh is replicate x shard, its configuration's
	 * outer x inner another (stage_mesh) */
	if (pl->dp_replicate > 1) {
		oc->c.outer = pl->outer;
		oc->c.inner = pl->inner;
		oc->c.dp_replicate = pl->dp_replicate;
	}
}

/* The model's layers and attention heads (the graph of one sample). */
static int
model_shape(const sl_hybrid_opts *o, int *layers, int *heads, sl_error *err)
{
	sl_graph *g = o->model(o->model_ctx, 1, 0, err);

	if (g == NULL)
		return err->code ? err->code : SL_EINPUT;
	*layers = g->n_layers;
	*heads = 0;
	for (int v = 0; v < g->n_ops && *heads == 0; v++)
		if (g->ops[v].kind == SL_OP_ATTENTION)
			*heads = g->ops[v].kv_heads > 0 ? g->ops[v].kv_heads : g->ops[v].heads;
	sl_graph_free(g);
	return SL_OK;
}

/*
 * Megatron-LM's recommended layout (docs/user-guide/parallelism-guide.md:
 * tensor parallelism within a node, pipeline parallelism across nodes,
 * sequence parallelism with tensor parallelism; "use the largest micro-
 * batch that fits"): tensor parallel over the most devices of a node that
 * divide the devices and the attention (key and value) heads; the fewest
 * pipeline stages, of equal layers, under which micro-batches of one
 * sample fit without recomputation, else with selective, else with full;
 * then the largest micro-batch (a power of two dividing the batch) that
 * still fits.  Data parallel over the rest.
 */
static int
standard(const sl_hybrid_opts *o, own_cfg *best, sl_pipeline *pl,
    sl_error *err)
{
	int D = o->devices, node = o->hw.devices_per_node > 0 ? o->hw.devices_per_node : 1;
	int64_t B = o->global_batch > 0 ? o->global_batch : D;
	int L, heads, tp = 1, rc;
	static const sl_recompute recs[] = { SL_RECOMP_NONE, SL_RECOMP_SELECTIVE,
	    SL_RECOMP_FULL };

	if ((rc = model_shape(o, &L, &heads, err)) != SL_OK)
		return rc;
	for (int t = 1; t <= node && t <= D; t++)
		if (D % t == 0 && (heads <= 0 || heads % t == 0))
			tp = t;
	for (size_t ri = 0; ri < SL_ARRAY_LEN(recs); ri++)
		for (int pp = 1; pp <= D / tp && pp <= L; pp++) {
			int dp = D / (tp * pp);
			own_cfg oc;
			sl_pipeline q;
			if ((D / tp) % pp != 0 || B % dp != 0)
				continue;
			own_init(&oc, pp, 1, dp, tp, dp, B / dp, L, recs[ri],
			    tp > 1 ? SL_LAYOUT_MEGATRON_SP : SL_LAYOUT_MEGATRON);
			if ((rc = sl_pipeline_eval(o, &oc.c, &q, err)) != SL_OK) {
				own_free(&oc);
				return rc;
			}
			if (!q.fits) {
				sl_pipeline_free(&q);
				own_free(&oc);
				continue;
			}
			/* the largest micro-batch that still fits */
			for (int64_t mbs = 2; B % (mbs * dp) == 0; mbs *= 2) {
				own_cfg o2;
				sl_pipeline q2;
				own_init(&o2, pp, 1, dp, tp, mbs * dp, B / (mbs * dp), L,
				    recs[ri], oc.c.layout);
				if ((rc = sl_pipeline_eval(o, &o2.c, &q2, err)) != SL_OK) {
					own_free(&o2);
					sl_pipeline_free(&q);
					own_free(&oc);
					return rc;
				}
				if (!q2.fits) {
					sl_pipeline_free(&q2);
					own_free(&o2);
					break;
				}
				sl_pipeline_free(&q);
				own_free(&oc);
				q = q2;
				oc = o2;
			}
			*best = oc;
			*pl = q;
			return SL_OK;
		}
	return sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0, "%s",
	    _("no layout Megatron-LM recommends fits these devices"));
}

void
sl_pipe_account_free(sl_pipe_account *a)
{
	if (a == NULL)
		return;
	sl_pipeline_free(&a->standard);
	memset(a, 0, sizeof *a);
}

/* Evaluates cfg into the next step of the account, described by what. */
static int
account_step(sl_pipe_account *a, const sl_hybrid_opts *o, const own_cfg *oc,
    sl_error *err, const char *fmt, ...)
{
	sl_pipe_account_item *it = &a->item[a->n_items];
	sl_pipeline q;
	va_list ap;
	int rc;

	if ((rc = sl_pipeline_eval(o, &oc->c, &q, err)) != SL_OK)
		return rc;
	va_start(ap, fmt);
	vsnprintf(it->what, sizeof it->what, fmt, ap);
	va_end(ap);
	it->step_ns = q.step_ns;
	it->pipe_ns = q.pipe_ns;
	it->bubble_ns = q.bubble_ns;
	it->max_mem = q.max_mem;
	it->fits = q.fits;
	a->n_items++;
	sl_pipeline_free(&q);
	return SL_OK;
}

int
sl_pipe_account_build(const sl_hybrid_opts *o, const sl_pipeline *chosen,
    sl_pipe_account *a, sl_error *err)
{
	own_cfg std, cur = { 0 }, pl;
	int rc, tp, dp;

	memset(a, 0, sizeof *a);
	if ((rc = standard(o, &std, &a->standard, err)) != SL_OK)
		return rc;
	tp = std.c.inner;
	dp = std.c.outer;
	a->tp = tp;
	a->dp = dp;
	a->micro_batch = std.c.graph_batch / dp;
	a->recompute = std.rec[0];
	own_of(&pl, chosen);
	/* 1: the plan's pipeline degree, chunks, sub-mesh and stages, with
	 * the standard's micro-batch, recomputation and Megatron-LM layout */
	{
		int64_t mbs = a->micro_batch, G = mbs * pl.c.outer;
		int64_t B = std.c.graph_batch * std.c.micro_batches;

		own_of(&cur, chosen);
		for (int j = 0; j < cur.c.pp * cur.c.virt; j++)
			cur.rec[j] = a->recompute;
		if (B % G != 0) {
			G = pl.c.graph_batch;
			mbs = G / pl.c.outer;
		}
		cur.c.graph_batch = G;
		cur.c.micro_batches = B / G;
		cur.c.layout = pl.c.inner > 1 ? SL_LAYOUT_MEGATRON_SP : SL_LAYOUT_MEGATRON;
		if ((rc = account_step(a, o, &cur, err,
		    _("pipeline %d x %d chunks on %d x %d, the plan's stages"),
		    cur.c.pp, cur.c.virt, cur.c.outer, cur.c.inner)) != SL_OK)
			goto out;
		/* 2: the plan's micro-batch */
		cur.c.graph_batch = pl.c.graph_batch;
		cur.c.micro_batches = pl.c.micro_batches;
		if ((rc = account_step(a, o, &cur, err, _("micro-batch %lld (%lld of them)"),
		    (long long)(pl.c.graph_batch / pl.c.outer),
		    (long long)pl.c.micro_batches)) != SL_OK)
			goto out;
		/* 3: the plan's recomputation */
		memcpy(cur.rec, pl.rec, pl.c.pp * pl.c.virt * sizeof *cur.rec);
		if ((rc = account_step(a, o, &cur, err, _("recomputation as planned (%s in stage 0)"),
		    sl_recompute_name(pl.rec[0]))) != SL_OK)
			goto out;
		/* 4: the planned operators instead of Megatron-LM's layout */
		cur.c.layout = SL_LAYOUT_PLANNED;
		rc = account_step(a, o, &cur, err, "%s",
		    _("per-operator choices as planned"));
	}
out:
	own_free(&cur);
	own_free(&pl);
	own_free(&std);
	if (rc != SL_OK)
		sl_pipe_account_free(a);
	return rc;
}
