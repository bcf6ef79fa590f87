/*
 * graph.c: the model graph: operators and tensors, built by the loaders and
 * generators, validated once (shapes per kind, producers, cycles, sizes), and
 * read by everything after.
 */
#include "internal.h"

#include <stdlib.h>

static const struct { const char *name; int size; } dtypes[SL_DT_COUNT] = {
	[SL_DT_F32] = { "f32", 4 }, [SL_DT_F16] = { "f16", 2 },
	[SL_DT_BF16] = { "bf16", 2 }, [SL_DT_I32] = { "i32", 4 },
	[SL_DT_I64] = { "i64", 8 }, [SL_DT_U8] = { "u8", 1 },
};

static const char *roles[SL_ROLE_COUNT] = {
	[SL_ROLE_ACTIVATION] = "activation", [SL_ROLE_PARAMETER] = "parameter",
	[SL_ROLE_INPUT] = "input",
};

int
sl_dtype_size(sl_dtype dt)
{
	return ((int)dt >= 0 && dt < SL_DT_COUNT) ? dtypes[dt].size : 0;
}

const char *
sl_dtype_name(sl_dtype dt)
{
	return ((int)dt >= 0 && dt < SL_DT_COUNT) ? dtypes[dt].name : "?";
}

int
sl_dtype_from_name(const char *s)
{
	for (int i = 0; i < SL_DT_COUNT; i++)
		if (strcmp(dtypes[i].name, s) == 0)
			return i;
	return -1;
}

const char *
sl_role_name(sl_role r)
{
	return ((int)r >= 0 && r < SL_ROLE_COUNT) ? roles[r] : "?";
}

int
sl_role_from_name(const char *s)
{
	for (int i = 0; i < SL_ROLE_COUNT; i++)
		if (strcmp(roles[i], s) == 0)
			return i;
	return -1;
}

/* Name lookups by hash: a model of n operators loads in O(n). */
struct sl_graph_index {
	sl_names ops, tensors, layers;
};

sl_graph *
sl_graph_new(const char *name)
{
	sl_graph *g = sl_xcalloc(1, sizeof *g);

	g->index = sl_xcalloc(1, sizeof *g->index);
	g->name = sl_xstrdup(name ? name : "model");
	g->source = sl_xstrdup("");
	return g;
}

void
sl_graph_free(sl_graph *g)
{
	if (g == NULL)
		return;
	for (int i = 0; i < g->n_ops; i++)
		free(g->ops[i].name);
	for (int i = 0; i < g->n_tensors; i++)
		free(g->tensors[i].name);
	for (int i = 0; i < g->n_layers; i++)
		free(g->layers[i].name);
	if (g->index != NULL) {
		sl_names_free(&g->index->ops);
		sl_names_free(&g->index->tensors);
		sl_names_free(&g->index->layers);
		free(g->index);
	}
	free(g->ops);
	free(g->tensors);
	free(g->layers);
	free(g->name);
	free(g->source);
	free(g);
}

/* Can tensor t have a gradient (a float that is not the input)? */
bool
sl_needs_grad(const sl_tensor *t)
{
	return t->role != SL_ROLE_INPUT && t->dtype != SL_DT_I32 &&
	    t->dtype != SL_DT_I64 && t->dtype != SL_DT_U8;
}

int64_t
sl_tensor_elems(const sl_tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i < t->rank; i++)
		n = sl_mul_sat(n, t->dims[i]);
	return n;
}

int
sl_graph_find_tensor(const sl_graph *g, const char *name)
{
	return sl_names_get(&g->index->tensors, name);
}

int
sl_graph_find_op(const sl_graph *g, const char *name)
{
	return sl_names_get(&g->index->ops, name);
}

