/*
 * explain.c: the teaching text for one operator under one strategy.  It
 * walks the same rules as the cost model (doc/cost-model.md, space.c) and
 * writes each step out with its numbers: how the strategy splits the loop
 * dimensions, the shard of every tensor on every device, the bytes kept and
 * which of them are redundant and why, the collectives of forward and
 * backward with their sizes and times, and, given a plan, the resharding
 * with the neighbours.  The engine returns the text; front ends show it.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ text buffer */

typedef struct sbuf {
	char *s;
	size_t len, cap;
} sbuf;

static void
sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->s != NULL ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			b->len += n;
			return;
		}
		b->cap = b->cap * 2 + n + 256;
		b->s = sl_xrealloc(b->s, b->cap);
	}
}

/* 1234567 -> "1,234,567" */
static const char *
num(int64_t v, char *buf, size_t len)
{
	char tmp[32];
	int n, o = 0, lead;
	bool neg = v < 0;

	snprintf(tmp, sizeof tmp, "%lld", (long long)(neg ? -v : v));
	n = (int)strlen(tmp);
	lead = n % 3 ? n % 3 : 3;
	if (neg && o < (int)len - 1)
		buf[o++] = '-';
	for (int i = 0; i < n && o < (int)len - 2; i++) {
		if (i > 0 && (i - lead) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

/* "4.00 MiB" or "512 B" */
static const char *
bytes_h(int64_t v, char *buf, size_t len)
{
	return sl_format_bytes(v, buf, len);
}

static void
shape_str(int rank, const int64_t *dims, char *buf, size_t len)
{
	size_t o = 0;

	o += snprintf(buf, len, "[");
	for (int i = 0; i < rank && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? ", " : "",
		    (long long)dims[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

/* "512 x 512" (product spelled out), dims of rank r */
static void
product_str(int rank, const int64_t *dims, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < rank && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? " x " : "",
		    (long long)dims[i]);
	if (rank == 0)
		snprintf(buf, len, "1");
}

static const char *
axes_str(uint8_t axes, char *buf, size_t len)
{
	size_t o = 0;
	int n = 0;

	buf[0] = '\0';
	for (int a = 0; a < SL_MAX_AXES; a++)
		if (axes & (1u << a))
			n++;
	(void)o;
	if (n > 1)	/* SL_MAX_AXES is 2: both */
		snprintf(buf, len, _("axes %d and %d"), 0, 1);
	else
		for (int a = 0; a < SL_MAX_AXES; a++)
			if (axes & (1u << a))
				snprintf(buf, len, _("axis %d"), a);
	return buf;
}

/* Axes (of size > 1) along which a tensor of spec sp is replicated. */
static uint8_t
replicated_axes(const sl_mesh *m, const sl_spec *sp, int rank)
{
	uint8_t axes = 0;

	for (int a = 0; a < m->n_axes; a++) {
		bool split = false;
		for (int d = 0; d < rank; d++)
			if (sp->split[d] & (1u << a))
				split = true;
		if (!split && !(sp->partial & (1u << a)) && m->axes[a].size > 1)
			axes |= 1u << a;
	}
	return axes;
}

/* The loop dimensions axis a splits, as "col (2048)". */
static const char *
loop_desc(const sl_binding *b, int l, char *buf, size_t len)
{
	snprintf(buf, len, "%s (%lld)", sl_loop_role_name(b->role[l]),
	    (long long)b->size[l]);
	return buf;
}

/* "devices 0-3", "devices 0, 2", "device 1" from a membership list. */
static void
devset_str(const bool *in, int n, char *buf, size_t len)
{
	size_t o = 0;
	int cnt = 0;

	for (int d = 0; d < n; d++)
		cnt += in[d];
	char list[224];

	list[0] = '\0';
	for (int d = 0, first = 1; d < n && o < sizeof list; d++) {
		int e = d;
		if (!in[d])
			continue;
		while (e + 1 < n && in[e + 1])
			e++;
		if (e == d)
			o += snprintf(list + o, sizeof list - o, "%s%d", first ? "" : ", ", d);
		else
			o += snprintf(list + o, sizeof list - o, "%s%d-%d", first ? "" : ", ", d, e);
		first = 0;
		d = e;
	}
	snprintf(buf, len, ngettext("device %s", "devices %s", cnt), list);
}

/* ---------------------------------------------------------------- sections */

/* What splitting a loop dimension of each role means, in one line. */
static const char *const role_text[SL_LOOP_ROLE_COUNT] = {
	[SL_LOOP_DP] = N_("data parallel: each device takes a slice of the batch"),
	[SL_LOOP_SEQ] = N_("sequence parallel: each device takes a slice of the tokens"),
	[SL_LOOP_ROW] = N_("row-parallel (Megatron-LM): each device multiplies a slice of the "
	    "contraction dimension, so its result is a partial sum"),
	[SL_LOOP_COL] = N_("column-parallel (Megatron-LM): each device computes a slice of the "
	    "output features"),
	[SL_LOOP_HEAD] = N_("each device computes a subset of the attention heads"),
	[SL_LOOP_VOCAB] = N_("vocabulary-parallel: each device holds a slice of the vocabulary"),
	[SL_LOOP_EXPERT] = N_("expert parallel: each device holds some of the experts and "
	    "computes the tokens routed to them, which reach it all-to-all"),
};

static const char *
role_meaning(sl_loop_role role)
{
	if ((int)role < 0 || role >= SL_LOOP_ROLE_COUNT || role_text[role] == NULL)
		return NULL;
	return _(role_text[role]);
}

static void
explain_header(sbuf *b, const sl_space *s, int opi, const sl_strategy *st)
{
	const sl_op *op = &s->g->ops[opi];
	const sl_mesh *m = &s->mesh;
	const sl_binding *bd = s->ops[opi].bind;
	char buf[64];

	sb_printf(b, _("Operator %s (%s), strategy %s\n"), op->name,
	    sl_op_kind_name(op->kind), st->name);
	sb_printf(b, "  %s\n", _(sl_kinds[op->kind].summary));
	if (m->n_axes == 1)
		sb_printf(b, ngettext("Mesh: 1-D, %d device (%s)\n",
		    "Mesh: 1-D, %d devices (%s)\n", m->n_devices), m->n_devices,
		    m->hw.name);
	else
		sb_printf(b, _("Mesh: %d x %d = %d devices (%s), axis 0 outer\n"),
		    m->axes[0].size, m->axes[1].size, m->n_devices, m->hw.name);
	for (int a = 0; a < m->n_axes; a++)
		sb_printf(b, ngettext("  axis %d: %d device, %g GB/s per direction, "
		    "%g us latency\n", "  axis %d: %d devices, %g GB/s per direction, "
		    "%g us latency\n", m->axes[a].size),
		    a, m->axes[a].size, m->axes[a].link.bandwidth / 1e9,
		    m->axes[a].link.latency * 1e6);

	sb_printf(b, "\n%s\n", _("1. How the strategy splits the work"));
	sb_printf(b, "%s", _("  Loop dimensions:"));
	for (int l = 0; l < bd->n_loop; l++)
		sb_printf(b, "%s %s%s", l ? "," : "", loop_desc(bd, l, buf, sizeof buf),
		    bd->splittable[l] ? "" : _(" not splittable"));
	sb_printf(b, "\n");
	{
		bool any = false;
		char ax[32];
		for (int l = 0; l < bd->n_loop; l++) {
			if (st->loop_axes[l] == 0)
				continue;
			sb_printf(b, _("  %s %s %s into %d parts\n"),
			    axes_str(st->loop_axes[l], ax, sizeof ax),
			    (st->loop_axes[l] & (st->loop_axes[l] - 1)) ? _("together split") :
			    _("splits"), loop_desc(bd, l, buf, sizeof buf),
			    sl_axes_parts(m, st->loop_axes[l]));
			if (role_meaning(bd->role[l]) != NULL)
				sb_printf(b, "    (%s: %s)\n", sl_loop_role_name(bd->role[l]),
				    role_meaning(bd->role[l]));
			any = true;
		}
		if (!any)
			sb_printf(b, "%s\n", _("  nothing is split: every device does the whole operator"));
	}
}

/*
 * Where a mixture's experts live: for an operator that splits its expert
 * dimension, the experts each group of devices holds (the explorer's and
 * explain's picture of expert parallelism).
 */
static void
explain_experts(sbuf *b, const sl_space *s, int opi, const sl_strategy *st)
{
	const sl_mesh *m = &s->mesh;
	const sl_binding *bd = s->ops[opi].bind;
	int nd = m->n_devices, parts;
	int64_t E = 0;
	uint8_t axes = 0;
	bool *in;
	char buf[256];

	for (int l = 0; l < bd->n_loop; l++)
		if (bd->role[l] == SL_LOOP_EXPERT) {
			E = bd->size[l];
			axes = st->loop_axes[l];
		}
	if (E == 0)
		return;
	sb_printf(b, "\n%s\n", _("Experts on each device"));
	if (axes == 0) {
		sb_printf(b, ngettext("  every device holds all %lld expert\n",
		    "  every device holds all %lld experts\n", E), (long long)E);
		return;
	}
	parts = sl_axes_parts(m, axes);
	in = sl_xcalloc(nd, sizeof *in);
	for (int i = 0; i < parts; i++) {
		int64_t lo = i * (E / parts), n = E / parts;
		int coord[SL_MAX_AXES];
		for (int d = 0; d < nd; d++) {
			sl_mesh_coords(m, d, coord);
			in[d] = sl_axes_index(m, axes, coord) == i;
		}
		devset_str(in, nd, buf, sizeof buf);
		if (n == 1)
			sb_printf(b, _("  %s: expert %lld\n"), buf, (long long)lo);
		else
			sb_printf(b, _("  %s: experts %lld-%lld\n"), buf, (long long)lo,
			    (long long)(lo + n - 1));
	}
	free(in);
	sb_printf(b, ngettext("  (%lld expert on each device; the tokens routed to "
	    "the others leave it all-to-all, see 5.)\n", "  (%lld experts on each "
	    "device; the tokens routed to the others leave it all-to-all, see 5.)\n",
	    E / parts), (long long)(E / parts));
}

static void
explain_shards(sbuf *b, const sl_space *s, int opi, const sl_strategy *st)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[opi];
	const sl_mesh *m = &s->mesh;
	int nd = m->n_devices;
	bool *done = sl_xcalloc(nd, sizeof *done), *in = sl_xcalloc(nd, sizeof *in);

	sb_printf(b, "\n%s\n", _("2. Tensor shards on each device"));
	for (int slot = 0; slot < sl_op_nslots(op); slot++) {
		const sl_tensor *t = &g->tensors[sl_op_slot_tensor(op, slot)];
		const sl_spec *sp = &st->spec[slot];
		char sh[96], spec[48], ds[256], ax[32];
		uint8_t rep = replicated_axes(m, sp, t->rank);

		shape_str(t->rank, t->dims, sh, sizeof sh);
		sl_spec_format(sp, t->rank, spec, sizeof spec);
		sb_printf(b, "  %s %s (%s, %s) %s %s, %s %s\n",
		    slot < op->n_in ? _("in ") : _("out"), t->name,
		    sl_role_name(t->role), sl_dtype_name(t->dtype), _("full"), sh,
		    _("spec"), spec);
		memset(done, 0, nd * sizeof *done);
		for (int d = 0; d < nd; d++) {
			int64_t ld[SL_MAX_RANK];
			int c0[SL_MAX_AXES];

			if (done[d])
				continue;
			sl_mesh_coords(m, d, c0);
			for (int k = 0; k < t->rank; k++)
				ld[k] = sl_local_dim(m, sp, k, t->dims[k], c0);
			memset(in, 0, nd * sizeof *in);
			for (int e = d; e < nd; e++) {
				int c1[SL_MAX_AXES];
				bool same = true;
				sl_mesh_coords(m, e, c1);
				for (int k = 0; k < t->rank && same; k++)
					same = sl_local_dim(m, sp, k, t->dims[k], c1) == ld[k];
				if (same)
					in[e] = done[e] = true;
			}
			devset_str(in, nd, ds, sizeof ds);
			shape_str(t->rank, ld, sh, sizeof sh);
			sb_printf(b, "      %s: %s\n", ds, sh);
		}
		if (sp->partial)
			sb_printf(b, _("      a partial sum over %s: each device holds its own "
			    "addend of the full values\n"), axes_str(sp->partial, ax, sizeof ax));
		if (sp->zero)
			sb_printf(b, _("      states sharded over %s (+z): the weight is gathered "
			    "for forward and backward\n"), axes_str(sp->zero, ax, sizeof ax));
		if (rep != 0 && nd > 1 && (rep & ~sp->zero) != 0)
			sb_printf(b, _("      replicated along %s: those devices hold the same "
			    "values\n"), axes_str(rep & ~sp->zero, ax, sizeof ax));
		if ((rep & sp->zero) != 0 && nd > 1)
			sb_printf(b, _("      whole for compute along %s, but each device "
			    "stores only its share of the states between uses\n"),
			    axes_str(rep & sp->zero, ax, sizeof ax));
	}
	free(done);
	free(in);
}

/*
 * Memory items of one tensor slot on device 0 written out (the items' own
 * elements, bytes and unsharded bytes); returns the bytes.
 */
static int64_t
mem_line(sbuf *b, const sl_space *s, const sl_tensor *t, const sl_spec *sp,
    int64_t elems, int bpe, int64_t bytes, int64_t full, const char *what,
    const char *why_bpe, int64_t *redundant)
{
	const sl_mesh *m = &s->mesh;
	int64_t ld[SL_MAX_RANK], e, fair, red;
	char p[96], n1[32], n2[32], n3[32], h[32], ax[32];
	int nd = m->n_devices;
	uint8_t rep = replicated_axes(m, sp, t->rank);

	for (int k = 0; k < t->rank; k++)
		ld[k] = sl_local_dim(m, sp, k, t->dims[k], NULL);
	e = sl_local_elems(m, sp, t, NULL);
	product_str(t->rank, ld, p, sizeof p);
	if (sp->zero) {
		if (t->rank > 1)
			sb_printf(b, _("  %s %s: %s = %s local elements"), what, t->name, p,
			    num(e, n1, sizeof n1));
		else
			sb_printf(b, _("  %s %s: %s local elements"), what, t->name,
			    num(e, n1, sizeof n1));
		sb_printf(b, _(", states sharded over %s: "
		    "%s / %d -> %s elements x %lld bytes (%s) = %s bytes (%s)\n"),
		    axes_str(sp->zero, ax, sizeof ax), n1, sl_axes_parts(m, sp->zero),
		    num(elems, n2, sizeof n2), (long long)bpe, why_bpe,
		    num(bytes, n3, sizeof n3), bytes_h(bytes, h, sizeof h));
	} else {
		sb_printf(b, _("  %s %s: %s local elements x %lld bytes (%s) = %s bytes (%s)\n"),
		    what, t->name, p, (long long)bpe, why_bpe,
		    num(bytes, n1, sizeof n1), bytes_h(bytes, h, sizeof h));
	}
	fair = full / nd;
	red = bytes - fair;
	*redundant += red;
	if (red > 0) {
		sb_printf(b, _("      redundant: %s - %s total / %d devices = %s bytes"),
		    num(bytes, n1, sizeof n1), num(full, n2, sizeof n2),
		    nd, num(red, n3, sizeof n3));
		if (rep != 0 && !sp->zero)
			sb_printf(b, _(": the same values are kept on every device along %s\n"),
			    axes_str(rep, ax, sizeof ax));
		else if (rep != 0)
			sb_printf(b, _(": the states are split over %s only, not along the rest\n"),
			    axes_str(sp->zero, ax, sizeof ax));
		else
			sb_printf(b, "%s\n", _(": an uneven split leaves device 0 the larger piece"));
	} else {
		sb_printf(b, "%s\n", _("      redundant: none, every device keeps a different piece"));
	}
	return bytes;
}

/* The cost model's memory items of one operator, collected (sl_node_items). */
typedef struct item_list {
	int n;
	sl_mem_item it[3 * SL_MAX_OP_TENSORS + 2 * SL_MAX_OP_TENSORS + 2];
} item_list;

static void
collect_item(void *ctx, const sl_mem_item *it)
{
	item_list *l = ctx;

	/* what the device keeps; the loss's moments of fp32 are the timeline's */
	if (!it->summed)
		return;
	if (l->n < (int)SL_ARRAY_LEN(l->it))
		l->it[l->n++] = *it;
}

static const char *
state_why(const sl_space *s, int w, int gr, int o, char *buf, size_t len)
{
	const sl_recipe *r = &s->opts.recipe;

	if (r->precision == SL_PREC_BF16 || r->precision == SL_PREC_MEGATRON ||
	    r->precision == SL_PREC_FP8 || r->precision == SL_PREC_FP16)
		snprintf(buf, len, _("%d weight + %d gradient + %d Adam: fp32 master, m, v"),
		    w, gr, o);
	else
		snprintf(buf, len, _("%d weight + %d gradient + %d Adam: m, v"), w, gr, o);
	return buf;
}

static int64_t
explain_memory(sbuf *b, const sl_space *s, int opi, int si, const sl_strategy *st)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[opi];
	const sl_mesh *m = &s->mesh;
	int64_t total = 0, redundant = 0;
	char n1[32], n2[32], n3[32], h[32], why[96], rb[160];
	item_list l = { 0 };

	sb_printf(b, "\n%s\n", _("3. Memory on device 0 (it holds the largest shard of everything)"));
	sb_printf(b, _("  recipe: %s\n"), sl_recipe_describe(&s->opts.recipe, rb, sizeof rb));
	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *t = &g->tensors[op->in[i]];
		if (t->role == SL_ROLE_PARAMETER && s->owner[op->in[i]] != opi)
			sb_printf(b, _("  parameter %s: its states are counted at its first user "
			    "%s\n"), t->name, g->ops[s->owner[op->in[i]]].name);
	}
	sl_node_items(s, opi, si, NULL, collect_item, &l);
	for (int i = 0; i < l.n; i++) {
		const sl_mem_item *it = &l.it[i];
		const sl_tensor *t = it->tensor >= 0 ? &g->tensors[it->tensor] : NULL;
		sl_spec sp;

		switch (it->what) {
		case SL_WHAT_STATE: {
			/* weight, gradient and optimizer come in a row: one line */
			int w = it->bpe, gr = 0, o = 0;
			int64_t bytes = it->local, full = it->full;
			if (i + 2 < l.n && l.it[i + 1].what == SL_WHAT_STATE &&
			    l.it[i + 2].what == SL_WHAT_STATE) {
				gr = l.it[i + 1].bpe;
				o = l.it[i + 2].bpe;
				bytes = sl_add_sat(bytes, sl_add_sat(l.it[i + 1].local,
				    l.it[i + 2].local));
				full = sl_add_sat(full, sl_add_sat(l.it[i + 1].full,
				    l.it[i + 2].full));
				i += 2;
			}
			total += mem_line(b, s, t, &st->spec[it->slot], it->elems,
			    w + gr + o, bytes, full, _("parameter"),
			    state_why(s, w, gr, o, why, sizeof why), &redundant);
			break;
		}
		case SL_WHAT_AUTOCAST:
			sp = st->spec[it->slot];
			sp.zero = 0;
			total += mem_line(b, s, t, &sp, it->elems, it->bpe, it->local,
			    it->full, _("autocast copy of"), it->free == SL_UNTIL_FWD_END ?
			    _("bf16 copy of the fp32 weight, in autocast's cache until the "
			    "forward ends: backward does not read it, the input having no "
			    "gradient") :
			    _("bf16 copy of the fp32 weight, kept for backward"), &redundant);
			break;
		case SL_WHAT_FP8:
			if (it->slot < 0) {
				sb_printf(b, _("  FP8 scaling factors and amax history: %s bytes\n"),
				    num(it->local, n1, sizeof n1));
				redundant += it->local - it->full / m->n_devices;
				total += it->local;
				break;
			}
			sp = st->spec[it->slot];
			sp.zero = 0;
			total += mem_line(b, s, t, &sp, it->elems, it->bpe, it->local,
			    it->full, _("FP8 copy of"),
			    _("its FP8 copy and transpose (Transformer Engine), kept for the step"),
			    &redundant);
			break;
		case SL_WHAT_SAVED:
		case SL_WHAT_LAYER_INPUT:
			sp = st->spec[it->slot];
			sp.zero = 0;
			if (it->bpe == 1)
				snprintf(why, sizeof why, _("a %d-byte mask"), it->bpe);
			else if (it->bpe == sl_dtype_size(t->dtype))
				snprintf(why, sizeof why, "%s", sl_dtype_name(t->dtype));
			else
				snprintf(why, sizeof why, _("kept as %d-byte values"), it->bpe);
			total += mem_line(b, s, t, &sp, it->elems, it->bpe, it->local,
			    it->full, it->what == SL_WHAT_LAYER_INPUT ? _("layer input (the layer is recomputed)") :
			    it->slot < op->n_in ? _("saved input") : _("saved output"), why,
			    &redundant);
			break;
		case SL_WHAT_EXTRA: {
			const sl_binding *bd = s->ops[opi].bind;
			int64_t loc[SL_MAX_LOOP], red;
			sl_local_loop(s, opi, si, NULL, loc);
			if (op->kind == SL_OP_ATTENTION &&
			    s->opts.recipe.attention == SL_ATTN_FLASH)
				sb_printf(b, _("  flash attention log-sum-exp: 4 bytes x batch %lld x "
				    "heads %lld x seq %lld = %s bytes (%s)\n"),
				    (long long)loc[0], (long long)loc[2], (long long)loc[1],
				    num(it->local, n1, sizeof n1), bytes_h(it->local, h, sizeof h));
			else if (op->kind == SL_OP_ATTENTION && it->local > 0)
				sb_printf(b, _("  attention scores (softmax output%s): %d bytes x batch "
				    "%lld x heads %lld x seq %lld x seq %lld = %s bytes (%s)\n"),
				    op->p > 0 ? _(", dropout mask and dropped copy") : "",
				    sl_attention_score_bytes(s, op), (long long)loc[0],
				    (long long)loc[2], (long long)loc[1], (long long)bd->size[1],
				    num(it->local, n1, sizeof n1), bytes_h(it->local, h, sizeof h));
			else if (op->kind == SL_OP_ATTENTION)
				sb_printf(b, "%s\n", _("  attention scores: none kept, recomputed in backward"));
			else
				sb_printf(b, _("  other saved state: %s bytes (%s)\n"),
				    num(it->local, n1, sizeof n1), bytes_h(it->local, h, sizeof h));
			red = it->local - it->full / m->n_devices;
			redundant += red;
			if (it->local > 0)
				sb_printf(b, _("      redundant: %s - %s total / %d devices = %s bytes\n"),
				    num(it->local, n1, sizeof n1), num(it->full, n2, sizeof n2),
				    m->n_devices, num(red, n3, sizeof n3));
			total += it->local;
			break;
		}
		case SL_WHAT_TRANSIENT:
			break;
		}
	}
	if (l.n == 0)
		sb_printf(b, "%s\n", _("  nothing: this operator keeps no state and saves nothing for backward"));
	sb_printf(b, _("  total: %s bytes (%s), of which %s bytes redundant\n"),
	    num(total, n1, sizeof n1), bytes_h(total, h, sizeof h),
	    num(redundant, n2, sizeof n2));
	return total;
}

/* One collective written out with its formula; returns its time. */
static int64_t
coll_line(sbuf *b, const sl_mesh *m, sl_coll c, int a, int64_t bytes,
    const char *indent)
{
	int n = m->axes[a].size;
	const sl_link *l = &m->axes[a].link;
	int64_t ns = sl_coll_time(c, n, bytes, l);
	double bw_ns, lat_ns;
	char n1[32], n2[32], h[32];

	if (n <= 1 || bytes <= 0)
		return 0;
	lat_ns = l->latency * 1e9;
	switch (c) {
	case SL_COLL_ALL_REDUCE:
		bw_ns = 2.0 * (n - 1) / n * (double)bytes / l->bandwidth * 1e9;
		sb_printf(b, _("%s%s over axis %d (%d devices) of %s bytes (%s): "
		    "2 x %d/%d x %s B / %g GB/s + 2 x %d x %g us = %.1f + %.1f ns = %s ns\n"),
		    indent, sl_coll_name(c), a, n, num(bytes, n1, sizeof n1),
		    bytes_h(bytes, h, sizeof h), n - 1, n, n1, l->bandwidth / 1e9, n - 1,
		    l->latency * 1e6, bw_ns, 2.0 * (n - 1) * lat_ns, num(ns, n2, sizeof n2));
		break;
	case SL_COLL_ALL_TO_ALL:
		bw_ns = (double)(n - 1) / ((double)n * n) * (double)bytes / l->bandwidth * 1e9;
		sb_printf(b, _("%s%s over axis %d (%d devices) of %s bytes (%s): "
		    "%d/%d^2 x %s B / %g GB/s + %d x %g us = %.1f + %.1f ns = %s ns\n"),
		    indent, sl_coll_name(c), a, n, num(bytes, n1, sizeof n1),
		    bytes_h(bytes, h, sizeof h), n - 1, n, n1, l->bandwidth / 1e9, n - 1,
		    l->latency * 1e6, bw_ns, (n - 1) * lat_ns, num(ns, n2, sizeof n2));
		break;
	default:
		bw_ns = (double)(n - 1) / n * (double)bytes / l->bandwidth * 1e9;
		sb_printf(b, _("%s%s over axis %d (%d devices) of %s bytes (%s): "
		    "%d/%d x %s B / %g GB/s + %d x %g us = %.1f + %.1f ns = %s ns\n"),
		    indent, sl_coll_name(c), a, n, num(bytes, n1, sizeof n1),
		    bytes_h(bytes, h, sizeof h), n - 1, n, n1, l->bandwidth / 1e9, n - 1,
		    l->latency * 1e6, bw_ns, (n - 1) * lat_ns, num(ns, n2, sizeof n2));
		break;
	}
	return ns;
}
/* The cost model's collectives of a node or an edge, collected in order. */
typedef struct coll_list {
	int n, cap;
	sl_coll_item *it;
} coll_list;

static void
collect_coll(void *ctx, const sl_coll_item *c)
{
	coll_list *l = ctx;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->it = sl_xrealloc(l->it, l->cap * sizeof *l->it);
	}
	l->it[l->n++] = *c;
}

/* The ring's collectives of one phase, with a line saying why first. */
static int64_t
ring_lines(sbuf *b, const sl_mesh *m, const coll_list *l, sl_phase ph,
    bool *any)
{
	int64_t total = 0;
	bool said = false;

	for (int i = 0; i < l->n; i++) {
		const sl_coll_item *it = &l->it[i];
		if (it->phase != ph || it->cause != SL_CAUSE_RING)
			continue;
		if (!said)
			sb_printf(b, "%s\n", ph == SL_PHASE_FWD ?
			    _("    the sequence is split (context parallelism): K and V go round the ring") :
			    _("    the ring again for K and V, and their gradients reduced to their owners"));
		said = true;
		total += coll_line(b, m, it->coll, it->axis, it->bytes, "      ");
	}
	*any = *any || said;
	return total;
}

/* Forward: ZeRO gathers, outputs left as partial sums, the ring. */
static int64_t
comm_forward(sbuf *b, const sl_space *s, int opi, const sl_strategy *st,
    const coll_list *l)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[opi];
	const sl_mesh *m = &s->mesh;
	int64_t total = 0;
	bool any = false;
	char ax[32];

	sb_printf(b, "%s\n", _("  forward:"));
	for (int i = 0; i < l->n; i++) {
		const sl_coll_item *it = &l->it[i];
		if (it->phase != SL_PHASE_FWD || it->cause != SL_CAUSE_ZERO_GATHER)
			continue;
		sb_printf(b, _("    %s is stored sharded (+z): gather it before use\n"),
		    g->tensors[it->tensor].name);
		total += coll_line(b, m, it->coll, it->axis, it->bytes, "      ");
		any = true;
	}
	for (int j = 0; j < op->n_out; j++) {
		const sl_spec *sp = &st->spec[op->n_in + j];
		const sl_tensor *t = &g->tensors[op->out[j]];

		if (sp->partial == 0)
			continue;
		any = true;
		if (s->consumed == NULL || s->consumed[op->out[j]]) {
			sb_printf(b, _("    %s leaves as a partial sum over %s: it is reduced "
			    "on the way to its consumers (section 5)\n"),
			    t->name, axes_str(sp->partial, ax, sizeof ax));
			continue;
		}
		sb_printf(b, _("    %s is a partial sum over %s and an output of the "
		    "model: it is summed where it is made\n"), t->name,
		    axes_str(sp->partial, ax, sizeof ax));
		for (int i = 0; i < l->n; i++)
			if (l->it[i].cause == SL_CAUSE_OUT && l->it[i].slot == op->n_in + j)
				total += coll_line(b, m, l->it[i].coll, l->it[i].axis,
				    l->it[i].bytes, "      ");
	}
	total += ring_lines(b, m, l, SL_PHASE_FWD, &any);
	if (!any)
		sb_printf(b, "%s\n", _("    none: every device computes its part from what it holds"));
	return total;
}

