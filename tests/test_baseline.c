/*
 * test_baseline.c: the baselines of baseline.c against hand calculations,
 * and the paper table's two promises: ours at alpha 0 needs no more memory
 * per device than any baseline, and the Alpa-style plan needs no more
 * communication time than ours.
 */
#include "testutil.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

static sl_graph *
gen_model(sl_family fam, int layers, int64_t h, int64_t heads, int64_t seq,
    int64_t vocab, int64_t batch)
{
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	sl_error_clear(&err);
	sl_gen_defaults(fam, &c);
	c.layers = layers;
	c.hidden = h;
	c.heads = c.kv_heads = heads;
	c.ffn = 4 * h;
	c.seq = seq;
	c.vocab = vocab;
	c.batch = batch;
	g = sl_gen(&c, &err);
	if (g == NULL)
		fail_msg("gen: %s", err.msg);
	return g;
}

/* gpt-1.7b (Megatron-LM SC21 Table 1) with micro-batch 1 per device. */
static sl_graph *
gpt17(int64_t batch)
{
	return gen_model(SL_FAM_GPT, 24, 2304, 24, 2048, 51200, batch);
}

static sl_space *
space_on(const sl_graph *g, int n_axes, int a0, int a1)
{
	sl_hw hw;
	sl_mesh m;
	sl_error err;
	int shape[SL_MAX_AXES] = { a0, a1 };
	sl_space_opts so = { .zero = true };
	sl_space *s;

	sl_error_clear(&err);
	if (sl_hw_load("h100-nvlink", &hw, &err) != SL_OK)
		fail_msg("hw: %s", err.msg);
	if (sl_mesh_make(&hw, n_axes, shape, &m, &err) != SL_OK)
		fail_msg("mesh: %s", err.msg);
	s = sl_space_build(g, &m, &so, &err);
	if (s == NULL)
		fail_msg("space: %s", err.msg);
	return s;
}

static const char *
strat_of(const sl_space *s, const sl_scored_plan *p, const char *op)
{
	int v = sl_graph_find_op(s->g, op);

	assert_true(v >= 0);
	return s->ops[v].strat[p->choice[v]].name;
}

/*
 * Parameter states per device under Megatron-LM tensor parallelism t, from
 * the GPT parameter formula 12 L h^2 + 13 L h + V h + s h (+ 2h for ln_f),
 * at 16 bytes per parameter (2 weight + 2 gradient + 12 Adam), divided as
 * Megatron divides them:
 *   per layer, split by t:  qkv  w h x 3h, b 3h   (column-parallel)
 *                           fc1  w h x 4h, b 4h   (column-parallel)
 *                           proj w h x h          (row-parallel)
 *                           fc2  w 4h x h         (row-parallel)
 *              = 12 h^2 + 7 h
 *   per layer, replicated:  proj b h, fc2 b h (added after the row-parallel
 *                           all-reduce), ln1 and ln2 gamma, beta 4 h
 *              = 6 h
 *   embedding: word table V x h split by t (vocabulary-parallel), position
 *              table s x h replicated; ln_f 2 h replicated; lm_head is tied
 *              to the word table and holds no states of its own.
 * gpt-1.7b: h = 2304, L = 24, V = 51200, s = 2048.
 *   t = 2: 24 (63,717,120 / 2 + 13,824) + 117,964,800 / 2 + 4,718,592 + 4,608
 *        = 764,937,216 + 58,982,400 + 4,718,592 + 4,608 = 828,642,816 params
 *        x 16 = 13,258,285,056 bytes
 *   t = 4: 24 (63,717,120 / 4 + 13,824) + 117,964,800 / 4 + 4,718,592 + 4,608
 *        = 382,634,496 + 29,491,200 + 4,718,592 + 4,608 = 416,848,896 params
 *        x 16 = 6,669,582,336 bytes
 */
static int64_t
megatron_state_bytes(int64_t t)
{
	const int64_t h = 2304, L = 24, V = 51200, s = 2048;
	int64_t per_layer = (12 * h * h + 7 * h) / t + 6 * h;

	return 16 * (L * per_layer + V * h / t + s * h + 2 * h);
}