int
sl_graph_add_tensor(sl_graph *g, const char *name, int rank,
    const int64_t *dims, sl_dtype dtype, sl_role role, sl_error *err)
{
	sl_tensor *t;

	if (sl_graph_find_tensor(g, name) >= 0) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("tensor '%s' is defined twice"), name);
		return -1;
	}
	if (rank < 0 || rank > SL_MAX_RANK) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("tensor '%s' has %d dimensions; at most %d are supported"),
		    name, rank, SL_MAX_RANK);
		return -1;
	}
	if (g->n_tensors == g->cap_tensors) {
		g->cap_tensors = g->cap_tensors ? 2 * g->cap_tensors : 64;
		g->tensors = sl_xrealloc(g->tensors, g->cap_tensors * sizeof *g->tensors);
	}
	t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	t->name = sl_xstrdup(name);
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->dims[i] = dims[i];
	t->dtype = dtype;
	t->role = role;
	t->producer = -1;
	sl_names_add(&g->index->tensors, t->name, g->n_tensors);
	return g->n_tensors++;
}

static int
layer_index(sl_graph *g, const char *layer, int op, sl_error *err)
{
	sl_layer *last = g->n_layers ? &g->layers[g->n_layers - 1] : NULL;

	if (layer == NULL || *layer == '\0')
		return -1;
	if (last != NULL && strcmp(last->name, layer) == 0 &&
	    last->first_op + last->n_ops == op) {
		last->n_ops++;
		return g->n_layers - 1;
	}
	if (sl_names_get(&g->index->layers, layer) >= 0) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("operators of layer '%s' must be listed together"), sl_esc(layer));
		return -2;
	}
	if (g->n_layers == g->cap_layers) {
		g->cap_layers = g->cap_layers ? 2 * g->cap_layers : 16;
		g->layers = sl_xrealloc(g->layers, g->cap_layers * sizeof *g->layers);
	}
	g->layers[g->n_layers].name = sl_xstrdup(layer);
	g->layers[g->n_layers].first_op = op;
	g->layers[g->n_layers].n_ops = 1;
	sl_names_add(&g->index->layers, g->layers[g->n_layers].name, g->n_layers);
	return g->n_layers++;
}

int
sl_graph_add_op(sl_graph *g, const char *name, sl_op_kind kind,
    int n_in, const int *in, int n_out, const int *out, const char *layer,
    sl_error *err)
{
	sl_op *op;
	int li;

	if (sl_graph_find_op(g, name) >= 0) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("operator '%s' is defined twice"), name);
		return -1;
	}
	if ((int)kind < 0 || kind >= SL_OP_KIND_COUNT) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("operator '%s' has an unknown kind"), name);
		return -1;
	}
	if (n_in < 0 || n_out < 0 || n_in + n_out > SL_MAX_OP_TENSORS) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("operator '%s' has too many tensors (at most %d)"), name,
		    SL_MAX_OP_TENSORS);
		return -1;
	}
	for (int i = 0; i < n_in + n_out; i++) {
		int t = i < n_in ? in[i] : out[i - n_in];
		if (t < 0 || t >= g->n_tensors) {
			sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("operator '%s' refers to a missing tensor"), name);
			return -1;
		}
	}
	li = layer_index(g, layer, g->n_ops, err);
	if (li == -2)
		return -1;
	if (g->n_ops == g->cap_ops) {
		g->cap_ops = g->cap_ops ? 2 * g->cap_ops : 64;
		g->ops = sl_xrealloc(g->ops, g->cap_ops * sizeof *g->ops);
	}
	op = &g->ops[g->n_ops];
	memset(op, 0, sizeof *op);
	op->name = sl_xstrdup(name);
	op->kind = kind;
	op->n_in = n_in;
	op->n_out = n_out;
	memcpy(op->in, in, n_in * sizeof *in);
	memcpy(op->out, out, n_out * sizeof *out);
	op->layer = li;
	op->pos = li >= 0 ? g->layers[li].n_ops - 1 : -1;
	for (int i = 0; i < SL_MAX_RANK; i++)
		op->perm[i] = i;
	sl_names_add(&g->index->ops, op->name, g->n_ops);
	return g->n_ops++;
}

int64_t
sl_graph_param_count(const sl_graph *g)
{
	int64_t n = 0;

	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].role == SL_ROLE_PARAMETER)
			n += sl_tensor_elems(&g->tensors[i]);
	return n;
}