/* elems elements of a tensor of spec sp: as the product of its local
 * dimensions when they hold that many, else the count. */
static void
elems_str(const sl_mesh *m, const sl_spec *sp, const sl_tensor *t,
    int64_t elems, char *buf, size_t len)
{
	int64_t ld[SL_MAX_RANK];

	if (sl_local_elems(m, sp, t, NULL) != elems) {
		num(elems, buf, len);
		return;
	}
	for (int k = 0; k < t->rank; k++)
		ld[k] = sl_local_dim(m, sp, k, t->dims[k], NULL);
	product_str(t->rank, ld, buf, len);
}

/* Backward: the ring, then each input's gradient reduced axis by axis. */
static int64_t
comm_backward(sbuf *b, const sl_space *s, int opi, const sl_strategy *st,
    const coll_list *l)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[opi];
	const sl_binding *bd = s->ops[opi].bind;
	const sl_mesh *m = &s->mesh;
	int64_t total = 0;
	bool any = false;
	char n1[32], n2[96], h[32], ld[64], ax[32];

	sb_printf(b, "%s\n", _("  backward:"));
	total += ring_lines(b, m, l, SL_PHASE_BWD, &any);
	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *t = &g->tensors[op->in[i]];
		uint8_t part = sl_grad_axes(bd, st, i, op->n_in);

		if (part != 0 && !sl_needs_grad(t)) {
			sb_printf(b, _("    %s is %s with no gradient: the partial sum of "
			    "its gradient over %s is never formed\n"), t->name,
			    t->role == SL_ROLE_INPUT ? _("data fed to the step") :
			    _("an integer tensor"), axes_str(part, ax, sizeof ax));
			any = true;
			continue;
		}
		for (int k = 0; k < l->n; k++) {
			const sl_coll_item *it = &l->it[k];
			bool first = true;
			if (it->phase != SL_PHASE_BWD || it->slot != i ||
			    (it->cause != SL_CAUSE_GRAD && it->cause != SL_CAUSE_ZERO_GATHER))
				continue;
			/* the first of this axis's collectives says why */
			for (int j = 0; j < k && first; j++)
				first = !(l->it[j].phase == SL_PHASE_BWD &&
				    l->it[j].slot == i && l->it[j].axis == it->axis &&
				    (l->it[j].cause == SL_CAUSE_GRAD ||
				    l->it[j].cause == SL_CAUSE_ZERO_GATHER));
			if (first) {
				elems_str(m, &st->spec[i], t, it->bpe > 0 ?
				    it->bytes / it->bpe : 0, n2, sizeof n2);
				sb_printf(b, _("    gradient of %s: axis %d splits %s, a dimension %s "
				    "does not have, so each device holds a partial sum of it; "
				    "%s local elements x %d bytes = %s bytes (%s)\n"),
				    t->name, it->axis, it->loop >= 0 ?
				    loop_desc(bd, it->loop, ld, sizeof ld) : "?", t->name,
				    n2, it->bpe, num(it->bytes, n1, sizeof n1),
				    bytes_h(it->bytes, h, sizeof h));
				if (it->cause == SL_CAUSE_ZERO_GATHER)
					sb_printf(b, "%s\n", _("      +z: gather the weight again for backward, then "
					    "reduce-scatter the gradient so each device keeps its shard"));
				else if (it->coll == SL_COLL_REDUCE_SCATTER)
					sb_printf(b, "%s\n", _("      its optimizer states are sharded (ZeRO-1, ZeRO-2, "
					    "Megatron-LM's distributed optimizer): reduce-scatter the gradient, "
					    "each device keeping the share it updates"));
			}
			total += coll_line(b, m, it->coll, it->axis, it->bytes, "      ");
			any = true;
		}
		/* the updated weight, gathered after the optimizer step */
		for (int k = 0; k < l->n; k++) {
			const sl_coll_item *it = &l->it[k];
			if (it->slot != i || it->cause != SL_CAUSE_STATE_GATHER)
				continue;
			sb_printf(b, _("    after the optimizer step: each device updated its "
			    "share of %s; all-gather the new weight, %d bytes an element "
			    "(DeepSpeed after the step; Megatron-LM, overlapping "
			    "the parameter gather, behind the next forward)\n"),
			    t->name, it->bpe);
			total += coll_line(b, m, it->coll, it->axis, it->bytes, "      ");
			any = true;
		}
	}
	if (!any)
		sb_printf(b, "%s\n", _("    none: every input gradient is complete on its "
		    "device (no axis splits a dimension an input lacks)"));
	return total;
}

