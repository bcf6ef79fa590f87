/*
 * kinds.c: the operator kind table.  One row per kind: how many tensors it
 * takes, how its shapes must relate, its loop dimensions and their roles
 * (the einsum view that strategy enumeration and the cost model share),
 * what it keeps for backward (Korthikanti et al. 2022, "Reducing activation
 * recomputation in large transformer models", section 4), the attributes a
 * model file gives it, the kernels the GPU runner launches for it, and how
 * Megatron-LM splits it.  A new kind is one row here (and an operator in
 * tests/data/all_kinds.json).
 */
#include "internal.h"

#include <stddef.h>
#include <stdio.h>

static const sl_tensor *
T(const sl_graph *g, int idx)
{
	return &g->tensors[idx];
}

static int
fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

static void
bind_reset(sl_binding *b)
{
	memset(b, 0, sizeof *b);
	memset(b->map, -1, sizeof b->map);
}

static int
bind_loop(sl_binding *b, int64_t size, bool split, sl_loop_role role)
{
	int i = b->n_loop++;

	b->size[i] = size;
	b->splittable[i] = split;
	b->role[i] = role;
	return i;
}

/* Roles of the leading (batch-like) dimensions of a tensor of this rank. */
static sl_loop_role
lead_role(int rank_lead, int i)
{
	static const sl_loop_role r2[] = { SL_LOOP_DP, SL_LOOP_SEQ };
	static const sl_loop_role r3[] = { SL_LOOP_DP, SL_LOOP_HEAD, SL_LOOP_SEQ };

	if (rank_lead <= 2)
		return r2[i];
	if (rank_lead == 3)
		return r3[i];
	return i == 0 ? SL_LOOP_DP : SL_LOOP_BATCH;
}

/* Elementwise roles for all dimensions of a tensor of rank r. */
static sl_loop_role
elem_role(int r, int i)
{
	if (i == r - 1 && r >= 2)
		return SL_LOOP_COL;
	return lead_role(r - 1, i);
}

static bool
same_shape(const sl_tensor *a, const sl_tensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

static void
shape_str(const sl_tensor *t, char *buf, size_t len)
{
	size_t o = 0;

	o += snprintf(buf + o, len - o, "[");
	for (int i = 0; i < t->rank && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? ", " : "",
		    (long long)t->dims[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

/* ---------------------------------------------------------------- embedding */

static int
check_embedding(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *tok = T(g, op->in[0]), *tab = T(g, op->in[1]);
	const sl_tensor *y = T(g, op->out[0]);

	if (tok->rank != 2)
		return fail(why, len, _("embedding: tokens '%s' must be [batch, seq]"), tok->name);
	if (tab->rank != 2)
		return fail(why, len, _("embedding: table '%s' must be [vocab, hidden]"), tab->name);
	if (y->rank != 3 || y->dims[0] != tok->dims[0] || y->dims[1] != tok->dims[1] ||
	    y->dims[2] != tab->dims[1])
		return fail(why, len, _("embedding: output '%s' must be [%lld, %lld, %lld]"),
		    y->name, (long long)tok->dims[0], (long long)tok->dims[1],
		    (long long)tab->dims[1]);
	if (op->n_in == 3) {
		const sl_tensor *pos = T(g, op->in[2]);
		if (pos->rank != 2 || pos->dims[0] != tok->dims[1] ||
		    pos->dims[1] != tab->dims[1])
			return fail(why, len,
			    _("embedding: position table '%s' must be [%lld, %lld]"),
			    pos->name, (long long)tok->dims[1], (long long)tab->dims[1]);
	}
	return 0;
}

static void
bind_embedding(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *tok = T(g, op->in[0]), *tab = T(g, op->in[1]);
	int lb, ls, lv, lh;

	bind_reset(b);
	lb = bind_loop(b, tok->dims[0], true, SL_LOOP_DP);
	ls = bind_loop(b, tok->dims[1], true, SL_LOOP_SEQ);
	lv = bind_loop(b, tab->dims[0], true, SL_LOOP_VOCAB);
	lh = bind_loop(b, tab->dims[1], true, SL_LOOP_COL);
	b->map[0][0] = lb, b->map[0][1] = ls;
	b->map[1][0] = lv, b->map[1][1] = lh;
	if (op->n_in == 3)
		b->map[2][0] = ls, b->map[2][1] = lh;
	b->map[op->n_in][0] = lb, b->map[op->n_in][1] = ls, b->map[op->n_in][2] = lh;
}

/* ------------------------------------------------------------------- matmul */

static int
check_matmul(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *w = T(g, op->in[1]), *y = T(g, op->out[0]);
	int64_t k, n;
	char sx[96], sw[96];

	if (x->rank < 1 || w->rank != 2)
		return fail(why, len, _("matmul: weight '%s' must have 2 dimensions"), w->name);
	k = op->transpose_w ? w->dims[1] : w->dims[0];
	n = op->transpose_w ? w->dims[0] : w->dims[1];
	if (x->dims[x->rank - 1] != k) {
		shape_str(x, sx, sizeof sx);
		shape_str(w, sw, sizeof sw);
		return fail(why, len,
		    _("matmul: inner dimensions differ: input '%s' %s, weight '%s' %s%s"),
		    x->name, sx, w->name, sw, op->transpose_w ? " (transposed)" : "");
	}
	if (op->n_in == 3) {
		const sl_tensor *bias = T(g, op->in[2]);
		if (bias->rank != 1 || bias->dims[0] != n)
			return fail(why, len, _("matmul: bias '%s' must be [%lld]"),
			    bias->name, (long long)n);
	}
	if (y->rank != x->rank || y->dims[y->rank - 1] != n)
		goto bad_out;
	for (int i = 0; i < x->rank - 1; i++)
		if (y->dims[i] != x->dims[i])
			goto bad_out;
	return 0;
bad_out:
	shape_str(y, sx, sizeof sx);
	return fail(why, len,
	    _("matmul: output '%s' %s must keep the input's leading dimensions and end in %lld"),
	    y->name, sx, (long long)n);
}

static void
bind_matmul(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]), *w = T(g, op->in[1]);
	int lead = x->rank - 1, lk, ln, l[SL_MAX_RANK];

	bind_reset(b);
	for (int i = 0; i < lead; i++)
		l[i] = bind_loop(b, x->dims[i], true, lead_role(lead, i));
	lk = bind_loop(b, x->dims[lead], true, SL_LOOP_ROW);
	ln = bind_loop(b, op->transpose_w ? w->dims[0] : w->dims[1], true, SL_LOOP_COL);
	for (int i = 0; i < lead; i++)
		b->map[0][i] = l[i], b->map[op->n_in][i] = l[i];
	b->map[0][lead] = lk;
	b->map[1][0] = op->transpose_w ? ln : lk;
	b->map[1][1] = op->transpose_w ? lk : ln;
	if (op->n_in == 3)
		b->map[2][0] = ln;
	b->map[op->n_in][lead] = ln;
}

/* ---------------------------------------------------------------------- bmm */

static int
check_bmm(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *a = T(g, op->in[0]), *bb = T(g, op->in[1]), *y = T(g, op->out[0]);
	int r = a->rank;

	if (r < 2 || bb->rank != r || y->rank != r)
		return fail(why, len, _("bmm: '%s', '%s' and '%s' must have the same rank >= 2"),
		    a->name, bb->name, y->name);
	for (int i = 0; i < r - 2; i++)
		if (a->dims[i] != bb->dims[i] || y->dims[i] != a->dims[i])
			return fail(why, len, _("bmm: batch dimension %d differs"), i);
	if (a->dims[r - 1] != bb->dims[r - 2])
		return fail(why, len, _("bmm: inner dimensions differ (%lld vs %lld)"),
		    (long long)a->dims[r - 1], (long long)bb->dims[r - 2]);
	if (y->dims[r - 2] != a->dims[r - 2] || y->dims[r - 1] != bb->dims[r - 1])
		return fail(why, len, _("bmm: output '%s' must be [..., %lld, %lld]"),
		    y->name, (long long)a->dims[r - 2], (long long)bb->dims[r - 1]);
	return 0;
}

static void
bind_bmm(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *a = T(g, op->in[0]), *bb = T(g, op->in[1]);
	int r = a->rank, l[SL_MAX_RANK], lm, lk, ln;

	bind_reset(b);
	for (int i = 0; i < r - 2; i++)
		l[i] = bind_loop(b, a->dims[i], true, i == 0 ? SL_LOOP_DP : SL_LOOP_HEAD);
	lm = bind_loop(b, a->dims[r - 2], true, SL_LOOP_SEQ);
	lk = bind_loop(b, a->dims[r - 1], true, SL_LOOP_ROW);
	ln = bind_loop(b, bb->dims[r - 1], true, SL_LOOP_COL);
	for (int i = 0; i < r - 2; i++)
		b->map[0][i] = b->map[1][i] = b->map[2][i] = l[i];
	b->map[0][r - 2] = lm, b->map[0][r - 1] = lk;
	b->map[1][r - 2] = lk, b->map[1][r - 1] = ln;
	b->map[2][r - 2] = lm, b->map[2][r - 1] = ln;
}

/* -------------------------------------------------------------------- norms */

static int
check_norm(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);
	int64_t h = x->dims[x->rank - 1];

	if (!same_shape(x, y))
		return fail(why, len, _("%s: output '%s' must have the input's shape"),
		    sl_op_kind_name(op->kind), y->name);
	for (int i = 1; i < op->n_in; i++) {
		const sl_tensor *p = T(g, op->in[i]);
		if (p->rank != 1 || p->dims[0] != h)
			return fail(why, len, _("%s: '%s' must be [%lld]"),
			    sl_op_kind_name(op->kind), p->name, (long long)h);
	}
	return 0;
}

/* Leading dims splittable, last not (norms, softmax). */
static void
bind_lastfixed(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]);
	int r = x->rank, l[SL_MAX_RANK];

	bind_reset(b);
	for (int i = 0; i < r - 1; i++)
		l[i] = bind_loop(b, x->dims[i], true, lead_role(r - 1, i));
	l[r - 1] = bind_loop(b, x->dims[r - 1], false, SL_LOOP_HIDDEN);
	for (int i = 0; i < r; i++)
		b->map[0][i] = b->map[op->n_in][i] = l[i];
	for (int i = 1; i < op->n_in; i++)
		b->map[i][0] = l[r - 1];
}