static void
check_megatron(int n_axes, int a0, int a1, int64_t t, int64_t expect)
{
	sl_graph *g = gpt17(n_axes == 1 ? a0 : a0 * a1);
	sl_space *s = space_on(g, n_axes, a0, a1);
	sl_scored_plan p, q;
	sl_error err;
	const sl_mem *d0;

	sl_error_clear(&err);
	assert_int_equal(megatron_state_bytes(t), expect);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_MEGATRON, NULL, NULL, &p, &err),
	    SL_OK);
	assert_true(p.applicable);
	d0 = &p.ev.dev[0];
	assert_int_equal(d0->params + d0->grads + d0->optim, expect);
	assert_int_equal(d0->params, expect / 8);	/* 2 of 16 bytes */
	/* every device holds the same states: the splits are even */
	for (int d = 0; d < p.ev.n_devices; d++)
		assert_int_equal(p.ev.dev[d].params + p.ev.dev[d].grads +
		    p.ev.dev[d].optim, expect);
	/* the roles Megatron gives the operators */
	if (n_axes == 1) {
		assert_string_equal(strat_of(s, &p, "embed"), "vocab");
		assert_string_equal(strat_of(s, &p, "layer0.ln1"), "rep");
		assert_string_equal(strat_of(s, &p, "layer0.qkv"), "col");
		assert_string_equal(strat_of(s, &p, "layer0.attn"), "head");
		assert_string_equal(strat_of(s, &p, "layer0.proj"), "row");
		assert_string_equal(strat_of(s, &p, "layer0.fc1"), "col");
		assert_string_equal(strat_of(s, &p, "layer0.gelu"), "col");
		assert_string_equal(strat_of(s, &p, "layer0.fc2"), "row");
		assert_string_equal(strat_of(s, &p, "layer23.add2"), "rep");
		assert_string_equal(strat_of(s, &p, "lm_head"), "col");
		assert_string_equal(strat_of(s, &p, "loss"), "vocab");
	} else {
		assert_string_equal(strat_of(s, &p, "embed"), "dp0.vocab1");
		assert_string_equal(strat_of(s, &p, "layer0.ln1"), "dp0");
		assert_string_equal(strat_of(s, &p, "layer0.qkv"), "dp0.col1");
		assert_string_equal(strat_of(s, &p, "layer0.proj"), "dp0.row1");
	}
	/* sequence parallelism moves activations, not parameter states */
	assert_int_equal(sl_baseline_plan(s, SL_BASE_MEGATRON_SP, NULL, NULL, &q,
	    &err), SL_OK);
	assert_int_equal(q.ev.dev[0].params + q.ev.dev[0].grads + q.ev.dev[0].optim,
	    expect);
	assert_string_equal(strat_of(s, &q, "layer0.ln1"), n_axes == 1 ? "seq" : "dp0.seq1");
	assert_true(q.ev.dev[0].acts < p.ev.dev[0].acts);
	sl_scored_plan_free(&p);
	sl_scored_plan_free(&q);
	sl_space_free(s);
	sl_graph_free(g);
}

static void
test_megatron_tp2(void **state)
{
	check_megatron(1, 2, 1, 2, 13258285056LL);
}

static void
test_megatron_tp4(void **state)
{
	check_megatron(1, 4, 1, 4, 6669582336LL);
}

static void
test_megatron_dp2_tp2(void **state)
{
	check_megatron(2, 2, 2, 2, 13258285056LL);
}

static void
test_megatron_dp2_tp4(void **state)
{
	check_megatron(2, 2, 4, 4, 6669582336LL);
}

/*
 * ZeRO-1 and ZeRO-2 against the data parallel plan, on a toy GPT over 4
 * devices.  Each parameter of E elements is replicated under dp; ZeRO gives
 * device r piece(E, 4, r) = floor(E/4) (+1 for r < E mod 4) elements of its
 * optimizer states (12 bytes each) and, for ZeRO-2, of its gradients (2).
 */