static int64_t
explain_comm(sbuf *b, const sl_space *s, int opi, int si, const sl_strategy *st)
{
	coll_list l = { 0 };
	int64_t total;
	char n1[32], h[32];

	sb_printf(b, "\n%s\n", _("4. Communication of the operator itself, per step"));
	sl_node_colls(s, opi, si, collect_coll, &l);
	total = comm_forward(b, s, opi, st, &l);
	total += comm_backward(b, s, opi, st, &l);
	sb_printf(b, _("  total: %s ns (%s)\n"), num(total, n1, sizeof n1),
	    sl_format_ns(total, h, sizeof h));
	free(l.it);
	return total;
}

/* What resharding along an axis does, from the producer's placement p to
 * the consumer's q (sl_placement). */
static void
reshard_why(sbuf *b, int a, int p, int q)
{
	if (p == -1)
		sb_printf(b, _("    axis %d: replicated -> split: forward slices "
		    "locally; backward gathers the gradient\n"), a);
	else if (p == -2 && q == -1)
		sb_printf(b, _("    axis %d: partial sum -> replicated\n"), a);
	else if (p == -2)
		sb_printf(b, _("    axis %d: partial sum -> split\n"), a);
	else if (q == -1)
		sb_printf(b, _("    axis %d: split -> replicated\n"), a);
	else
		sb_printf(b, _("    axis %d: split on dimension %d -> split on "
		    "dimension %d\n"), a, p, q);
}