/*
 * A norm's statistics, fp32 whatever the input's type, one per normalised
 * row beside its input: LayerNorm its mean and reciprocal deviation
 * (aten/src/ATen/native/cuda/layer_norm_kernel.cu, layer_norm_cuda: mean
 * and rstd in the accumulate type; tools/autograd/derivatives.yaml,
 * native_layer_norm: result1, result2), RMSNorm its reciprocal root mean
 * square (rms_norm on CUDA is _fused_rms_norm, aten/src/ATen/native/
 * layer_norm.cpp, rms_norm_symint; derivatives.yaml keeps result1).  The
 * rows are every loop but the last (bind_lastfixed).
 */
static int64_t
extra_norm(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *loc)
{
	int64_t rows = 1;

	(void)sp;
	for (int l = 0; l < b->n_loop - 1; l++)
		rows = sl_mul_sat(rows, loc[l]);
	return sl_mul_sat(rows, op->kind == SL_OP_LAYERNORM ? 8 : 4);
}

/* -------------------------------------------------------------- elementwise */

static int
check_elementwise(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *y = T(g, op->out[0]);
	char sa[96], sb[96];

	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *x = T(g, op->in[i]);
		if (!same_shape(x, y)) {
			shape_str(x, sa, sizeof sa);
			shape_str(y, sb, sizeof sb);
			return fail(why, len, _("%s: input '%s' %s and output '%s' %s differ in shape"),
			    sl_op_kind_name(op->kind), x->name, sa, y->name, sb);
		}
	}
	return 0;
}

static void
bind_elementwise(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *y = T(g, op->out[0]);
	int r = y->rank, l[SL_MAX_RANK];

	bind_reset(b);
	for (int i = 0; i < r; i++)
		l[i] = bind_loop(b, y->dims[i], true, elem_role(r, i));
	for (int s = 0; s < op->n_in + op->n_out; s++)
		for (int i = 0; i < r; i++)
			b->map[s][i] = l[i];
}

/*
 * A product whose second input may hold one value per row (last dimension
 * 1), broadcast along the row: a gate's scale of its branch (Qwen2-MoE's
 * sigmoid gate on the shared experts).
 */