int64_t
sl_graph_active_params(const sl_graph *g, int64_t *embedding)
{
	int64_t n = 0, emb = 0;
	int *owner = sl_xmalloc((g->n_tensors ? g->n_tensors : 1) * sizeof *owner);
	bool *lookup_only = sl_xmalloc((g->n_tensors ? g->n_tensors : 1) *
	    sizeof *lookup_only);

	/* the first reader of each parameter; whether only embeddings read it */
	for (int t = 0; t < g->n_tensors; t++) {
		owner[t] = -1;
		lookup_only[t] = true;
	}
	for (int v = 0; v < g->n_ops; v++)
		for (int i = 0; i < g->ops[v].n_in; i++) {
			int t = g->ops[v].in[i];
			if (owner[t] < 0)
				owner[t] = v;
			if (g->ops[v].kind != SL_OP_EMBEDDING)
				lookup_only[t] = false;
		}
	for (int t = 0; t < g->n_tensors; t++) {
		const sl_tensor *ts = &g->tensors[t];
		int64_t e = sl_tensor_elems(ts);
		const sl_op *op;

		if (ts->role != SL_ROLE_PARAMETER)
			continue;
		op = owner[t] >= 0 ? &g->ops[owner[t]] : NULL;
		/* a routed expert's weights: top-k of the E experts (the first
		 * dimension of every expert weight) */
		if (op != NULL && op->kind == SL_OP_EXPERTS && ts->dims[0] > 0)
			e = e / ts->dims[0] * op->topk;
		if (op != NULL && lookup_only[t])
			emb += e;
		n += e;
	}
	free(owner);
	free(lookup_only);
	if (embedding != NULL)
		*embedding = emb;
	return n;
}

int64_t
sl_graph_batch(const sl_graph *g, int64_t *seq)
{
	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		if (t->role == SL_ROLE_INPUT && t->rank >= 1) {
			if (seq != NULL)
				*seq = t->rank >= 2 ? t->dims[1] : 1;
			return t->dims[0];
		}
	}
	if (seq != NULL)
		*seq = 0;
	return 1;
}

static int
op_error(const sl_graph *g, const sl_op *op, const char *file, sl_error *err,
    const char *fmt, const char *what)
{
	return sl_error_set(err, SL_EINPUT, file, op->src_line, op->src_col,
	    fmt, op->name, what);
}

static int
check_tensors(const sl_graph *g, const char *file, sl_error *err)
{
	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		int64_t bytes = sl_dtype_size(t->dtype);

		for (int d = 0; d < t->rank; d++) {
			if (t->dims[d] <= 0)
				return sl_error_set(err, SL_EINPUT, file, 0, 0,
				    _("tensor '%s': dimension %d is %lld; expected a positive integer"),
				    t->name, d, (long long)t->dims[d]);
			if (__builtin_mul_overflow(bytes, t->dims[d], &bytes) ||
			    bytes > ((int64_t)1 << 56))
				return sl_error_set(err, SL_EINPUT, file, 0, 0,
				    _("tensor '%s' is too large (its size overflows)"), t->name);
		}
	}
	return SL_OK;
}