/* The arithmetic of an all-to-all, as the formula line of an all-reduce
 * teaches its own: what the group holds, what each device keeps and sends. */
static void
all_to_all_why(sbuf *b, const sl_mesh *m, int a, int64_t bytes)
{
	int n = m->axes[a].size;
	char h1[32], h2[32];

	sb_printf(b, _("      all-to-all: the %d devices hold %s together, %s each; "
	    "each keeps 1/%d of its piece and sends 1/%d to each of the %d others: "
	    "(%d-1)/%d^2 of the whole leaves every device, at once on every link\n"),
	    n, bytes_h(bytes, h1, sizeof h1), bytes_h(bytes / n, h2, sizeof h2), n, n,
	    n - 1, n, n);
}

static void
edge_text(sbuf *b, const sl_space *s, int e, int s_src, int s_dst, bool incoming)
{
	const sl_graph *g = s->g;
	const sl_space_edge *ed = &s->edges[e];
	const sl_tensor *t = &g->tensors[ed->tensor];
	const sl_mesh *m = &s->mesh;
	sl_spec src = s->ops[ed->src].strat[s_src].spec[ed->src_slot];
	const sl_spec *dst = &s->ops[ed->dst].strat[s_dst].spec[ed->dst_slot];
	char a1[48], a2[48], n1[32], h[32], ind_fwd[64], ind_bwd[64];
	coll_list l = { 0 };
	sl_mem mem;
	int64_t total = 0;

	snprintf(ind_fwd, sizeof ind_fwd, "      %s ", _("forward"));
	snprintf(ind_bwd, sizeof ind_bwd, "      %s ", _("backward"));
	src.zero = 0;
	sl_spec_format(&src, t->rank, a1, sizeof a1);
	sl_spec_format(dst, t->rank, a2, sizeof a2);
	if (incoming)
		sb_printf(b, _("  %s from %s (%s): %s -> %s\n"), t->name,
		    g->ops[ed->src].name, s->ops[ed->src].strat[s_src].name, a1, a2);
	else
		sb_printf(b, _("  %s to %s (%s): %s -> %s\n"), t->name,
		    g->ops[ed->dst].name, s->ops[ed->dst].strat[s_dst].name, a1, a2);
	sl_edge_colls(s, e, s_src, s_dst, collect_coll, &l);
	for (int i = 0; i < l.n; i++) {
		const sl_coll_item *it = &l.it[i];
		if (i == 0 || l.it[i - 1].axis != it->axis) {
			reshard_why(b, it->axis, it->from, it->to);
			if (it->coll == SL_COLL_ALL_TO_ALL)
				all_to_all_why(b, m, it->axis, it->bytes);
		}
		if (it->cause == SL_CAUSE_SP_GATHER)
			sb_printf(b, "%s\n", _("    kept split over the sequence "
			    "(Megatron-LM's sequence parallelism): gathered again "
			    "for the weight gradient"));
		total += coll_line(b, m, it->coll, it->axis, it->bytes,
		    it->phase == SL_PHASE_FWD ? ind_fwd : ind_bwd);
	}
	sl_edge_cost(s, e, s_src, s_dst, NULL, &mem, NULL);
	if (l.n == 0)
		sb_printf(b, "%s\n", _("    same layout: nothing moves"));
	else
		sb_printf(b, _("    edge total: %s ns; transient buffer %s bytes (%s)\n"),
		    num(total, n1, sizeof n1), num(mem.buffers, a1, sizeof a1),
		    bytes_h(mem.buffers, h, sizeof h));
	if (mem.acts > 0)
		sb_printf(b, _("    kept whole as it arrives (Megatron-LM keeps a "
		    "column-parallel input split only under sequence parallelism): "
		    "%s bytes more (%s)\n"), num(mem.acts, a1, sizeof a1),
		    bytes_h(mem.acts, h, sizeof h));
	free(l.it);
}