static bool
mul_broadcast(const sl_graph *g, const sl_op *op)
{
	const sl_tensor *a = T(g, op->in[0]), *c = T(g, op->in[1]);

	return a->rank == c->rank && a->rank >= 2 && c->dims[c->rank - 1] == 1 &&
	    a->dims[a->rank - 1] != 1;
}

static int
check_mul(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *a = T(g, op->in[0]), *c = T(g, op->in[1]), *y = T(g, op->out[0]);
	char sa[96], sb[96];

	if (!mul_broadcast(g, op))
		return check_elementwise(g, op, why, len);
	for (int i = 0; i < a->rank - 1; i++)
		if (c->dims[i] != a->dims[i]) {
			shape_str(a, sa, sizeof sa);
			shape_str(c, sb, sizeof sb);
			return fail(why, len, _("mul: '%s' %s and '%s' %s differ "
			    "beyond the broadcast last dimension"), a->name, sa,
			    c->name, sb);
		}
	if (!same_shape(a, y)) {
		shape_str(a, sa, sizeof sa);
		shape_str(y, sb, sizeof sb);
		return fail(why, len, _("mul: input '%s' %s and output '%s' %s differ "
		    "in shape"), a->name, sa, y->name, sb);
	}
	return 0;
}

static void
bind_mul(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	bind_elementwise(g, op, b);
	if (mul_broadcast(g, op))
		b->map[1][T(g, op->in[1])->rank - 1] = -1;
}

/* ------------------------------------------------------- reshape, transpose */

static int
check_reshape(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);

	if (sl_tensor_elems(x) != sl_tensor_elems(y))
		return fail(why, len, _("reshape: '%s' and '%s' hold different numbers of elements"),
		    x->name, y->name);
	return 0;
}

static void
bind_reshape(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);
	int i;

	bind_reset(b);
	for (i = 0; i < x->rank && i < y->rank && x->dims[i] == y->dims[i]; i++) {
		static const sl_loop_role rr[] = { SL_LOOP_DP, SL_LOOP_SEQ,
		    SL_LOOP_D2, SL_LOOP_D3 };
		int l = bind_loop(b, x->dims[i], true, rr[i]);
		b->map[0][i] = b->map[1][i] = l;
	}
}

static int
check_transpose(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);
	bool seen[SL_MAX_RANK] = { false };

	if (x->rank != y->rank)
		return fail(why, len, _("transpose: '%s' and '%s' differ in rank"), x->name, y->name);
	for (int i = 0; i < x->rank; i++) {
		int p = op->perm[i];
		if (p < 0 || p >= x->rank || seen[p])
			return fail(why, len, _("transpose: perm must be a permutation of 0..%d"),
			    x->rank - 1);
		seen[p] = true;
		if (y->dims[i] != x->dims[p])
			return fail(why, len, _("transpose: output dimension %d must be %lld"),
			    i, (long long)x->dims[p]);
	}
	return 0;
}

static void
bind_transpose(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]);

	bind_reset(b);
	for (int i = 0; i < x->rank; i++) {
		bind_loop(b, x->dims[i], true, elem_role(x->rank, i));
		b->map[0][i] = i;
	}
	for (int i = 0; i < x->rank; i++)
		b->map[1][i] = op->perm[i];
}

/* ---------------------------------------------------------------- attention */

/*
 * The two forms of attention: a fused qkv[b,s,(q+2kv)d] (every head of one
 * width d), or multi-head latent attention (DeepSeek-V2) after its
 * up-projections: q[b,s,H(dn+dr)], the keys' and values' per-head parts
 * kv[b,s,H(dn+dv)] and one rotary key k_rope[b,s,dr] every head shares.
 * Parameters follow the activations: the query and key norms' scales [d]
 * (qk_norm), then a logit per head (sinks).
 */
void
sl_attention_dims(const sl_graph *g, const sl_op *op, sl_attn_dims *d)
{
	const sl_tensor *y = T(g, op->out[0]);
	int64_t q = op->heads > 0 ? op->heads : 1;

	memset(d, 0, sizeof *d);
	d->heads = q;
	d->kv_heads = op->kv_heads > 0 ? op->kv_heads : q;
	d->n_act = op->n_in - (op->qk_norm ? 2 : 0) - (op->sinks ? 1 : 0);
	d->dv = y->rank == 3 ? y->dims[2] / q : 0;
	if (d->n_act == 3) {
		const sl_tensor *qt = T(g, op->in[0]), *kr = T(g, op->in[2]);
		d->dqk = qt->rank == 3 ? qt->dims[2] / q : 0;
		d->rope = kr->rank == 3 ? kr->dims[2] : 0;
	} else {
		d->dqk = d->dv;
	}
	d->param = d->n_act;
}

static int
check_attention(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);
	int64_t q = op->heads, kv = op->kv_heads ? op->kv_heads : op->heads, d;
	sl_attn_dims ad;

	if (q <= 0)
		return fail(why, len, _("attention: attribute heads must be a positive integer"));
	if (kv <= 0 || q % kv != 0)
		return fail(why, len, _("attention: kv_heads must divide heads"));
	sl_attention_dims(g, op, &ad);
	if (ad.n_act != 1 && ad.n_act != 3)
		return fail(why, len, _("attention: expected qkv, or q, kv and k_rope "
		    "(latent attention), then %s%s%s"), op->qk_norm ?
		    _("the query and key norm scales") : "", op->qk_norm &&
		    op->sinks ? _(" and ") : "", op->sinks ? _("the sinks") :
		    op->qk_norm ? "" : _("nothing"));
	for (int i = 0; i < ad.n_act; i++) {
		const sl_tensor *a = T(g, op->in[i]);
		if (a->role == SL_ROLE_PARAMETER || a->rank != 3 ||
		    a->dims[0] != y->dims[0] || a->dims[1] != y->dims[1])
			return fail(why, len, _("attention: input '%s' must be an "
			    "activation [batch, seq, features]"), a->name);
	}
	if (x->rank != 3 || y->rank != 3 || x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1])
		return fail(why, len, _("attention: input and output must be [batch, seq, features]"));
	if (y->dims[2] % q != 0)
		return fail(why, len, _("attention: output features %lld not divisible by %lld heads"),
		    (long long)y->dims[2], (long long)q);
	d = y->dims[2] / q;
	if (ad.n_act == 1 && x->dims[2] != (q + 2 * kv) * d)
		return fail(why, len,
		    _("attention: input '%s' must have (heads + 2 kv_heads) x head_dim = %lld features"),
		    x->name, (long long)((q + 2 * kv) * d));
	if (ad.n_act == 3) {
		const sl_tensor *kvt = T(g, op->in[1]);
		int64_t dn = ad.dqk - ad.rope;

		if (kv != q)
			return fail(why, len, _("attention: latent attention has as "
			    "many key/value heads as query heads"));
		if (x->dims[2] % q != 0 || ad.rope < 1 || dn < 1)
			return fail(why, len, _("attention: query '%s' must be heads x "
			    "(no-rope + rope dims), more than the rotary key's %lld"),
			    x->name, (long long)ad.rope);
		if (kvt->dims[2] != q * (dn + d))
			return fail(why, len, _("attention: keys and values '%s' must "
			    "have heads x (%lld + %lld) = %lld features"), kvt->name,
			    (long long)dn, (long long)d, (long long)(q * (dn + d)));
		if (op->qk_norm)
			return fail(why, len, _("attention: qk_norm does not apply to "
			    "latent attention"));
	}
	for (int i = ad.param; i < op->n_in; i++) {
		const sl_tensor *p = T(g, op->in[i]);
		bool sink = op->sinks && i == op->n_in - 1;
		int64_t want = sink ? q : ad.dqk;

		if (p->role != SL_ROLE_PARAMETER || p->rank != 1 || p->dims[0] != want)
			return fail(why, len, _("attention: %s '%s' must be a parameter "
			    "[%lld]"), sink ? _("sinks") : _("norm scale"), p->name,
			    (long long)want);
	}
	if (op->window < 0)
		return fail(why, len, _("attention: window must not be negative"));
	return 0;
}