int
sl_graph_validate(sl_graph *g, const char *file, sl_error *err)
{
	int *indeg = NULL, *queue = NULL, head = 0, tail = 0, rc = SL_OK;
	char why[512];

	if (g->n_ops == 0)
		return sl_error_set(err, SL_EINPUT, file, 0, 0,
		    _("the model has no operators"));
	if ((rc = check_tensors(g, file, err)) != SL_OK)
		return rc;
	for (int i = 0; i < g->n_tensors; i++)
		g->tensors[i].producer = -1;
	for (int o = 0; o < g->n_ops; o++) {
		sl_op *op = &g->ops[o];
		const sl_kind_info *k = &sl_kinds[op->kind];

		if (op->n_in < k->min_in || op->n_in > k->max_in) {
			snprintf(why, sizeof why, "%d..%d", k->min_in, k->max_in);
			if (k->min_in == k->max_in)
				snprintf(why, sizeof why, "%d", k->min_in);
			return op_error(g, op, file, err,
			    _("operator '%s' needs %s inputs"), why);
		}
		for (int i = 0; i < op->n_in + op->n_out; i++)
			if (g->tensors[sl_op_slot_tensor(op, i)].rank < 1)
				return op_error(g, op, file, err,
				    _("operator '%s' uses '%s', a scalar; operators take tensors of 1 to 4 dimensions"),
				    g->tensors[sl_op_slot_tensor(op, i)].name);
		if (op->n_out != k->n_out)
			return op_error(g, op, file, err,
			    _("operator '%s' needs %s output"), "1");
		for (int i = 0; i < op->n_out; i++) {
			sl_tensor *t = &g->tensors[op->out[i]];
			if (t->role != SL_ROLE_ACTIVATION)
				return op_error(g, op, file, err,
				    _("operator '%s' writes '%s', which is not an activation"),
				    t->name);
			if (t->producer >= 0)
				return op_error(g, op, file, err,
				    _("operator '%s' writes '%s', which another operator writes too"),
				    t->name);
			t->producer = o;
		}
		if (k->check(g, op, why, sizeof why) != 0)
			return sl_error_set(err, SL_EINPUT, file, op->src_line,
			    op->src_col, _("operator '%s': %s"), op->name, why);
	}
	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		if (t->role == SL_ROLE_ACTIVATION && t->producer < 0) {
			bool used = false;
			for (int o = 0; o < g->n_ops && !used; o++)
				for (int j = 0; j < g->ops[o].n_in; j++)
					used |= g->ops[o].in[j] == i;
			if (used)
				return sl_error_set(err, SL_EINPUT, file, 0, 0,
				    _("activation '%s' is read but no operator writes it"),
				    t->name);
		}
	}
	/* Kahn's algorithm over consumer lists: operators left over sit on or
	 * after a cycle. */
	indeg = sl_xcalloc(g->n_ops, sizeof *indeg);
	queue = sl_xcalloc(g->n_ops, sizeof *queue);
	{
		int *first = sl_xmalloc(g->n_ops * sizeof *first);
		int n_use = 0, *next, *user;

		for (int o = 0; o < g->n_ops; o++)
			n_use += g->ops[o].n_in;
		next = sl_xmalloc((n_use + 1) * sizeof *next);
		user = sl_xmalloc((n_use + 1) * sizeof *user);
		for (int o = 0; o < g->n_ops; o++)
			first[o] = -1;
		n_use = 0;
		for (int o = 0; o < g->n_ops; o++)
			for (int j = 0; j < g->ops[o].n_in; j++) {
				int p = g->tensors[g->ops[o].in[j]].producer;
				if (p < 0)
					continue;
				indeg[o]++;
				user[n_use] = o;
				next[n_use] = first[p];
				first[p] = n_use++;
			}
		for (int o = 0; o < g->n_ops; o++)
			if (indeg[o] == 0)
				queue[tail++] = o;
		while (head < tail) {
			int u = queue[head++];
			for (int e = first[u]; e >= 0; e = next[e])
				if (--indeg[user[e]] == 0)
					queue[tail++] = user[e];
		}
		free(first);
		free(next);
		free(user);
	}
	if (tail < g->n_ops) {
		/* Walk back through unfinished producers until one repeats: that
		 * operator is on the cycle, and so is the tensor that led to it. */
		int o = 0, t = -1;
		char *seen = sl_xcalloc(g->n_ops, 1);

		while (indeg[o] == 0)
			o++;
		while (!seen[o]) {
			seen[o] = 1;
			for (int j = 0; j < g->ops[o].n_in; j++) {
				int p = g->tensors[g->ops[o].in[j]].producer;
				if (p >= 0 && indeg[p] > 0) {
					o = p;
					break;
				}
			}
		}
		free(seen);
		/* o is on the cycle; so is the input the walk took from it */
		for (int j = 0; j < g->ops[o].n_in && t < 0; j++) {
			int p = g->tensors[g->ops[o].in[j]].producer;
			if (p >= 0 && indeg[p] > 0)
				t = g->ops[o].in[j];
		}
		rc = op_error(g, &g->ops[o], file, err,
		    _("operator '%s' is part of a cycle: it reads '%s', which depends on its own output"),
		    g->tensors[t].name);
	}
	free(indeg);
	free(queue);
	return rc;
}