static void
test_zero_arithmetic(void **state)
{
	sl_graph *g = gen_model(SL_FAM_GPT, 2, 66, 3, 32, 509, 4);
	sl_space *s = space_on(g, 1, 4, 1);
	sl_scored_plan dp, z1, z2, z3;
	sl_error err;
	int64_t piece[4] = { 0, 0, 0, 0 }, all = 0;

	sl_error_clear(&err);
	for (int t = 0; t < g->n_tensors; t++) {
		int64_t e = sl_tensor_elems(&g->tensors[t]);
		if (g->tensors[t].role != SL_ROLE_PARAMETER)
			continue;
		all += e;
		for (int r = 0; r < 4; r++)
			piece[r] += e / 4 + (r < e % 4 ? 1 : 0);
	}
	/* hidden 66 and vocab 509 split unevenly over 4: the norms' 66
	 * elements give 17, 17, 16, 16; the word table 509 x 66 = 33,594 gives
	 * 8,399, 8,399, 8,398, 8,398 */
	assert_int_equal(piece[0] + piece[1] + piece[2] + piece[3], all);
	assert_true(piece[0] > piece[3]);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_DP, NULL, NULL, &dp, &err), SL_OK);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_ZERO1, NULL, NULL, &z1, &err), SL_OK);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_ZERO2, NULL, NULL, &z2, &err), SL_OK);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_ZERO3, NULL, NULL, &z3, &err), SL_OK);
	assert_string_equal(strat_of(s, &dp, "layer0.qkv"), "dp");
	assert_string_equal(strat_of(s, &z3, "layer0.qkv"), "dp+z");
	assert_string_equal(strat_of(s, &z3, "layer0.gelu"), "dp");
	for (int r = 0; r < 4; r++) {
		assert_int_equal(dp.ev.dev[r].optim, 12 * all);
		assert_int_equal(dp.ev.dev[r].grads, 2 * all);
		assert_int_equal(z1.ev.dev[r].optim, 12 * piece[r]);
		assert_int_equal(z1.ev.dev[r].grads, 2 * all);
		assert_int_equal(z1.ev.dev[r].params, 2 * all);
		assert_int_equal(z2.ev.dev[r].optim, 12 * piece[r]);
		assert_int_equal(z2.ev.dev[r].grads, 2 * piece[r]);
		assert_int_equal(z2.ev.dev[r].acts, dp.ev.dev[r].acts);
		assert_int_equal(z3.ev.dev[r].params, 2 * piece[r]);
		assert_int_equal(z3.ev.dev[r].optim, 12 * piece[r]);
	}
	/* the bytes ZeRO removes were redundant bytes */
	assert_int_equal(dp.redundant - z1.redundant, 12 * (all - piece[0]));
	assert_int_equal(dp.redundant - z2.redundant, 14 * (all - piece[0]));
	/* same communication as data parallel (reduce-scatter + all-gather) */
	assert_int_equal(z1.comm_ns, dp.comm_ns);
	assert_int_equal(z2.comm_ns, dp.comm_ns);
	/*
	 * The optimizer runs over device 0's pieces alone (38 bytes a
	 * parameter: bf16 with fp32 master weights, fused AdamW, clipping),
	 * then every parameter's bf16 weights are all-gathered over the 4
	 * devices, after it: (3/4) x 2 bytes x elements at 450 GB/s and 3
	 * latencies of 3 us each.
	 */
	{
		int64_t gather = 0;
		for (int t = 0; t < g->n_tensors; t++)
			if (g->tensors[t].role == SL_ROLE_PARAMETER)
				gather += sl_coll_time(SL_COLL_ALL_GATHER, 4,
				    2 * sl_tensor_elems(&g->tensors[t]),
				    &s->mesh.axes[0].link);
		assert_int_equal(z1.ev.optim_ns, dp.ev.optim_ns -
		    sl_optim_ns(s, all - piece[0]) + gather);
		assert_int_equal(z2.ev.optim_ns, z1.ev.optim_ns);
		assert_int_equal(z1.ev.step_ns, dp.ev.step_ns - dp.ev.optim_ns +
		    z1.ev.optim_ns);
		assert_true(z1.ev.mfu > 0 && fabs(z1.ev.mfu / dp.ev.mfu -
		    (double)dp.ev.step_ns / (double)z1.ev.step_ns) < 1e-9);
	}
	assert_true(z3.max_mem < z2.max_mem && z2.max_mem < z1.max_mem &&
	    z1.max_mem < dp.max_mem);
	sl_scored_plan_free(&dp);
	sl_scored_plan_free(&z1);
	sl_scored_plan_free(&z2);
	sl_scored_plan_free(&z3);
	sl_space_free(s);
	sl_graph_free(g);
}