static void
bind_attention(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]);
	sl_attn_dims ad;
	int lb, ls, lh;

	sl_attention_dims(g, op, &ad);
	bind_reset(b);
	lb = bind_loop(b, x->dims[0], true, SL_LOOP_DP);
	/* the sequence splits too: context parallelism, K and V passed round
	 * a ring (space.c sl_node_colls) */
	ls = bind_loop(b, x->dims[1], true, SL_LOOP_SEQ);
	lh = bind_loop(b, op->heads, true, SL_LOOP_HEAD);
	for (int i = 0; i < ad.n_act; i++) {
		b->map[i][0] = lb;
		b->map[i][1] = ls;
		/* the rotary key of latent attention is one for all heads */
		b->map[i][2] = i == 2 ? -1 : lh;
	}
	if (op->sinks)
		b->map[op->n_in - 1][0] = lh;
	b->map[op->n_in][0] = lb;
	b->map[op->n_in][1] = ls;
	b->map[op->n_in][2] = lh;
}

/*
 * Bytes per (batch x head x s^2) score element that naive attention keeps:
 * the softmax output, and with dropout its 1-byte mask and the dropped
 * copy that P.V reads.  Under autocast the softmax runs in fp32 and P.V
 * keeps a bf16 cast of it.  (Korthikanti et al. 2022 count 5 for bf16.)
 */
int
sl_attention_score_bytes(const sl_space *sp, const sl_op *op)
{
	const sl_recipe *r = &sp->opts.recipe;
	bool drop = op->p > 0;

	switch (r->precision) {
	case SL_PREC_AMP:
		return drop ? 4 + 1 + 2 : 4 + 2;
	case SL_PREC_FP32:
		return drop ? 4 + 1 + 4 : 4;
	default:
		return drop ? 2 + 1 + 2 : 2;
	}
}

/*
 * What attention keeps beyond its inputs, on local loop sizes loc (b,
 * seq, heads): naive the s^2 scores (unless recomputed), flash the fp32
 * log-sum-exp per row.  A sliding window changes neither: the fused
 * kernel keeps one log-sum-exp per row, and eager attention materialises
 * the masked s x s scores.  Its output is kept by its consumer (the
 * projection).  With qk_norm it keeps the normalised queries and keys
 * beside its input (the norms keep the input); latent attention keeps the
 * keys it assembles, each head's no-rope part with the shared rotary key
 * (Megatron-LM megatron/core/transformer/multi_latent_attention.py), for
 * the fused kernel that reads them.  Grouped-query attention in
 * torchtitan's models repeats each key and value head for the query heads
 * that share it before SDPA (torchtitan/models/llama3/model/model.py,
 * repeat_kv), and SDPA keeps the repeated copies: keys and values at the
 * query heads' count, beside the qkv projection's output they were cut
 * from (measured: a 1B LLaMA with 4 key/value heads of 16,
 * steps-h100.jsonl).  Megatron-LM's fused kernels, and SDPA called with
 * enable_gqa (transformers' sdpa_attention_forward where torch has it:
 * the llama-2-70b rows of recompute-llama-h200.jsonl), take the key/value
 * heads as they are.  Under torchtitan's selective recomputation (its
 * operator policy) the repetition is run again in backward, a transient
 * (memory.c, step_remat_item).
 */
int64_t
sl_attention_saved(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *loc)
{
	int64_t s = b->size[1], rows = sl_mul_sat(loc[0], loc[2]), r, tok;
	sl_attn_dims ad;

	sl_attention_dims(sp->g, op, &ad);
	if (sp->opts.recipe.attention == SL_ATTN_FLASH)
		r = sl_mul_sat(sl_mul_sat(4, rows), loc[1]);
	else if (sl_layer_recompute_of(sp, op) == SL_RECOMP_SELECTIVE)
		r = 0;
	else
		r = sl_mul_sat(sl_mul_sat(sl_attention_score_bytes(sp, op), rows),
		    sl_mul_sat(loc[1], s));
	/* rows of one head: batch x local sequence, at the activation width */
	tok = sl_mul_sat(sl_mul_sat(loc[0], loc[1]),
	    sl_recipe_act_bytes(&sp->opts.recipe));
	if (op->qk_norm)
		r = sl_add_sat(r, sl_mul_sat(tok, sl_mul_sat(loc[2] + loc[2] *
		    ad.kv_heads / ad.heads, ad.dqk)));
	if (ad.n_act == 3)
		r = sl_add_sat(r, sl_mul_sat(tok, sl_mul_sat(loc[2], ad.dqk)));
	else if (sp->opts.recipe.attention == SL_ATTN_FLASH &&
	    ad.kv_heads < ad.heads &&
	    sp->opts.recipe.framework == SL_FW_TORCHTITAN)
		r = sl_add_sat(r, sl_mul_sat(tok, sl_mul_sat(loc[2], ad.dqk + ad.dv)));
	return r;
}