static void
explain_edges(sbuf *b, const sl_space *s, const int *choice, int opi, int si)
{
	bool any = false;

	sb_printf(b, "\n%s\n", _("5. Resharding with the neighbours in the plan"));
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *ed = &s->edges[e];
		if (ed->dst == opi && ed->src != opi) {
			edge_text(b, s, e, choice[ed->src], si, true);
			any = true;
		}
	}
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *ed = &s->edges[e];
		if (ed->src == opi && ed->dst != opi) {
			edge_text(b, s, e, si, choice[ed->dst], false);
			any = true;
		}
	}
	if (!any)
		sb_printf(b, "%s\n", _("  no edges: this operator exchanges no tensor with another"));
}

char *
sl_explain(const sl_space *s, const int *choice, int op, int strat,
    sl_error *err)
{
	sbuf b = { NULL, 0, 0 };
	const sl_strategy *st;

	if (op < 0 || op >= s->g->n_ops) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0, _("no operator number %d"), op);
		return NULL;
	}
	if (strat < 0 || strat >= s->ops[op].n_strat) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("operator '%s' has no strategy number %d"), s->g->ops[op].name, strat);
		return NULL;
	}
	st = &s->ops[op].strat[strat];
	sb_printf(&b, "%s", "");
	explain_header(&b, s, op, st);
	explain_experts(&b, s, op, st);
	explain_shards(&b, s, op, st);
	explain_memory(&b, s, op, strat, st);
	explain_comm(&b, s, op, strat, st);
	if (choice != NULL)
		explain_edges(&b, s, choice, op, strat);
	return b.s;
}