/* A budget nothing fits: the row says so instead of inventing a plan. */
static void
test_budget_not_applicable(void **state)
{
	sl_graph *g = gen_model(SL_FAM_GPT, 2, 64, 4, 32, 512, 2);
	sl_space *s = space_on(g, 1, 2, 1);
	sl_baseline_opts o = { .mem_budget = 1024, .solver = SL_SOLVER_DP };
	sl_scored_plan p;
	sl_error err;

	sl_error_clear(&err);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_ALPA_BUDGET, &o, NULL, &p, &err),
	    SL_OK);
	assert_false(p.applicable);
	assert_non_null(strstr(p.note, "fits"));
	sl_scored_plan_free(&p);
	o.mem_budget = -1;
	assert_int_equal(sl_baseline_plan(s, SL_BASE_ALPA_BUDGET, &o, NULL, &p, &err),
	    SL_OK);
	assert_false(p.applicable);
	sl_scored_plan_free(&p);
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * The rows of the paper table (bert-large, gpt-1.7b, 3.6b, 7.5b on 2, 4, 8
 * devices), at their full widths, sequence and vocabulary but two layers
 * (the layers repeat: a layer more adds the same terms to every plan),
 * micro-batch 1 per device.
 */
static void
test_paper_rows(void **state)
{
	static const struct {
		sl_family fam;
		int64_t h, heads, seq, vocab;
	} models[] = {
		{ SL_FAM_BERT, 1024, 16, 512, 30522 },
		{ SL_FAM_GPT, 2304, 24, 2048, 51200 },
		{ SL_FAM_GPT, 3072, 32, 2048, 51200 },
		{ SL_FAM_GPT, 4096, 32, 2048, 51200 },
	};
	static const int devs[] = { 2, 4, 8 };

	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
		for (size_t j = 0; j < sizeof devs / sizeof devs[0]; j++) {
			sl_graph *g = gen_model(models[i].fam, 2, models[i].h,
			    models[i].heads, models[i].seq, models[i].vocab, devs[j]);
			sl_space *s = space_on(g, 1, devs[j], 1);
			sl_baseline_opts o = { .mem_budget = -1, .solver = SL_SOLVER_DP };
			sl_comparison c;
			sl_error err;
			const sl_scored_plan *ours, *alpa = NULL;

			sl_error_clear(&err);
			if (sl_compare(s, 0, NULL, &o, &c, &err) != SL_OK)
				fail_msg("compare: %s", err.msg);
			ours = &c.row[0];
			assert_string_equal(ours->method, "ours");
			for (int k = 1; k < c.n; k++) {
				const sl_scored_plan *p = &c.row[k];
				if (!p->applicable)
					continue;
				if (p->max_mem < ours->max_mem)
					fail_msg("h=%lld on %d devices: %s needs %lld bytes, "
					    "ours %lld", (long long)models[i].h, devs[j],
					    p->method, (long long)p->max_mem,
					    (long long)ours->max_mem);
				if (strcmp(p->method, "alpa") == 0)
					alpa = p;
			}
			assert_non_null(alpa);
			if (alpa->comm_ns > ours->comm_ns)
				fail_msg("h=%lld on %d devices: alpa %lld ns, ours %lld ns",
				    (long long)models[i].h, devs[j],
				    (long long)alpa->comm_ns, (long long)ours->comm_ns);
			sl_comparison_free(&c);
			sl_space_free(s);
			sl_graph_free(g);
		}
	}
}

/*
 * The number after the first occurrence of key at or after from ("total: "),
 * its thousands separators dropped; -1 when there is none.
 */