/* What attention keeps beyond qkv depends on the recipe (above). */
static int64_t
extra_attention(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *local)
{
	return sl_attention_saved(sp, op, b, local);
}

/* ------------------------------------------------------------ cross-entropy */

static int
check_xent(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *lab = T(g, op->in[1]), *y = T(g, op->out[0]);

	if (x->rank != 3)
		return fail(why, len, _("cross_entropy: logits '%s' must be [batch, seq, vocab]"), x->name);
	if (lab->rank != 2 || lab->dims[0] != x->dims[0] || lab->dims[1] != x->dims[1])
		return fail(why, len, _("cross_entropy: labels '%s' must be [%lld, %lld]"),
		    lab->name, (long long)x->dims[0], (long long)x->dims[1]);
	if (y->rank != 2 || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
		return fail(why, len, _("cross_entropy: loss '%s' must be [%lld, %lld]"),
		    y->name, (long long)x->dims[0], (long long)x->dims[1]);
	return 0;
}

static void
bind_xent(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]);
	int lb, ls, lv;

	bind_reset(b);
	lb = bind_loop(b, x->dims[0], true, SL_LOOP_DP);
	ls = bind_loop(b, x->dims[1], true, SL_LOOP_SEQ);
	lv = bind_loop(b, x->dims[2], true, SL_LOOP_VOCAB);
	b->map[0][0] = lb, b->map[0][1] = ls, b->map[0][2] = lv;
	b->map[1][0] = lb, b->map[1][1] = ls;
	b->map[2][0] = lb, b->map[2][1] = ls;
}

/* ------------------------------------------------------ mixture of experts */

/*
 * A mixture-of-experts MLP is five operators (doc/cost-model.md, "Mixture
 * of experts"): the gate (a matmul to logits over the E experts), the
 * router (score function, top-k, auxiliary loss), dispatch (tokens
 * permuted into expert order: [b, E, c, h], c tokens of each sample per
 * expert), the experts (grouped matmuls) and combine (un-permuted and
 * summed with the router's weights).  The expert dimension is a loop
 * dimension of dispatch, experts and combine: splitting it is expert
 * parallelism, and the resharding of [b, E, c, h] from a batch split to an
 * expert split is the all-to-all of the token dispatcher.  The router's
 * weights go to combine; dispatch knows top-k as an attribute.
 */

/* Shape rules shared by dispatch and combine: tokens [b,s,h] on one side,
 * [b,E,c,h] on the other; k (top-k) at most E. */
static int
check_routed(const sl_graph *g, const sl_op *op, const sl_tensor *tok,
    const sl_tensor *ex, int64_t k, char *why, size_t len)
{
	const char *kn = sl_op_kind_name(op->kind);

	if (tok->rank != 3)
		return fail(why, len, _("%s: tokens '%s' must be [batch, seq, hidden]"),
		    kn, tok->name);
	if (ex->rank != 4 || ex->dims[0] != tok->dims[0] || ex->dims[3] != tok->dims[2])
		return fail(why, len, _("%s: '%s' must be [%lld, experts, capacity, %lld]"),
		    kn, ex->name, (long long)tok->dims[0], (long long)tok->dims[2]);
	if (k < 1 || k > ex->dims[1])
		return fail(why, len, _("%s: top-k %lld must be between 1 and the "
		    "expert count %lld"), kn, (long long)k, (long long)ex->dims[1]);
	return 0;
}

/* Loops of dispatch and combine: b, s (the capacity dimension of the
 * expert side), E, h (not split: a token moves whole); combine's weights
 * add k (not split). */
static void
bind_routed(sl_binding *b, const sl_tensor *tok, const sl_tensor *ex,
    const sl_tensor *w, int tok_slot, int ex_slot, int w_slot)
{
	int lb, ls, le, lh, lk;

	bind_reset(b);
	lb = bind_loop(b, tok->dims[0], true, SL_LOOP_DP);
	ls = bind_loop(b, tok->dims[1], true, SL_LOOP_SEQ);
	le = bind_loop(b, ex->dims[1], true, SL_LOOP_EXPERT);
	lh = bind_loop(b, tok->dims[2], false, SL_LOOP_HIDDEN);
	b->map[tok_slot][0] = lb, b->map[tok_slot][1] = ls, b->map[tok_slot][2] = lh;
	b->map[ex_slot][0] = lb, b->map[ex_slot][1] = le;
	b->map[ex_slot][2] = ls, b->map[ex_slot][3] = lh;
	if (w != NULL) {
		lk = bind_loop(b, w->dims[2], false, SL_LOOP_NONE);
		b->map[w_slot][0] = lb, b->map[w_slot][1] = ls, b->map[w_slot][2] = lk;
	}
}

static int
check_router(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);

	if (x->rank != 3 || y->rank != 3 || y->dims[0] != x->dims[0] ||
	    y->dims[1] != x->dims[1])
		return fail(why, len, _("router: logits '%s' [batch, seq, experts] and "
		    "weights '%s' [batch, seq, top-k] must agree"), x->name, y->name);
	if (y->dims[2] > x->dims[2])
		return fail(why, len, _("router: top-k %lld is above the expert count %lld"),
		    (long long)y->dims[2], (long long)x->dims[2]);
	if (op->n_in == 2) {
		const sl_tensor *bias = T(g, op->in[1]);
		if (bias->rank != 1 || bias->dims[0] != x->dims[2])
			return fail(why, len, _("router: selection bias '%s' must be [%lld]"),
			    bias->name, (long long)x->dims[2]);
	}
	return 0;
}

static void
bind_router(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]), *y = T(g, op->out[0]);
	int lb, ls, le, lk;

	bind_reset(b);
	lb = bind_loop(b, x->dims[0], true, SL_LOOP_DP);
	ls = bind_loop(b, x->dims[1], true, SL_LOOP_SEQ);
	/* top-k and the softmax read every expert's score */
	le = bind_loop(b, x->dims[2], false, SL_LOOP_HIDDEN);
	lk = bind_loop(b, y->dims[2], false, SL_LOOP_NONE);
	b->map[0][0] = lb, b->map[0][1] = ls, b->map[0][2] = le;
	if (op->n_in == 2)
		b->map[1][0] = le;
	b->map[op->n_in][0] = lb, b->map[op->n_in][1] = ls, b->map[op->n_in][2] = lk;
}