static int64_t
number_after(const char *text, const char *from, const char *key)
{
	const char *p = strstr(text, from);
	char digits[32];
	int n = 0;

	if (p == NULL || (p = strstr(p, key)) == NULL)
		return -1;
	for (p += strlen(key); (*p >= '0' && *p <= '9') || *p == ','; p++)
		if (*p != ',' && n < (int)sizeof digits - 1)
			digits[n++] = *p;
	digits[n] = '\0';
	return n > 0 ? strtoll(digits, NULL, 10) : -1;
}

/*
 * explain puts the cost model's items into words, each with its number, and
 * sums what it wrote: its memory total and its communication total must be
 * sl_node_cost's, and each resharding's total sl_edge_cost's, or an item of
 * the model went unsaid.  Every operator and strategy of a toy GPT and
 * LLaMA on a 1-D and a 2-D mesh.
 */
static void
check_explain(sl_family fam, int n_axes, int a0, int a1)
{
	sl_graph *g = gen_model(fam, 2, 64, 4, 32, 512, n_axes == 1 ? a0 : a0 * a1);
	sl_space *s = space_on(g, n_axes, a0, a1);
	sl_scored_plan plan;
	sl_error err;
	int checked = 0, edges = 0;

	sl_error_clear(&err);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_MEGATRON_SP, NULL, NULL, &plan,
	    &err), SL_OK);
	for (int v = 0; v < g->n_ops; v++) {
		for (int i = 0; i < s->ops[v].n_strat; i++) {
			char *t = sl_explain(s, plan.choice, v, i, &err);
			sl_mem mem;
			sl_comm comm;
			const char *at;

			assert_non_null(t);
			sl_node_cost(s, v, i, NULL, &mem, &comm);
			if (number_after(t, "\n3. ", "  total: ") != sl_mem_total(&mem) ||
			    number_after(t, "\n4. ", "  total: ") != sl_comm_total(&comm))
				fail_msg("explain %s %s: totals are not the cost model's "
				    "(%lld bytes, %lld ns):\n%s", g->ops[v].name,
				    s->ops[v].strat[i].name, (long long)sl_mem_total(&mem),
				    (long long)sl_comm_total(&comm), t);
			/* the edges in section 5's order: into it, then out of it */
			at = strstr(t, "\n5. ");
			for (int pass = 0; pass < 2 && i == plan.choice[v]; pass++)
				for (int e = 0; e < s->n_edges; e++) {
					const sl_space_edge *ed = &s->edges[e];
					if (ed->src == ed->dst || (pass ? ed->src : ed->dst) != v)
						continue;
					do	/* the edge's first line: two spaces in */
						at = at != NULL ? strstr(at + 1, "\n  ") : NULL;
					while (at != NULL && at[3] == ' ');
					assert_non_null(at);
					sl_edge_cost(s, e, plan.choice[ed->src],
					    plan.choice[ed->dst], NULL, NULL, &comm);
					if (sl_comm_total(&comm) > 0) {
						assert_int_equal(number_after(at, "", "edge total: "),
						    sl_comm_total(&comm));
						edges++;
					}
				}
			assert_non_null(strstr(t, g->ops[v].name));
			free(t);
			checked++;
		}
	}
	assert_true(checked > g->n_ops);
	assert_true(edges > 0 || n_axes == 1);
	assert_null(sl_explain(s, NULL, g->n_ops, 0, &err));
	assert_int_equal(err.code, SL_EINPUT);
	sl_scored_plan_free(&plan);
	sl_space_free(s);
	sl_graph_free(g);
}

static void
test_explain_adds_up(void **state)
{
	check_explain(SL_FAM_GPT, 1, 4, 1);
	check_explain(SL_FAM_GPT, 2, 2, 2);
	check_explain(SL_FAM_LLAMA, 2, 2, 4);
	check_explain(SL_FAM_BERT, 1, 3, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_megatron_tp2),
		cmocka_unit_test(test_megatron_tp4),
		cmocka_unit_test(test_megatron_dp2_tp2),
		cmocka_unit_test(test_megatron_dp2_tp4),
		cmocka_unit_test(test_zero_arithmetic),
		cmocka_unit_test(test_budget_not_applicable),
		cmocka_unit_test(test_paper_rows),
		cmocka_unit_test(test_explain_adds_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