/*
 * The router keeps the fp32 scores of every expert for the backward of its
 * score function, which the auxiliary loss reads too (Megatron-LM
 * megatron/core/transformer/moe/moe_utils.py, topk_routing_with_score_function
 * and switch_load_balancing_loss_func: scores in fp32), and the int64
 * indices of the top k for the backward of the selection
 * (tools/autograd/derivatives.yaml: topk keeps its indices, as gather and
 * scatter keep their index).
 */
static int64_t
extra_router(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *loc)
{
	int64_t tokens = sl_mul_sat(loc[0], loc[1]);

	(void)sp, (void)op;
	return sl_add_sat(sl_mul_sat(sl_mul_sat(4, tokens), b->size[2]),
	    sl_mul_sat(sl_mul_sat(8, tokens), b->size[3]));
}

/*
 * Dispatch reads the tokens alone: which experts each token goes to is
 * the router's decision, an index per routed token that costs what it
 * keeps (below) and no communication worth a term.  Reading the router's
 * output too would close a cycle through combine and the shared experts
 * that makes a layer's strategy graph treewidth 3 (general elimination
 * instead of the folded series-parallel DP).
 */
static int
check_dispatch(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	return check_routed(g, op, T(g, op->in[0]), T(g, op->out[0]), op->topk,
	    why, len);
}

static void
bind_dispatch(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	bind_routed(b, T(g, op->in[0]), T(g, op->out[0]), NULL, 0, 1, -1);
}

/* The permutation's map: an int64 index per routed token, for the
 * un-permutation in backward (Megatron-LM moe_utils.py permute: the sorted
 * indices, positions from torch.arange, that tokens.index_select keeps;
 * unpermute's scatter_add_ keeps a view of the same indices). */
static int64_t
extra_dispatch(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *loc)
{
	(void)sp, (void)b;
	return sl_mul_sat(sl_mul_sat(8, loc[0]), sl_mul_sat(loc[1], op->topk));
}

static int
check_combine(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *y = T(g, op->out[0]), *w = T(g, op->in[1]);
	int rc;

	if (w->rank != 3 || w->dims[0] != y->dims[0] || w->dims[1] != y->dims[1])
		return fail(why, len, _("combine: routing weights '%s' must be "
		    "[%lld, %lld, top-k]"), w->name, (long long)y->dims[0],
		    (long long)y->dims[1]);
	rc = check_routed(g, op, y, T(g, op->in[0]), w->dims[2], why, len);
	return rc;
}

static void
bind_combine(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	bind_routed(b, T(g, op->out[0]), T(g, op->in[0]), T(g, op->in[1]),
	    op->n_in, 0, 1);
}

/*
 * Experts: x[b,E,c,h], w1[E,h,f'], w2[E,f,h] (, b1[E,f'], b2[E,h]) ->
 * y[b,E,c,h] with f' = 2f when gated (SwiGLU's gate and up side by side).
 * Loops b, E, c, h (not split: fc1 contracts it, fc2 writes it) and f:
 * splitting f is expert tensor parallelism (fc1 column-, fc2
 * row-parallel, y a partial sum).
 */
static int
check_experts(const sl_graph *g, const sl_op *op, char *why, size_t len)
{
	const sl_tensor *x = T(g, op->in[0]), *w1 = T(g, op->in[1]);
	const sl_tensor *w2 = T(g, op->in[2]), *y = T(g, op->out[0]);
	int64_t e, h, f, f1;

	if (x->rank != 4)
		return fail(why, len, _("experts: input '%s' must be [batch, experts, "
		    "capacity, hidden]"), x->name);
	e = x->dims[1], h = x->dims[3];
	if (w2->rank != 3 || w2->dims[0] != e || w2->dims[2] != h)
		return fail(why, len, _("experts: weight '%s' must be [%lld, ffn, %lld]"),
		    w2->name, (long long)e, (long long)h);
	f = w2->dims[1];
	f1 = op->gated ? 2 * f : f;
	if (w1->rank != 3 || w1->dims[0] != e || w1->dims[1] != h || w1->dims[2] != f1)
		return fail(why, len, _("experts: weight '%s' must be [%lld, %lld, %lld]%s"),
		    w1->name, (long long)e, (long long)h, (long long)f1,
		    op->gated ? _(" (gated: gate and up side by side)") : "");
	if (!same_shape(x, y))
		return fail(why, len, _("experts: output '%s' must have the input's shape"),
		    y->name);
	if (op->topk < 1 || op->topk > e)
		return fail(why, len, _("experts: top-k %d must be between 1 and the "
		    "expert count %lld"), op->topk, (long long)e);
	if (op->n_in >= 4) {
		const sl_tensor *b1 = T(g, op->in[3]);
		if (b1->rank != 2 || b1->dims[0] != e || b1->dims[1] != f1)
			return fail(why, len, _("experts: bias '%s' must be [%lld, %lld]"),
			    b1->name, (long long)e, (long long)f1);
	}
	if (op->n_in == 5) {
		const sl_tensor *b2 = T(g, op->in[4]);
		if (b2->rank != 2 || b2->dims[0] != e || b2->dims[1] != h)
			return fail(why, len, _("experts: bias '%s' must be [%lld, %lld]"),
			    b2->name, (long long)e, (long long)h);
	}
	if (op->n_in == 4)
		return fail(why, len, _("experts: give both biases or neither"));
	return 0;
}

static void
bind_experts(const sl_graph *g, const sl_op *op, sl_binding *b)
{
	const sl_tensor *x = T(g, op->in[0]), *w2 = T(g, op->in[2]);
	int lb, le, lc, lh, lf;

	bind_reset(b);
	lb = bind_loop(b, x->dims[0], true, SL_LOOP_DP);
	le = bind_loop(b, x->dims[1], true, SL_LOOP_EXPERT);
	lc = bind_loop(b, x->dims[2], true, SL_LOOP_SEQ);
	lh = bind_loop(b, x->dims[3], false, SL_LOOP_HIDDEN);
	lf = bind_loop(b, w2->dims[1], true, SL_LOOP_COL);
	b->map[0][0] = lb, b->map[0][1] = le, b->map[0][2] = lc, b->map[0][3] = lh;
	b->map[1][0] = le, b->map[1][1] = lh, b->map[1][2] = lf;
	b->map[2][0] = le, b->map[2][1] = lf, b->map[2][2] = lh;
	if (op->n_in == 5) {
		b->map[3][0] = le, b->map[3][1] = lf;
		b->map[4][0] = le, b->map[4][1] = lh;
	}
	b->map[op->n_in][0] = lb, b->map[op->n_in][1] = le;
	b->map[op->n_in][2] = lc, b->map[op->n_in][3] = lh;
}

/*
 * Beyond its input (kept as fc1's), an expert keeps fc1's output (f'
 * values per token, for the activation's backward) and the activation's
 * output (f, for fc2's weight gradient), at the activation width, for the
 * tokens it holds: Megatron-LM megatron/core/transformer/moe/experts.py,
 * the grouped MLP's linear_fc1, activation and linear_fc2.
 */
static int64_t
extra_experts(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *loc)
{
	int64_t tokens = sl_mul_sat(sl_mul_sat(loc[0], loc[1]), loc[2]);
	int64_t f = loc[4], per = sl_add_sat(op->gated ? 2 * f : f, f);
	const sl_tensor *x = &sp->g->tensors[op->in[0]];

	(void)b;
	return sl_mul_sat(sl_mul_sat(tokens, per), sl_max_int(sl_recipe_act_bytes(
	    &sp->opts.recipe), sl_dtype_size(x->dtype)));
}

/* -------------------------------------------------------------------- table */

/* An elementwise kind of nin inputs: one kernel forward, bwd backward */
#define ELEM(nm, nin, bwd, sm, ...) { .name = nm, .min_in = nin, .max_in = nin, \
	.n_out = 1, .check = check_elementwise, .bind = bind_elementwise, \
	.saved_in = { __VA_ARGS__ }, .elementwise = true, .summary = sm, \
	.kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_FOLLOW, .kernels = { 1, bwd } }

#define ATTR(nm, ty, fld, ...) { .name = nm, .type = ty, \
	.field = offsetof(sl_op, fld), __VA_ARGS__ }

const sl_kind_info sl_kinds[SL_OP_KIND_COUNT] = {
	[SL_OP_EMBEDDING] = { .name = "embedding", .min_in = 2, .max_in = 3, .n_out = 1,
	    .check = check_embedding, .bind = bind_embedding,
	    .summary = N_("token (and position) lookup: tokens[b,s], table[V,h] (, pos[s,h]) -> [b,s,h]"),
	    .kernel = SL_KERNEL_GATHER, .tp_rule = SL_TP_VOCAB,
	    .kernels = { 1, 4 } },
	[SL_OP_MATMUL] = { .name = "matmul", .min_in = 2, .max_in = 3, .n_out = 1,
	    .check = check_matmul, .bind = bind_matmul, .saved_in = { -1 },
	    .summary = N_("x[...,k] w[k,n] (+ bias[n]) -> [...,n]; keeps x"),
	    .attrs = { ATTR("transpose_w", SL_ATTR_BOOL, transpose_w) },
	    .kernel = SL_KERNEL_GEMM, .tp_rule = SL_TP_ROW_OR_COL,
	    .kernels = { 1, 2 } },
	[SL_OP_BMM] = { .name = "bmm", .min_in = 2, .max_in = 2, .n_out = 1,
	    .check = check_bmm, .bind = bind_bmm, .saved_in = { -1, -1 },
	    .summary = N_("batched a[...,m,k] b[...,k,n] -> [...,m,n]; keeps both"),
	    .kernel = SL_KERNEL_GEMM, .tp_rule = SL_TP_HEAD_OR_INPUT,
	    .kernels = { 1, 2 } },
	[SL_OP_LAYERNORM] = { .name = "layernorm", .min_in = 1, .max_in = 3, .n_out = 1,
	    .check = check_norm, .bind = bind_lastfixed, .saved_in = { -1 },
	    .extra_saved = extra_norm,
	    .summary = N_("normalises the last dimension; keeps its input"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_SEQ,
	    .kernels = { 1, 3 } },
	[SL_OP_RMSNORM] = { .name = "rmsnorm", .min_in = 1, .max_in = 2, .n_out = 1,
	    .check = check_norm, .bind = bind_lastfixed, .saved_in = { -1 },
	    .extra_saved = extra_norm,
	    .summary = N_("RMS-normalises the last dimension; keeps its input"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_SEQ,
	    .kernels = { 1, 3 } },
	[SL_OP_SOFTMAX] = { .name = "softmax", .min_in = 1, .max_in = 1, .n_out = 1,
	    .check = check_elementwise, .bind = bind_lastfixed, .saved_out = { -1 },
	    .summary = N_("softmax over the last dimension; keeps its output"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_HEAD_OR_INPUT,
	    .kernels = { 1, 1 } },
	[SL_OP_GELU] = ELEM("gelu", 1, 1, N_("elementwise; keeps its input"), -1),
	[SL_OP_SILU] = ELEM("silu", 1, 1, N_("elementwise; keeps its input"), -1),
	[SL_OP_RELU] = ELEM("relu", 1, 1, N_("elementwise; keeps its input"), -1),
	[SL_OP_MUL] = { .name = "mul", .min_in = 2, .max_in = 2, .n_out = 1,
	    .check = check_mul, .bind = bind_mul, .saved_in = { -1, -1 },
	    .elementwise = true,
	    .summary = N_("elementwise product (the second may be [...,1], broadcast); keeps both inputs"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_FOLLOW,
	    .kernels = { 1, 2 } },
	[SL_OP_ADD] = ELEM("add", 2, 1, N_("elementwise sum (residual); keeps nothing"), 0),
	[SL_OP_DROPOUT] = { .name = "dropout", .min_in = 1, .max_in = 1, .n_out = 1,
	    .check = check_elementwise, .bind = bind_elementwise, .saved_out = { 1 },
	    .elementwise = true,
	    .summary = N_("elementwise; keeps a 1-byte mask per element"),
	    .attrs = { ATTR("p", SL_ATTR_PROB, p, .absent = 0.1) },
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_FOLLOW,
	    .kernels = { 1, 1 } },
	[SL_OP_RESHAPE] = { .name = "reshape", .min_in = 1, .max_in = 1, .n_out = 1,
	    .check = check_reshape, .bind = bind_reshape,
	    .summary = N_("same elements, new shape; common leading dimensions may be split"),
	    .kernel = SL_KERNEL_VIEW, .tp_rule = SL_TP_FOLLOW,
	    .kernels = { 1, 1 } },
	[SL_OP_TRANSPOSE] = { .name = "transpose", .min_in = 1, .max_in = 1, .n_out = 1,
	    .check = check_transpose, .bind = bind_transpose,
	    .summary = N_("permutes dimensions (attribute perm)"),
	    .attrs = { ATTR("perm", SL_ATTR_PERM, perm, .required = true) },
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_FOLLOW,
	    .kernels = { 1, 1 } },
	[SL_OP_ATTENTION] = { .name = "attention", .min_in = 1, .max_in = 5, .n_out = 1,
	    .check = check_attention, .bind = bind_attention, .saved_in = { -1, -1, -1 },
	    .extra_saved = extra_attention,
	    .summary = N_("fused core attention qkv[b,s,(q+2kv)d] (or latent: q, kv, k_rope) -> [b,s,qd]; keeps its inputs, and the s^2 scores (naive) or the log-sum-exp (flash)"),
	    /* dropout on the attention probabilities; -1 until known */
	    .attrs = { ATTR("heads", SL_ATTR_COUNT_INT, heads, .required = true),
		ATTR("kv_heads", SL_ATTR_COUNT_INT, kv_heads, .divides = "heads"),
		ATTR("dropout", SL_ATTR_PROB, p, .absent = -1),
		ATTR("window", SL_ATTR_COUNT_INT, window),
		ATTR("qk_norm", SL_ATTR_BOOL, qk_norm),
		ATTR("sinks", SL_ATTR_BOOL, sinks) },
	    .kernel = SL_KERNEL_ATTENTION, .tp_rule = SL_TP_HEAD,
	    .kernels = { 1, 4 } },
	[SL_OP_CROSS_ENTROPY] = { .name = "cross_entropy", .min_in = 2, .max_in = 2, .n_out = 1,
	    .check = check_xent, .bind = bind_xent, .saved_in = { 4 },
	    .summary = N_("logits[b,s,V], labels[b,s] -> loss[b,s]; keeps fp32 softmax"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_VOCAB_OR_SEQ,
	    .kernels = { 3, 3 } },
	[SL_OP_SIGMOID] = { .name = "sigmoid", .min_in = 1, .max_in = 1, .n_out = 1,
	    .check = check_elementwise, .bind = bind_elementwise, .saved_out = { -1 },
	    .elementwise = true, .summary = N_("elementwise; keeps its output"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_FOLLOW,
	    .kernels = { 1, 1 } },
	/* score function, top-k, auxiliary loss; their backward */
	[SL_OP_ROUTER] = { .name = "router", .min_in = 1, .max_in = 2, .n_out = 1,
	    .check = check_router, .bind = bind_router, .extra_saved = extra_router,
	    .summary = N_("logits[b,s,E] (+ selection bias[E]) -> top-k weights[b,s,k]; score function, top-k, auxiliary loss; keeps fp32 scores"),
	    .kernel = SL_KERNEL_MEMORY, .tp_rule = SL_TP_ROUTER,
	    .kernels = { 3, 3 } },
	/* the permutation; its backward un-permutes the gradient */
	[SL_OP_DISPATCH] = { .name = "dispatch", .min_in = 1, .max_in = 1, .n_out = 1,
	    .check = check_dispatch, .bind = bind_dispatch, .extra_saved = extra_dispatch,
	    .attrs = { ATTR("topk", SL_ATTR_COUNT_INT, topk, .required = true),
		ATTR("capacity", SL_ATTR_REAL, capacity) },
	    .summary = N_("tokens[b,s,h] -> [b,E,c,h] in expert order, top-k experts a token; keeps an int64 index per routed token"),
	    .kernel = SL_KERNEL_GATHER, .tp_rule = SL_TP_DISPATCH,
	    .kernels = { 1, 1 } },
	/* fc1, the activation, fc2 as grouped gemms; backward fc2's input and
	 * weight gradients, the activation's, fc1's two */
	[SL_OP_EXPERTS] = { .name = "experts", .min_in = 3, .max_in = 5, .n_out = 1,
	    .check = check_experts, .bind = bind_experts, .saved_in = { -1 },
	    .extra_saved = extra_experts,
	    .summary = N_("grouped MLPs x[b,E,c,h] w1[E,h,f'] w2[E,f,h] (+ biases) -> [b,E,c,h]; keeps x, fc1's output and the activation"),
	    .attrs = { ATTR("topk", SL_ATTR_COUNT_INT, topk, .required = true),
		ATTR("gated", SL_ATTR_BOOL, gated) },
	    .kernel = SL_KERNEL_EXPERTS, .tp_rule = SL_TP_EXPERTS,
	    .kernels = { 3, 5 } },
	/* the weighed sum; backward the gradients of y and of the weights */
	[SL_OP_COMBINE] = { .name = "combine", .min_in = 2, .max_in = 2, .n_out = 1,
	    .check = check_combine, .bind = bind_combine, .saved_in = { -1, -1 },
	    .summary = N_("y[b,E,c,h], weights[b,s,k] -> [b,s,h] un-permuted and weighed; keeps both"),
	    .kernel = SL_KERNEL_GATHER, .tp_rule = SL_TP_SEQ,
	    .kernels = { 1, 2 } },
};

static const char *const loop_role_names[SL_LOOP_ROLE_COUNT] = {
	[SL_LOOP_NONE] = NULL, [SL_LOOP_DP] = "dp", [SL_LOOP_SEQ] = "seq",
	[SL_LOOP_HEAD] = "head", [SL_LOOP_ROW] = "row", [SL_LOOP_COL] = "col",
	[SL_LOOP_VOCAB] = "vocab", [SL_LOOP_HIDDEN] = "h", [SL_LOOP_BATCH] = "b",
	[SL_LOOP_D2] = "d2", [SL_LOOP_D3] = "d3", [SL_LOOP_EXPERT] = "exp",
};

const char *
sl_loop_role_name(sl_loop_role r)
{
	if ((int)r < 0 || r >= SL_LOOP_ROLE_COUNT)
		return NULL;
	return loop_role_names[r];
}

const char *
sl_op_kind_name(sl_op_kind k)
{
	if ((int)k < 0 || k >= SL_OP_KIND_COUNT)
		return "?";
	return sl_kinds[k].name;
}

int
sl_op_kind_from_name(const char *s)
{
	for (int k = 0; k < SL_OP_KIND_COUNT; k++)
		if (strcmp(sl_kinds[k].name, s) == 0)
			return k;
	return -1;
}
