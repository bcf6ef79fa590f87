/*
 * test_compute.c: the compute-time model (compute.c), the profile fields it
 * reads (hardware.c), and the step time the evaluator builds from it
 * (eval.c).  Kernel times are worked out by hand below; the gpt-1.7b
 * forward+backward time is held to the times measured on an H100
 * (tests/data/fidelity/h100-compute.jsonl, from ../shared/fidelity).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "internal.h"
#include "mlp.h"

static char tmpdir[256];

static const char *
write_profile(const char *name, const char *device_extra)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\n"
	    "  \"format\": \"shardlab-hardware\", \"version\": 1, \"name\": \"%s\",\n"
	    "  \"device\": {\"name\": \"gpu\", \"memory_bytes\": 80000000000,\n"
	    "    \"flops\": 1e12%s},\n"
	    "  \"devices_per_node\": 8,\n"
	    "  \"intra_node\": {\"bandwidth\": 1e11, \"latency\": 1e-6}\n"
	    "}\n", name, device_extra);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void
load(const char *path, sl_hw *hw)
{
	sl_error err;
	char buf[1400];

	sl_error_clear(&err);
	if (sl_hw_load(path, hw, &err) != SL_OK)
		fail_msg("%s", sl_error_format(&err, buf, sizeof buf));
}

/* ------------------------------------------------------------- profiles */

static void
test_profile_fields(void **state)
{
	sl_hw hw;

	/*
	 * Points out of order, one given as flops, two of the same size
	 * (2 x 10^3 x 10^3 x 10^3 = 2e9) at 100 and 300 TFLOP/s: merged into
	 * their mean time, 2 / (1/100 + 1/300) = 150 TFLOP/s.
	 */
	load(write_profile("pts", ",\n    \"memory_bandwidth\": 2e12,"
	    " \"matmul_efficiency\": 0.5, \"attention_flops\": 4e11,"
	    " \"launch_overhead\": 5e-6, \"unvectorized_bandwidth\": 9e11,"
	    " \"unaligned_matmul_flops\": 1e11,\n"
	    "    \"gemm\": [{\"flops\": 2e11, \"tflops\": 0.5},"
	    " {\"m\": 1000, \"n\": 1000, \"k\": 1000, \"tflops\": 0.1},"
	    " {\"flops\": 2e9, \"tflops\": 0.3}],\n"
	    "    \"attention\": [{\"batch\": 1, \"heads\": 2, \"seq\": 100,"
	    " \"dim\": 10, \"tflops\": 0.2}]"), &hw);
	assert_true(hw.mem_bandwidth == 2e12);
	assert_true(hw.matmul_efficiency == 0.5);
	assert_true(hw.attention_flops == 4e11);
	assert_true(hw.launch_overhead == 5e-6);
	assert_true(hw.unvec_bandwidth == 9e11);
	assert_true(hw.unaligned_flops == 1e11);
	assert_int_equal(hw.n_gemm, 2);
	assert_true(hw.gemm[0].flops == 2e9 && hw.gemm[1].flops == 2e11);
	assert_true(fabs(hw.gemm[0].achieved - 150e9) < 1);
	assert_true(hw.gemm[1].achieved == 500e9);
	/* attention points: 7 b h s^2 d = 7 x 2 x 10^4 x 10 = 1.4e6 */
	assert_int_equal(hw.n_attention, 1);
	assert_true(hw.attention[0].flops == 1.4e6);
	/* interpolated in log(flops): 2e10 is halfway from 2e9 to 2e11 */
	assert_true(fabs(sl_gemm_rate(&hw, 2e10) - 325e9) < 1e3);
	assert_true(sl_gemm_rate(&hw, 1e3) == 150e9);	/* flat below */
	assert_true(sl_gemm_rate(&hw, 1e15) == 500e9);	/* and above */

	/* Without a table: peak x efficiency. */
	load(write_profile("eff", ", \"matmul_efficiency\": 0.25"), &hw);
	assert_true(sl_gemm_rate(&hw, 1e9) == 250e9);
	/* Without anything: 0.7 of peak. */
	load(write_profile("bare", ""), &hw);
	assert_true(sl_gemm_rate(&hw, 1e9) == 700e9);
	assert_true(hw.launch_overhead == 0 && hw.mem_bandwidth == 0);
	assert_true(hw.unvec_bandwidth == 0 && hw.unaligned_flops == 0);

	/* The bundled H100 profiles carry the measured figures. */
	load("h100-nvlink", &hw);
	assert_true(hw.mem_bandwidth == 2.98e12);
	/* from the kernels of measured steps (doc/cost-model.md) */
	assert_true(hw.unvec_bandwidth == 1.65e12);
	assert_true(hw.unaligned_flops == 123e12);
	assert_true(hw.launch_overhead == 24e-6);
	assert_int_equal(hw.n_gemm, 26);	/* 40 shapes, 26 sizes */
	assert_int_equal(hw.n_attention, 3);	/* 4 shapes, 3 sizes */
	/* m 2048, n 9216, k 2304 measured 669.6 at settled clocks
	 * (gemm-h100.jsonl, "gemm_sustained"); two other shapes share its
	 * size (677.4, 701.6): mean time */
	{
		double f = 2.0 * 2048 * 9216 * 2304;
		double want = 3 / (1 / 677.4 + 1 / 669.6 + 1 / 701.6) * 1e12;
		assert_true(fabs(sl_gemm_rate(&hw, f) - want) < 1e6);
	}
}

static void
test_profile_bad(void **state)
{
	static const struct {
		const char *extra;
		int line, col;
		const char *want;
	} cases[] = {
		{ ", \"memory_bandwidth\": -1", 4, 40, "memory_bandwidth" },
		{ ", \"matmul_efficiency\": 1.5", 4, 41, "at most 1" },
		{ ", \"attention_flops\": 2e12", 4, 39, "at most 1e+12" },
		{ ", \"launch_overhead\": \"fast\"", 4, 39, "number" },
		{ ", \"unvectorized_bandwidth\": 0", 4, 46, "unvectorized_bandwidth" },
		{ ", \"unaligned_matmul_flops\": 2e12", 4, 46, "at most 1e+12" },
		{ ",\n \"gemm\": []", 5, 10, "non-empty" },
		{ ",\n \"gemm\": [{\"m\": 1, \"n\": 1, \"k\": 1, \"tflops\": 2}]",
		    5, 46, "above the device's peak" },
		{ ",\n \"gemm\": [{\"m\": 1, \"n\": 1, \"tflops\": 0.5}]", 5, 11,
		    "\"k\"" },
		{ ",\n \"gemm\": [{\"m\": 1, \"n\": 1, \"k\": 1, \"flops\": 2,"
		    " \"tflops\": 0.5}]", 5, 11, "not both" },
		{ ",\n \"gemm\": [{\"m\": 1, \"n\": 1, \"k\": 1, \"tflop\": 0.5}]",
		    5, 45, "tflop" },
		{ ",\n \"attention\": [{\"batch\": 1, \"heads\": 0, \"seq\": 8,"
		    " \"dim\": 8, \"tflops\": 0.1}]", 5, 38, "heads" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *p = write_profile("bad", cases[i].extra);
		sl_hw hw;
		sl_error err;
		char buf[1400];

		sl_error_clear(&err);
		assert_int_equal(sl_hw_load(p, &hw, &err), SL_EINPUT);
		sl_error_format(&err, buf, sizeof buf);
		if (err.line != cases[i].line || err.column != cases[i].col ||
		    strstr(err.msg, cases[i].want) == NULL)
			fail_msg("case %zu: got \"%s\", want %d:%d \"%s\"", i, buf,
			    cases[i].line, cases[i].col, cases[i].want);
	}
}

/* ------------------------------------------------------- kernel times */

/* x[8,512] -> fc1 w1[512,2048] -> gelu -> fc2 w2[2048,512] */
static sl_graph *
mlp(void)
{
	sl_graph *g = sl_graph_new("mlp");
	sl_error err;
	int64_t dx[2] = { 8, 512 }, dw1[2] = { 512, 2048 }, dh[2] = { 8, 2048 };
	int64_t dw2[2] = { 2048, 512 };
	int x, w1, h, a, w2, y;

	sl_error_clear(&err);
	x = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16, SL_ROLE_INPUT, &err);
	w1 = sl_graph_add_tensor(g, "w1", 2, dw1, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	h = sl_graph_add_tensor(g, "h", 2, dh, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	a = sl_graph_add_tensor(g, "a", 2, dh, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	w2 = sl_graph_add_tensor(g, "w2", 2, dw2, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	y = sl_graph_add_tensor(g, "y", 2, dx, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	assert_int_equal(sl_graph_add_op(g, "fc1", SL_OP_MATMUL, 2,
	    (int[]){ x, w1 }, 1, &h, NULL, &err), 0);
	assert_int_equal(sl_graph_add_op(g, "gelu", SL_OP_GELU, 1, &h, 1, &a,
	    NULL, &err), 1);
	assert_int_equal(sl_graph_add_op(g, "fc2", SL_OP_MATMUL, 2,
	    (int[]){ a, w2 }, 1, &y, NULL, &err), 2);
	assert_int_equal(sl_graph_validate(g, NULL, &err), SL_OK);
	return g;
}

static sl_space *
space(const sl_graph *g, const sl_hw *hw, int n_axes, const int *shape,
    const sl_recipe *r)
{
	sl_mesh m;
	sl_error err;
	sl_space_opts o;
	sl_space *s;
	char buf[1400];

	sl_space_opts_default(&o);
	if (r != NULL)
		o.recipe = *r;
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(hw, n_axes, shape, &m, &err), SL_OK);
	s = sl_space_build(g, &m, &o, &err);
	if (s == NULL)
		fail_msg("%s", sl_error_format(&err, buf, sizeof buf));
	return s;
}

static void
test_kernels_by_hand(void **state)
{
	sl_hw hw;
	sl_graph *g = mlp();
	sl_space *s;
	sl_compute c;
	int rep[3];

	/* peak 1e12 at efficiency 0.5, 1 GB/s memory, 1 us launch floor */
	load(write_profile("slow", ", \"matmul_efficiency\": 0.5,"
	    " \"memory_bandwidth\": 1e9, \"launch_overhead\": 1e-6"), &hw);
	s = space(g, &hw, 1, (int[]){ 1 }, NULL);
	for (int v = 0; v < 3; v++)
		rep[v] = 0;	/* one device: the only strategy */

	/*
	 * fc1: 2 x 8 x 512 x 2048 = 16,777,216 FLOPs at 5e11 = 33.55 us;
	 * bytes x 8x512x2 = 8,192 + w1 512x2048x2 = 2,097,152 + h 8x2048x2 =
	 * 32,768 = 2,138,112 at 1e9 = 2,138.112 us: memory-bound.
	 * Backward: 3 kernels (input and weight gradient, w1's accumulation)
	 * sharing 2 x the bytes = 4,276.224 us.
	 */
	sl_node_compute(s, 0, rep[0], NULL, &c);
	assert_int_equal(c.flops_fwd, 16777216);
	assert_int_equal(c.flops_bwd, 2 * 16777216);
	assert_int_equal(c.fwd_ns, 2138112);
	assert_int_equal(c.bwd_ns, 4276224);
	assert_int_equal(c.recompute_ns, 0);
	/* gelu: h and a, 65,536 bytes = 65.536 us; backward twice. */
	sl_node_compute(s, 1, rep[1], NULL, &c);
	assert_int_equal(c.flops_fwd, 0);
	assert_int_equal(c.fwd_ns, 65536);
	assert_int_equal(c.bwd_ns, 131072);
	sl_space_free(s);

	/*
	 * Fast memory (1e15 B/s): fc1 is bound by its FLOPs, 33.554 us
	 * forward and 67.109 us over 3 backward kernels (22.370 us each, above
	 * the 1 us floor); gelu's 2 kernels by the launch floor, 1 us each.
	 */
	load(write_profile("fast", ", \"matmul_efficiency\": 0.5,"
	    " \"memory_bandwidth\": 1e15, \"launch_overhead\": 1e-6"), &hw);
	s = space(g, &hw, 1, (int[]){ 1 }, NULL);
	sl_node_compute(s, 0, 0, NULL, &c);
	assert_int_equal(c.fwd_ns, 33554);
	assert_int_equal(c.bwd_ns, 67109);
	sl_node_compute(s, 1, 0, NULL, &c);
	assert_int_equal(c.fwd_ns, 1000);
	assert_int_equal(c.bwd_ns, 1000);
	/* one gemm of 2 x 10 x 10 x 10 FLOPs: the floor */
	assert_int_equal(sl_gemm_ns(&hw, 10, 10, 10, 1), 1000);
	/* 2 x 1000^3 = 2e9 at 5e11: 4 ms */
	assert_int_equal(sl_gemm_ns(&hw, 1000, 1000, 1000, 1), 4000000);
	sl_space_free(s);
	sl_graph_free(g);
}

/* ------------------------------------------------ measured on an H100 */

static sl_graph *
gpt17(void)
{
	sl_model_opts mo = { .micro_batch = 1, .devices = 1 };
	sl_error err;
	sl_graph *g;

	sl_error_clear(&err);
	g = sl_model_open("gpt-1.7b", &mo, &err);
	if (g == NULL)
		fail_msg("gpt-1.7b: %s", err.msg);
	return g;
}

/*
 * The measured fwd+bwd seconds of gpt-1.7b at tp with attn in file (of
 * ../shared/fidelity when SHARED_DIR has it, else tests/data/fidelity), or -1.
 */
static double
measured_in(const char *file, int tp, const char *attn)
{
	const char *shared = getenv("SHARED_DIR");
	const char *srcdir = getenv("TESTS_SRCDIR");
	char path[1024];
	FILE *f = NULL;
	char line[4096];
	double s = -1;

	if (shared != NULL) {
		snprintf(path, sizeof path, "%s/fidelity/%s", shared, file);
		f = fopen(path, "r");
	}
	if (f == NULL) {
		snprintf(path, sizeof path, "%s/data/fidelity/%s",
		    srcdir ? srcdir : "tests", file);
		f = fopen(path, "r");
	}
	if (f == NULL)
		fail_msg("cannot read %s (tests/data/fidelity)", file);
	while (fgets(line, sizeof line, f) != NULL) {
		json_t *o = json_loads(line, 0, NULL);
		json_t *k = json_object_get(o, "kind");

		if (json_is_string(k) &&
		    strcmp(json_string_value(k), "gpt1.7b_fwd_bwd_bf16") == 0 &&
		    json_integer_value(json_object_get(o, "tp")) == tp &&
		    json_integer_value(json_object_get(o, "batch")) == 1 &&
		    strcmp(json_string_value(json_object_get(o, "attn")), attn) == 0)
			s = json_number_value(json_object_get(o, "s"));
		json_decref(o);
	}
	fclose(f);
	return s;
}

/* The same on the H100 (h100-compute.jsonl). */
static double
measured(int tp, const char *attn)
{
	return measured_in("h100-compute.jsonl", tp, attn);
}

/* Predicted fwd+bwd kernel time of the Megatron plan on 1 x tp (ns), with
 * the attention kernel of r (NULL: the default, flash). */
static int64_t
predicted_with(const sl_graph *g, const sl_hw *hw, int tp, const sl_recipe *r,
    sl_eval *ev_out)
{
	sl_space *s = space(g, hw, 2, (int[]){ 1, tp }, r);
	sl_scored_plan p;
	sl_error err;
	int64_t sum = 0;

	sl_error_clear(&err);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_MEGATRON, NULL, NULL, &p,
	    &err), SL_OK);
	assert_true(p.applicable);
	for (int v = 0; v < g->n_ops; v++) {
		sl_compute c;
		sl_node_compute(s, v, p.choice[v], NULL, &c);
		sum += c.fwd_ns + c.bwd_ns + c.recompute_ns;
	}
	/* the evaluator's compute is the same sum (every rank alike here),
	 * and so is the runner's launch list's */
	assert_int_equal(p.ev.compute_ns, sum);
	{
		sl_launch l;
		assert_int_equal(sl_launch_build(s, p.choice, &l, &err), SL_OK);
		for (int d = 0; d < l.n_devices; d++) {
			assert_int_equal(l.dev[d].compute_ns, p.ev.dev_compute_ns[d]);
			assert_int_equal(l.dev[d].compute_ns, sum);
		}
		sl_launch_free(&l);
	}
	if (ev_out != NULL) {
		*ev_out = p.ev;
		p.ev.dev = NULL;
		p.ev.dev_redundant = NULL;
		p.ev.ops = NULL;
		p.ev.dev_compute_ns = NULL;
	}
	sl_scored_plan_free(&p);
	sl_space_free(s);
	return sum;
}

static int64_t
predicted(const sl_graph *g, const sl_hw *hw, int tp, sl_eval *ev_out)
{
	return predicted_with(g, hw, tp, NULL, ev_out);
}

/* Every kind's row says how many kernels it runs each way: a row without
 * them would compute in no time at all. */
static void
test_every_kind_runs(void **state)
{
	for (int k = 0; k < SL_OP_KIND_COUNT; k++) {
		if (sl_kinds[k].kernels[0] < 1 || sl_kinds[k].kernels[1] < 1)
			fail_msg("kind %s runs %d forward and %d backward kernels",
			    sl_kinds[k].name, sl_kinds[k].kernels[0],
			    sl_kinds[k].kernels[1]);
	}
	/* the counts compute.c's formulas assume */
	assert_int_equal(sl_kinds[SL_OP_MATMUL].kernels[1], 2);
	assert_int_equal(sl_kinds[SL_OP_ATTENTION].kernels[1], 4);
	assert_int_equal(sl_kinds[SL_OP_CROSS_ENTROPY].kernels[0], 3);
}

static void
test_h100_gpt17(void **state)
{
	sl_graph *g = gpt17();
	sl_hw hw;
	static const int tps[] = { 1, 2, 4 };

	load("h100-nvlink", &hw);
	/*
	 * Two runs of torch_compute.py on an H100: h100-compute.jsonl and
	 * tp-h100.jsonl (2026-11-27, the model built on the GPU).  They
	 * differ by up to 24% (TP 2: 46.2 and 37.2 ms; an H200 31.7 ms):
	 * the run-to-run spread of eager steps, most where the host's
	 * issue rate bounds them.  Held: their mean.
	 */
	for (size_t i = 0; i < sizeof tps / sizeof *tps; i++) {
		double a = measured(tps[i], "sdpa");
		double b = measured_in("tp-h100.jsonl", tps[i], "sdpa");
		double want = (a + b) / 2;
		double got = (double)predicted(g, &hw, tps[i], NULL) / 1e9;

		assert_true(a > 0 && b > 0);
		print_message("gpt-1.7b TP %d: predicted %.1f ms, measured %.1f and "
		    "%.1f ms (%+.1f%% of their mean)\n", tps[i], got * 1e3,
		    a * 1e3, b * 1e3, 100 * (got / want - 1));
		if (fabs(got / want - 1) > 0.15)
			fail_msg("TP %d: predicted %.2f ms, measured %.2f ms",
			    tps[i], got * 1e3, want * 1e3);
	}
	/* For doc/validation.md, not held: TP 8, where eager PyTorch's
	 * small kernels are launch-bound, and naive attention. */
	for (int tp = 1; tp <= 8; tp *= 2)
		for (int naive = tp < 8 ? 1 : 0; naive <= 1; naive++) {
			sl_recipe r;
			double want, got;
			sl_recipe_default(&r);
			if (naive)
				r.attention = SL_ATTN_NAIVE;
			want = measured_in("tp-h100.jsonl", tp, naive ? "naive" : "sdpa");
			got = (double)predicted_with(g, &hw, tp, &r, NULL) / 1e9;
			print_message("gpt-1.7b TP %d %s: predicted %.1f ms, measured "
			    "%.1f ms (%+.1f%%, not held)\n", tp,
			    naive ? "naive" : "SDPA", got * 1e3, want * 1e3,
			    100 * (got / want - 1));
		}
	sl_graph_free(g);
}

/*
 * The bundled h200-nvlink profile (its gemm table, copy bandwidth, attention
 * and launch floor from h200-compute.jsonl) against gpt-1.7b's fwd+bwd
 * measured on the same H200: TP 1, 2 and 4 within 15%, as on the H100.
 */
static void
test_h200_gpt17(void **state)
{
	sl_graph *g = gpt17();
	sl_hw hw;

	load("h200-nvlink", &hw);
	assert_true(hw.launch_overhead == 17e-6 && hw.mem_bandwidth == 4.17e12);
	for (int tp = 1; tp <= 8; tp *= 2) {
		double want = measured_in("h200-compute.jsonl", tp, "sdpa");
		double got = (double)predicted(g, &hw, tp, NULL) / 1e9;

		assert_true(want > 0);
		print_message("H200 gpt-1.7b TP %d: predicted %.1f ms, measured "
		    "%.1f ms (%+.1f%%%s)\n", tp, got * 1e3, want * 1e3,
		    100 * (got / want - 1), tp == 8 ? ", not held" : "");
		if (tp < 8 && fabs(got / want - 1) > 0.15)
			fail_msg("H200 TP %d: predicted %.2f ms, measured %.2f ms",
			    tp, got * 1e3, want * 1e3);
	}
	sl_graph_free(g);
}

/* ------------------------------------------------------------ step time */

static void
test_step_time(void **state)
{
	sl_graph *g = gpt17();
	sl_hw hw;
	sl_eval ev;
	int64_t tp_comm = 0;

	load("h100-nvlink", &hw);
	predicted(g, &hw, 2, &ev);
	/*
	 * Megatron TP 2 on one node: no parameter gradient is reduced (one
	 * data-parallel rank), so every collective (the tensor-parallel
	 * all-reduces) is exposed; no accumulation.
	 */
	tp_comm = ev.comm_ns;
	assert_true(tp_comm > 0);
	assert_int_equal(ev.exposed_comm_ns, tp_comm);
	assert_int_equal(ev.accum_steps, 1);
	assert_int_equal(ev.step_ns, ev.compute_ns + tp_comm + ev.optim_ns);
	/*
	 * The optimizer step over device 0's parameters.  Per layer, column-
	 * parallel qkv 2304 x 3456 + 3456 and fc1 2304 x 4608 + 4608,
	 * row-parallel proj 1152 x 2304 + 2304 and fc2 4608 x 2304 + 2304,
	 * two norms 4 x 2304: 31,872,384, 764,937,216 for 24 layers; the
	 * vocabulary-parallel embedding 25600 x 2304 and the positions
	 * 2048 x 2304, the last norm 4608: 828,642,816 elements.  bf16 with
	 * fp32 master weights, fused AdamW: gradient 2 + 12 read, 12 written,
	 * the master copied to the bf16 weight (4 + 2), PyTorch's clipping
	 * (norm 2, scale 2 + 2): 38 bytes each at the profile's
	 * optimizer_bandwidth, 2.49e12 B/s, 12.646 ms (one rounding per
	 * operator).
	 */
	assert_true(fabs((double)ev.optim_ns - 828642816.0 * 38 / 2.49e12 * 1e9) <
	    g->n_ops);
	/* 2048 tokens per step */
	assert_int_equal(ev.tokens, 2048);
	assert_true(fabs(ev.tokens_per_s - 2048 / (ev.step_ns / 1e9)) < 1e-6);
	/*
	 * Model FLOPs as Megatron-LM counts them (Korthikanti et al. 2022):
	 * 72 B s l h^2 (1 + s / 6h + V / 12 l h) with B 1, s 2048, l 24,
	 * h 2304, V 51200: 72 B s l h^2 = 18,786,186,952,704, the attention
	 * scores 12 B s^2 l h = 2,783,138,807,808, the logits 6 B s V h =
	 * 1,449,551,462,400; sum 23,018,877,222,912.
	 */
	assert_true(ev.model_flops == 23018877222912.0);
	assert_true(ev.hw_flops == ev.model_flops);
	assert_true(fabs(ev.mfu - ev.model_flops /
	    (2 * 989e12 * ev.step_ns / 1e9)) < 1e-12);

	/*
	 * Full recomputation runs every layer operator's forward again in
	 * backward: compute grows by exactly their forward time, the model
	 * FLOPs stay, MFU falls.
	 */
	{
		sl_recipe r;
		sl_eval ef;
		sl_space *s;
		sl_scored_plan p;
		sl_error err;
		int64_t fwd_in_layers = 0;

		sl_recipe_default(&r);
		r.recompute = SL_RECOMP_FULL;
		predicted_with(g, &hw, 2, &r, &ef);
		s = space(g, &hw, 2, (int[]){ 1, 2 }, NULL);
		sl_error_clear(&err);
		assert_int_equal(sl_baseline_plan(s, SL_BASE_MEGATRON, NULL, NULL,
		    &p, &err), SL_OK);
		for (int v = 0; v < g->n_ops; v++) {
			sl_compute c;
			sl_node_compute(s, v, p.choice[v], NULL, &c);
			if (g->ops[v].layer >= 0)
				fwd_in_layers += c.fwd_ns;
		}
		assert_true(fwd_in_layers > 0);
		assert_int_equal(ef.recompute_ns, fwd_in_layers);
		assert_int_equal(ef.compute_ns, ev.compute_ns + fwd_in_layers);
		assert_true(ef.model_flops == ev.model_flops);
		assert_true(ef.mfu < ev.mfu);
		/*
		 * The hardware does the layers' forward again: 24 B s l h^2
		 * + 4 B s^2 l h = 7,189,775,253,504 (not the output layer's,
		 * outside the layers).
		 */
		assert_true(ef.hw_flops == 23018877222912.0 + 7189775253504.0);
		assert_true(fabs(ef.hfu / ef.mfu - ef.hw_flops / ef.model_flops) < 1e-12);
		sl_scored_plan_free(&p);
		sl_space_free(s);
		sl_eval_free(&ef);
	}
	sl_eval_free(&ev);
	sl_graph_free(g);
}

static void
test_overlap_and_accumulation(void **state)
{
	/* fc1 and gelu in layer 0, fc2 in layer 1 */
	sl_graph *g = tu_mlp();
	sl_hw hw;
	sl_recipe r;
	int choice[3];

	/*
	 * Data parallel over 2 devices on a slow link: both weight gradients
	 * are all-reduced, in the last of 8 micro-steps only.  The exposed
	 * part is what is left when backward ends, by how the framework
	 * buckets the gradients: torchtitan's FSDP2 reduces each module (a
	 * layer) once its backward is done, so fc2's reduction (layer 1)
	 * overlaps the backward of gelu and fc1; PyTorch DDP's 25 MiB bucket
	 * holds both 2 MiB gradients, reduced once fc1's is ready; without
	 * overlap the same.
	 */
	load(write_profile("dp", ", \"launch_overhead\": 1e-6"), &hw);
	hw.intra.bandwidth = 1e9;
	for (int mode = 0; mode < 3; mode++) {
		sl_space *s;
		sl_eval ev;
		sl_error err;
		int64_t t, end, bw[3], pcm[3], param = 0, fw = 0, cmp = 0, opt = 0;

		sl_recipe_default(&r);
		r.global_batch = 64;	/* graph batch 8: 8 micro-steps */
		r.framework = mode == 0 ? SL_FW_TORCHTITAN : SL_FW_FREE;
		r.no_grad_overlap = mode == 2;
		s = space(g, &hw, 1, (int[]){ 2 }, &r);
		for (int v = 0; v < 3; v++) {
			choice[v] = sl_space_find_strategy(s, v, "dp");
			assert_true(choice[v] >= 0);
		}
		sl_error_clear(&err);
		assert_int_equal(sl_evaluate(s, choice, 0, &ev, &err), SL_OK);
		for (int v = 2; v >= 0; v--) {
			sl_compute c;
			sl_node_compute(s, v, choice[v], NULL, &c);
			bw[v] = c.bwd_ns;
			fw += c.fwd_ns;
			cmp += c.fwd_ns + c.bwd_ns;
			opt += c.optim_ns;
			pcm[v] = sl_node_param_comm_ns(s, v, choice[v]);
			param += pcm[v];
		}
		assert_true(pcm[1] == 0 && pcm[0] > 0 && pcm[2] > 0);
		assert_int_equal(param, ev.comm_ns);
		t = bw[2] + bw[1] + bw[0];
		if (mode == 0) {
			/* fc2's from the end of its backward, fc1's after both
			 * fc2's and fc1's backward */
			end = bw[2] + pcm[2];
			end = (end > t ? end : t) + pcm[0];
		} else
			end = t + pcm[2] + pcm[0];
		assert_int_equal(ev.exposed_comm_ns, end - t);
		/* the slow link leaves some of it exposed, not all */
		assert_true(mode != 0 || (ev.exposed_comm_ns > 0 &&
		    ev.exposed_comm_ns < ev.comm_ns));
		/* micro-steps 1-7 accumulate: nothing to reduce or wait for */
		assert_int_equal(ev.exposed_accum_ns, 0);
		assert_int_equal(ev.accum_steps, 8);
		assert_int_equal(ev.compute_ns, cmp);
		/*
		 * The optimizer, once: w1 and w2, 2 x 1,048,576 elements on
		 * each device, 38 bytes each (fused AdamW with fp32 master
		 * weights, the copy to bf16, PyTorch's clipping) at the
		 * share of the profile's 2.0e12 B/s the optimizer's kernels
		 * reach where it does not say (SL_OPTIM_BW_SHARE, 0.84):
		 * 47.44 us.
		 */
		assert_true(llabs(opt - 47436) <= 1 && ev.optim_ns == opt);
		assert_int_equal(ev.step_ns, 8 * ev.compute_ns + ev.exposed_comm_ns +
		    ev.optim_ns);
		assert_int_equal(ev.tokens, 64);
		(void)fw;
		sl_eval_free(&ev);
		sl_space_free(s);
	}
	sl_graph_free(g);
}

/* The gradient reductions of parameters, as they run (sl_node_colls). */
struct grad_colls {
	const sl_space *s;
	int n;
	sl_coll coll[4];
};

static void
grad_coll(void *ctx, const sl_coll_item *ci)
{
	struct grad_colls *a = ctx;

	if (ci->cause == SL_CAUSE_GRAD && ci->tensor >= 0 &&
	    a->s->g->tensors[ci->tensor].role == SL_ROLE_PARAMETER && a->n < 4)
		a->coll[a->n++] = ci->coll;
}

/*
 * The step's terms beyond the kernels of the graph, by hand: autocast's
 * casts of fp32 weights, naive attention's fp32 softmax under autocast, and
 * the optimizer's bytes per parameter by recipe.
 */
static void
test_step_terms_by_hand(void **state)
{
	sl_hw hw;
	sl_recipe r;
	sl_space *s;
	sl_compute c;

	/* FLOPs cost nothing here, bytes move at 2e12 B/s, no launch floor */
	load(write_profile("bytes", ", \"matmul_efficiency\": 1"), &hw);
	hw.flops = 1e19;
	{
		/*
		 * fc1 of the MLP: x [8, 512], w1 [512, 2048], h [8, 2048].  Its
		 * kernels move 8 x 512 x 2 + 512 x 2048 x 2 + 8 x 2048 x 2 =
		 * 2,138,112 bytes forward (1069 ns); under autocast the fp32
		 * weight is cast to bf16 first, 1,048,576 x (4 + 2) bytes
		 * (3146 ns), and its gradient cast back in backward.
		 */
		sl_graph *g = tu_mlp();
		int64_t f16, b16;

		sl_recipe_default(&r);
		s = space(g, &hw, 1, (int[]){ 1 }, &r);
		sl_node_compute(s, 0, 0, NULL, &c);
		assert_int_equal(c.fwd_ns, 1069);
		f16 = c.fwd_ns;
		b16 = c.bwd_ns;
		sl_space_free(s);
		r.precision = SL_PREC_AMP;
		s = space(g, &hw, 1, (int[]){ 1 }, &r);
		assert_int_equal(s->width[g->ops[0].in[1]], 4);
		assert_int_equal(s->width[g->ops[0].out[0]], 2);
		sl_node_compute(s, 0, 0, NULL, &c);
		assert_int_equal(c.fwd_ns, f16 + 3146);
		assert_int_equal(c.bwd_ns, b16 + 3146);
		sl_space_free(s);
		sl_graph_free(g);
		/*
		 * The same with x fp32 data, which has no gradient: forward
		 * casts x (4,096 elements) and w1, (4,096 + 1,048,576) x 6 =
		 * 6,316,032 bytes beside the kernels' 2,138,112 (4227 ns);
		 * backward casts w1's gradient back alone (3146 ns): the
		 * cast of x has no backward (aten/src/ATen/autocast_mode.cpp,
		 * cached_cast; a tensor without grad gets no ToCopyBackward).
		 */
		g = tu_mlp();
		g->tensors[g->ops[0].in[0]].dtype = SL_DT_F32;
		s = space(g, &hw, 1, (int[]){ 1 }, &r);
		assert_int_equal(s->width[g->ops[0].in[0]], 4);
		sl_node_compute(s, 0, 0, NULL, &c);
		assert_int_equal(c.fwd_ns, 4227);
		assert_int_equal(c.bwd_ns, b16 + 3146);
		{
			/*
			 * The weights' bf16 copies, 2 x 1,048,576 bytes each:
			 * fc1's input has no gradient, so mm does not save
			 * w1's copy and autocast's cache holds it until the
			 * forward ends (fc2's forward, the last); fc2's input
			 * has one, and w2's copy is kept for fc2's input
			 * gradient.
			 */
			sl_timeline tl;
			sl_error err;
			int found = 0;

			sl_error_clear(&err);
			assert_int_equal(sl_timeline_build(s, (int[]){ 0, 0, 0 }, 0,
			    false, &tl, &err), SL_OK);
			for (int k = 0; k < tl.n_bufs; k++) {
				const sl_tl_buf *bf = &tl.buf[k];
				const sl_task *last = &tl.task[tl.order[bf->last]];
				if (bf->kind != SL_BUF_AUTOCAST)
					continue;
				found++;
				assert_int_equal(bf->bytes, 2 * 1048576);
				assert_int_equal(last->op, 2);
				assert_int_equal(last->kind, bf->tensor == g->ops[0].in[1] ?
				    SL_TASK_FWD : SL_TASK_BWD);
			}
			assert_int_equal(found, 2);
			sl_timeline_free(&tl);
		}
		sl_space_free(s);
		sl_graph_free(g);
	}
	{
		/*
		 * Naive attention over 2 heads of 64, sequence 1024, dropout
		 * 0.1, as PyTorch runs it (doc/cost-model.md): n = 2 x 1024^2
		 * = 2,097,152 scores; the qkv and output slots 1,048,576
		 * bytes; the output's transposed copy 2 x 2 x 131,072 =
		 * 524,288.  Copy bandwidth B = 2e12, unvectorized U = 1e12.
		 * bf16 (q = p = 2), forward: gemms 2q, scale 2q, clone 2q,
		 * softmax 2p, dropout 2p + 1 at B (21n + the slots), the
		 * masked fill 2q and the copy at U: 22,544.384 + 8,912.896
		 * ns.  Backward: gemms 4q and twice the slots, softmax's
		 * product and kernel 3p + 3p, scale 2q, clone 2q, dropout 5
		 * at B (33n + 2,097,152), the masked fill at U: 35,651.584 +
		 * 8,388.608.  Autocast (p = 4) adds the casts: forward at B
		 * 35n + the slots (37,224.448), at U the copy, masked fill
		 * and the cast to fp32 (q + p): 21,495.808; backward at B
		 * 55n + 2,097,152 (58,720.256), at U 10n (20,971.52).
		 */
		sl_graph *g = sl_graph_new("attn");
		sl_error err;
		int64_t dq[3] = { 1, 1024, 384 }, dout[3] = { 1, 1024, 128 };
		int q, o, a;
		static const struct {
			sl_precision p;
			int64_t fwd, bwd;
		} want[] = {
			{ SL_PREC_BF16, 31457, 44040 },
			{ SL_PREC_AMP, 58720, 79692 },
		};
		sl_hw hu = hw;

		hu.unvec_bandwidth = 1e12;
		sl_error_clear(&err);
		q = sl_graph_add_tensor(g, "qkv", 3, dq, SL_DT_BF16, SL_ROLE_INPUT, &err);
		o = sl_graph_add_tensor(g, "o", 3, dout, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
		a = sl_graph_add_op(g, "attn", SL_OP_ATTENTION, 1, &q, 1, &o, "layer0", &err);
		assert_int_equal(a, 0);
		g->ops[a].heads = 2;
		g->ops[a].p = 0.1;
		assert_int_equal(sl_graph_validate(g, NULL, &err), SL_OK);
		for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
			sl_recipe_default(&r);
			r.attention = SL_ATTN_NAIVE;
			r.precision = want[i].p;
			s = space(g, &hu, 1, (int[]){ 1 }, &r);
			sl_node_compute(s, 0, 0, NULL, &c);
			assert_int_equal(c.fwd_ns, want[i].fwd);
			assert_int_equal(c.bwd_ns, want[i].bwd);
			sl_space_free(s);
		}
		/*
		 * Megatron-LM, bf16: scale, mask and softmax fused, 2q
		 * forward and 3q backward; dropout 5; the context's copy.
		 * Forward at B 13n + the slots (14,155.776 ns), the copy at
		 * U (524.288); backward at B 19n + twice the slots
		 * (20,971.52).
		 */
		sl_recipe_default(&r);
		r.attention = SL_ATTN_NAIVE;
		r.precision = SL_PREC_BF16;
		r.framework = SL_FW_MEGATRON;
		s = space(g, &hu, 1, (int[]){ 1 }, &r);
		sl_node_compute(s, 0, 0, NULL, &c);
		assert_int_equal(c.fwd_ns, 14680);
		assert_int_equal(c.bwd_ns, 20972);
		sl_space_free(s);
		sl_graph_free(g);

		/*
		 * Grouped-query: 2 heads sharing 1 key-value head, no
		 * dropout, bf16: qkv [1, 1024, 256], slots 786,432 bytes.
		 * Keys and values repeated to both heads, 2 x (131,072 +
		 * 65,536) bytes each (786,432 at U forward); their gradients
		 * summed back, the same bytes at B.  Forward: at B 16n + the
		 * slots (17,170.432 ns), at U the output's copy, the masked
		 * fill and the repeats (9,699.328).  Backward: at B 28n +
		 * twice the slots + the sums (30,539.776), at U 4n (8,388.608).
		 */
		g = sl_graph_new("gqa");
		dq[2] = 256;
		q = sl_graph_add_tensor(g, "qkv", 3, dq, SL_DT_BF16, SL_ROLE_INPUT, &err);
		o = sl_graph_add_tensor(g, "o", 3, dout, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
		a = sl_graph_add_op(g, "attn", SL_OP_ATTENTION, 1, &q, 1, &o, "layer0", &err);
		g->ops[a].heads = 2;
		g->ops[a].kv_heads = 1;
		g->ops[a].p = 0;
		assert_int_equal(sl_graph_validate(g, NULL, &err), SL_OK);
		sl_recipe_default(&r);
		r.attention = SL_ATTN_NAIVE;
		r.precision = SL_PREC_BF16;
		s = space(g, &hu, 1, (int[]){ 1 }, &r);
		sl_node_compute(s, 0, 0, NULL, &c);
		assert_int_equal(c.fwd_ns, 26870);
		assert_int_equal(c.bwd_ns, 38928);
		sl_space_free(s);
		sl_graph_free(g);
	}
	{
		/*
		 * Unaligned matmuls: x [64, 512] times w [512, n] on a
		 * device of 1e12 FLOP/s at full efficiency, bytes free.
		 * n = 1000 is a multiple of 8: 2 x 64 x 512 x 1000 FLOPs at
		 * 1e12, 65,536 ns.  n = 1004 is not (in bf16; it is a
		 * multiple of 4, 16 bytes in fp32): 65,798,144 FLOPs at the
		 * profile's 1e11, 657,981 ns, or at one eighth of the peak
		 * without it, 526,385; under fp32 at the full rate, 65,798.
		 */
		static const struct {
			int64_t n;
			sl_precision p;
			double unaligned;
			int64_t fwd;
		} mm[] = {
			{ 1000, SL_PREC_BF16, 1e11, 65536 },
			{ 1004, SL_PREC_BF16, 1e11, 657981 },
			{ 1004, SL_PREC_BF16, 0, 526385 },
			{ 1004, SL_PREC_FP32, 1e11, 65798 },
		};

		for (size_t i = 0; i < sizeof mm / sizeof *mm; i++) {
			sl_graph *g = sl_graph_new("head");
			sl_error err;
			sl_hw hm;
			int64_t dx[2] = { 64, 512 }, dw[2] = { 512, mm[i].n };
			int64_t dy[2] = { 64, mm[i].n };
			int in[2], y;

			load(write_profile("unal", ", \"matmul_efficiency\": 1,"
			    " \"memory_bandwidth\": 1e15"), &hm);
			hm.unaligned_flops = mm[i].unaligned;
			sl_error_clear(&err);
			in[0] = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16,
			    SL_ROLE_INPUT, &err);
			in[1] = sl_graph_add_tensor(g, "w", 2, dw, SL_DT_BF16,
			    SL_ROLE_PARAMETER, &err);
			y = sl_graph_add_tensor(g, "y", 2, dy, SL_DT_BF16,
			    SL_ROLE_ACTIVATION, &err);
			assert_int_equal(sl_graph_add_op(g, "head", SL_OP_MATMUL, 2,
			    in, 1, &y, NULL, &err), 0);
			assert_int_equal(sl_graph_validate(g, NULL, &err), SL_OK);
			sl_recipe_default(&r);
			r.precision = mm[i].p;
			s = space(g, &hm, 1, (int[]){ 1 }, &r);
			sl_node_compute(s, 0, 0, NULL, &c);
			if (c.fwd_ns != mm[i].fwd)
				fail_msg("case %zu: %lld ns, want %lld", i,
				    (long long)c.fwd_ns, (long long)mm[i].fwd);
			sl_space_free(s);
			sl_graph_free(g);
		}
	}
	{
		/*
		 * FP8 (Transformer Engine) on fc1 of the MLP, FP8 FLOPs free:
		 * the GEMM reads x (8 x 512) and w1 (512 x 2048) at 1 byte and
		 * writes h (8 x 2048) at 2: 4,096 + 1,048,576 + 32,768 bytes;
		 * x, made by no norm or activation, is cast with its transpose
		 * (2 read, 1 + 1 written: 16,384 bytes): 1,101,824 bytes, 551
		 * ns.  Backward twice the GEMMs' bytes and the output
		 * gradient's cast (4 x 16,384): 2,236,416 bytes, 1118 ns.
		 * Once a step, at 0.84 of the 2.0e12 B/s (SL_OPTIM_BW_SHARE):
		 * w1's cast (4 x 1,048,576 bytes, 2497 ns) and AdamW over fp32
		 * master, m, v and main gradient with the copy to the bf16
		 * weight, the norm and the buffer cleared (42 bytes, 26,214
		 * ns).  Memory: w1's FP8 copy and transpose (2
		 * bytes an element) and its module's scaling history (5 x 1026
		 * x 4 bytes) as buffers; x kept at 1 byte for the weight
		 * gradient; 18 bytes of states an element.  fc2 reads g, made
		 * by the GELU: no cast of its own.
		 */
		sl_graph *g = tu_mlp();
		sl_mem mem;
		sl_hw h8 = hw;

		h8.fp8_flops = 2 * h8.flops;
		sl_recipe_default(&r);
		r.precision = SL_PREC_FP8;
		s = space(g, &h8, 1, (int[]){ 1 }, &r);
		assert_true(sl_fp8_matmul(s, &g->ops[0]) && sl_fp8_matmul(s, &g->ops[2]));
		sl_node_compute(s, 0, 0, NULL, &c);
		assert_int_equal(c.fwd_ns, 551);
		assert_int_equal(c.bwd_ns, 1118);
		assert_int_equal(c.optim_ns, 26214 + 2497);
		sl_node_cost(s, 0, 0, NULL, &mem, NULL);
		assert_int_equal(mem.buffers, 2 * 1048576 + 5 * 1026 * 4);
		assert_int_equal(mem.acts, 8 * 512);
		assert_int_equal(mem.params + mem.grads + mem.optim, 18 * 1048576);
		sl_node_compute(s, 2, 0, NULL, &c);
		/* g 8 x 2048 and w2 at 1 byte, y 8 x 512 at 2, no cast forward:
		 * 1,073,152 bytes, 537 ns */
		assert_int_equal(c.fwd_ns, 537);
		sl_space_free(s);
		/* without FP8 units the recipe is refused */
		{
			sl_mesh m;
			sl_space_opts o;
			sl_error err;
			sl_space_opts_default(&o);
			o.recipe = r;
			sl_error_clear(&err);
			assert_int_equal(sl_mesh_make(&hw, 1, (int[]){ 1 }, &m, &err), SL_OK);
			assert_null(sl_space_build(g, &m, &o, &err));
			assert_int_equal(err.code, SL_EINPUT);
			assert_non_null(strstr(err.msg, "no FP8 matrix units"));
		}
		sl_graph_free(g);
	}
	{
		/*
		 * recipe.shard_states on 4 data-parallel devices: fc1's w1
		 * (1,048,576 elements, replicated) has its optimizer states
		 * divided over the 4, so the step updates 262,144 elements
		 * (x 38 bytes at 0.84 x 2e12 B/s: 5929 ns), then DeepSpeed
		 * all-gathers the bf16 weight (2 MiB over the 4) after it;
		 * Megatron-LM with --overlap-param-gather, and the
		 * per-operator plan, hide that gather behind the next
		 * forward.  The gradient's all-reduce is a reduce-scatter.
		 */
		sl_graph *g = tu_mlp();
		sl_mesh m;
		sl_error err;
		int si;
		int64_t ag, plain;
		struct grad_colls got = { 0 };

		sl_recipe_default(&r);
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		si = sl_space_find_strategy(s, 0, "dp");
		assert_true(si >= 0);
		sl_node_compute(s, 0, si, NULL, &c);
		plain = c.optim_ns;
		assert_int_equal(c.optim_elems, 1048576);
		sl_space_free(s);
		r.shard_states = 1;
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		sl_node_compute(s, 0, si, NULL, &c);
		assert_int_equal(c.param_elems, 1048576);
		assert_int_equal(c.optim_elems, 262144);
		assert_int_equal(c.optim_ns, 5929);
		assert_int_equal(c.gather_ns, 0);
		sl_space_free(s);
		r.framework = SL_FW_DEEPSPEED;
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		sl_node_compute(s, 0, si, NULL, &c);
		sl_error_clear(&err);
		assert_int_equal(sl_mesh_make(&hw, 1, (int[]){ 4 }, &m, &err), SL_OK);
		ag = sl_coll_time(SL_COLL_ALL_GATHER, 4, 2 * 1048576, &m.axes[0].link);
		assert_true(ag > 0);
		assert_int_equal(c.optim_ns, 5929 + ag);
		assert_int_equal(c.gather_ns, ag);
		assert_true(plain == 23718);
		sl_space_free(s);
		/* the per-operator plan without overlap gathers after the step */
		r.framework = SL_FW_FREE;
		r.no_grad_overlap = true;
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		sl_node_compute(s, 0, si, NULL, &c);
		assert_int_equal(c.gather_ns, ag);
		r.no_grad_overlap = false;
		sl_space_free(s);
		r.framework = SL_FW_MEGATRON;
		r.precision = SL_PREC_MEGATRON;
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		sl_node_compute(s, 0, si, NULL, &c);
		/* 42 bytes (Megatron-LM clips and clears the gradient) */
		assert_int_equal(c.optim_ns, 6554);
		assert_int_equal(c.gather_ns, 0);
		r.no_grad_overlap = true;
		sl_space_free(s);
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		sl_node_compute(s, 0, si, NULL, &c);
		assert_int_equal(c.optim_ns, 6554 + ag);
		got.s = s;
		sl_node_colls(s, 0, si, grad_coll, &got);
		assert_int_equal(got.n, 1);
		assert_int_equal(got.coll[0], SL_COLL_REDUCE_SCATTER);
		{
			/*
			 * As they run, with their bytes: the fp32 main
			 * gradient (4 B x 1,048,576) reduce-scattered over
			 * the 4, the bf16 weight (2 B x 1,048,576)
			 * all-gathered after the step; no all-reduce.  The
			 * gather's time is the optimizer's gather_ns.
			 */
			sl_comm cm;
			char *text;

			sl_error_clear(&err);
			sl_node_cost(s, 0, si, NULL, NULL, &cm);
			assert_int_equal(cm.bytes[SL_COLL_ALL_REDUCE], 0);
			assert_int_equal(cm.bytes[SL_COLL_REDUCE_SCATTER], 4 * 1048576);
			assert_int_equal(cm.bytes[SL_COLL_ALL_GATHER], 2 * 1048576);
			assert_int_equal(cm.ns[SL_COLL_ALL_GATHER], ag);
			assert_int_equal(cm.ns[SL_COLL_REDUCE_SCATTER],
			    sl_coll_time(SL_COLL_REDUCE_SCATTER, 4, 4 * 1048576,
			    &m.axes[0].link));
			assert_int_equal(c.gather_ns, ag);
			/* explain says so, with the bytes */
			int ch[3] = { si, sl_space_find_strategy(s, 1, "dp"),
			    sl_space_find_strategy(s, 2, "dp") };
			assert_true(ch[1] >= 0 && ch[2] >= 0);
			text = sl_explain(s, ch, 0, si, &err);
			assert_non_null(text);
			assert_non_null(strstr(text, "reduce-scatter over axis 0 (4 devices) "
			    "of 4,194,304 bytes"));
			assert_non_null(strstr(text, "after the optimizer step"));
			assert_non_null(strstr(text, "all-gather over axis 0 (4 devices) "
			    "of 2,097,152 bytes"));
			assert_null(strstr(text, "all-reduce"));
			free(text);
		}
		sl_space_free(s);
		r.shard_states = 0;
		s = space(g, &hw, 1, (int[]){ 4 }, &r);
		got.s = s;
		got.n = 0;
		sl_node_colls(s, 0, si, grad_coll, &got);
		assert_int_equal(got.n, 1);
		assert_int_equal(got.coll[0], SL_COLL_ALL_REDUCE);
		sl_space_free(s);
		sl_graph_free(g);
	}
	/* the optimizer's bytes a parameter (doc/cost-model.md) */
	sl_recipe_default(&r);
	assert_true(sl_recipe_optim_bytes(&r) == 38);	/* 26 + 6 + 6 */
	r.precision = SL_PREC_AMP;
	assert_true(sl_recipe_optim_bytes(&r) == 40);	/* 28 + 12 */
	r.optimizer = SL_OPTIM_FOREACH;
	assert_true(sl_recipe_optim_bytes(&r) == 92);	/* 72 + 8 + 12 */
	r.no_clip_grad = true;
	assert_true(sl_recipe_optim_bytes(&r) == 80);
	sl_recipe_default(&r);
	r.precision = SL_PREC_MEGATRON;
	r.framework = SL_FW_MEGATRON;
	assert_true(sl_recipe_optim_bytes(&r) == 42);	/* 28 + 6 + 4 + 4 */
	r.no_clip_grad = true;
	assert_true(sl_recipe_optim_bytes(&r) == 38);
}

/* One measured step's prediction (tests/data/fidelity/torch_step.py's row
 * o) on the profile hw; < 0 when the row names what shardlab cannot. */
static double
predict_row_peak(json_t *o, const sl_hw *hw, int64_t *peak)
{
	sl_gen_config gc;
	sl_recipe r;
	sl_space *s;
	sl_graph *g;
	sl_error err;
	sl_eval ev;
	int fam, prec, *choice;
	double got = -1;
	const char *att = json_string_value(json_object_get(o, "attention"));

	fam = sl_family_from_name(json_string_value(json_object_get(o, "family")));
	prec = sl_precision_from_name(json_string_value(json_object_get(o, "precision")));
	if (fam < 0 || prec < 0 || att == NULL)
		return -1;
	sl_gen_defaults((sl_family)fam, &gc);
	gc.layers = (int)json_integer_value(json_object_get(o, "layers"));
	gc.hidden = json_integer_value(json_object_get(o, "hidden"));
	gc.heads = json_integer_value(json_object_get(o, "heads"));
	gc.kv_heads = json_integer_value(json_object_get(o, "kv_heads"));
	gc.ffn = json_integer_value(json_object_get(o, "ffn"));
	gc.seq = json_integer_value(json_object_get(o, "seq"));
	gc.vocab = json_integer_value(json_object_get(o, "vocab"));
	gc.batch = json_integer_value(json_object_get(o, "micro_batch"));
	sl_error_clear(&err);
	if ((g = sl_gen(&gc, &err)) == NULL)
		return -1;
	sl_recipe_default(&r);
	/* torch_step.py writes its LLaMA as torchtitan does (the key/value
	 * heads repeated before SDPA, kinds.c sl_attention_saved) */
	if (fam == SL_FAM_LLAMA)
		r.framework = SL_FW_TORCHTITAN;
	r.precision = (sl_precision)prec;
	r.attention = strcmp(att, "naive") == 0 ? SL_ATTN_NAIVE : SL_ATTN_FLASH;
	r.optimizer = (sl_optimizer)sl_optimizer_from_name(
	    json_string_value(json_object_get(o, "optimizer")));
	r.no_clip_grad = !json_is_true(json_object_get(o, "clip_grad"));
	s = space(g, hw, 1, (int[]){ 1 }, &r);
	choice = sl_xcalloc(g->n_ops, sizeof *choice);
	if (sl_evaluate(s, choice, 0, &ev, &err) == SL_OK) {
		got = ev.step_ns / 1e9;
		sl_eval_free(&ev);
	}
	if (peak != NULL) {
		sl_timeline tl;

		*peak = -1;
		if (sl_timeline_build(s, choice, 0, false, &tl, &err) == SL_OK) {
			*peak = tl.alloc_peak;
			sl_timeline_free(&tl);
		}
	}
	free(choice);
	sl_space_free(s);
	sl_graph_free(g);
	return got;
}

/* Whether two step rows name the same shape, recipe and batch. */
static bool
same_step(json_t *a, json_t *b)
{
	static const char *const keys[] = { "family", "layers", "hidden",
	    "heads", "kv_heads", "ffn", "seq", "vocab", "precision",
	    "attention", "micro_batch", "optimizer" };

	for (size_t i = 0; i < SL_ARRAY_LEN(keys); i++)
		if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])))
			return false;
	return true;
}

/*
 * Why a measured step is not held to the model, or NULL.  share: the part
 * of the prediction that the launch floor adds (the prediction over the
 * same with no floor, less one).
 *   - FP8 not run by Transformer Engine: shardlab's fp8 recipe is TE's
 *     (fused casts, FP8 weight copies kept); torch._scaled_mm with eager
 *     casts measured 1.8-3.2x slower than bf16, an implementation the
 *     recipe does not describe.
 *   - a floor share above 25%: the host's issue of eager kernels bounds
 *     the step, and it varies from machine to machine (two runs of the
 *     same rows on one H100 differ by up to 33%; the floor measured 17 to
 *     27 us on one kind of GPU).
 *   - a step without clipping measured slower than the same step with it
 *     (which does strictly more): a disturbed measurement;
 *   - a step measured slower on an H200 than on an H100 (slower): the H200
 *     has more of every figure the GPU's side of a step depends on
 *     (compute, bandwidth, memory), so the host made the difference.
 */
static const char *
not_held(json_t *rows, size_t i, double share, json_t *slower)
{
	json_t *o = json_array_get(rows, i);
	const char *fp8 = json_string_value(json_object_get(o, "fp8_impl"));

	if (strcmp(json_string_value(json_object_get(o, "precision")), "fp8") == 0 &&
	    (fp8 == NULL || strcmp(fp8, "transformer_engine") != 0))
		return "FP8 without Transformer Engine";
	if (share > 0.25)
		return "host-bound";
	if (!json_is_true(json_object_get(o, "clip_grad")))
		for (size_t j = 0; j < json_array_size(rows); j++) {
			json_t *c = json_array_get(rows, j);

			if (j != i && json_is_true(json_object_get(c, "clip_grad")) &&
			    same_step(o, c) &&
			    json_number_value(json_object_get(c, "step_s")) <
			    json_number_value(json_object_get(o, "step_s")))
				return "slower than with clipping";
		}
	for (size_t j = 0; slower != NULL && j < json_array_size(slower); j++) {
		json_t *c = json_array_get(slower, j);

		if (same_step(o, c) && json_equal(json_object_get(o, "clip_grad"),
		    json_object_get(c, "clip_grad")) &&
		    json_number_value(json_object_get(c, "step_s")) <
		    json_number_value(json_object_get(o, "step_s")))
			return "host-bound (slower than on an H100)";
	}
	return NULL;
}

static double
predict_row(json_t *o, const sl_hw *hw)
{
	return predict_row_peak(o, hw, NULL);
}

/*
 * Whole training steps with their optimizer, measured by
 * tests/data/fidelity/torch_step.py on a GPU whose profile is bundled
 * (steps-*.jsonl here or in the shared fidelity folder): each within 10%
 * plus half the part of the prediction the launch floor makes (the floor
 * is the host's issue cost, which varies by as much between machines),
 * except the rows not_held() names, which are printed; and the peak of
 * every amp row's timeline against the allocator's.
 */
static void
test_whole_steps(void **state)
{
	static const struct { const char *gpu, *hw; } gpus[] = {
		{ "H100", "h100-nvlink" }, { "H200", "h200-nvlink" },
	};
	const char *dirs[2] = { getenv("SHARED_DIR"), getenv("TESTS_SRCDIR") };
	int held = 0, bad = 0;
	json_t *h100 = NULL;	/* the last H100 rows read */

	(void)state;
	for (int di = 0; di < 2; di++) {
		for (int k = 0; k < 3 && dirs[di] != NULL; k++) {
			static const char *const names[] = { "steps-h100.jsonl",
			    "steps-h200.jsonl", "steps.jsonl" };
			char path[1024], line[8192];
			json_t *rows = json_array();
			const char *hwname = NULL;
			sl_hw hw;
			FILE *f;

			snprintf(path, sizeof path, di == 0 ? "%s/fidelity/%s" :
			    "%s/data/fidelity/%s", dirs[di], names[k]);
			if ((f = fopen(path, "r")) == NULL) {
				json_decref(rows);
				continue;
			}
			while (fgets(line, sizeof line, f) != NULL) {
				json_t *o = json_loads(line, 0, NULL);
				const char *gpu = json_string_value(json_object_get(o, "gpu"));
				const char *kind = json_string_value(json_object_get(o, "kind"));

				for (size_t i = 0; gpu != NULL && i < SL_ARRAY_LEN(gpus); i++)
					if (strstr(gpu, gpus[i].gpu) != NULL)
						hwname = gpus[i].hw;
				if (kind != NULL && strcmp(kind, "train_step") == 0)
					json_array_append(rows, o);
				json_decref(o);
			}
			fclose(f);
			if (hwname == NULL) {
				json_decref(rows);
				continue;
			}
			load(hwname, &hw);
			for (size_t i = 0; i < json_array_size(rows); i++) {
				json_t *o = json_array_get(rows, i);
				double want = json_number_value(json_object_get(o, "step_s"));
				int64_t peak, mpeak = json_integer_value(json_object_get(o,
				    "peak_allocated"));
				double got = predict_row_peak(o, &hw, &peak), share, err;
				sl_hw h0 = hw;
				const char *why;

				h0.launch_overhead = 1e-9;
				share = got / predict_row(o, &h0) - 1;
				if (!(got > 0 && want > 0))
					continue;
				err = got / want - 1;
				why = not_held(rows, i, share,
				    strcmp(hwname, "h200-nvlink") == 0 ? h100 : NULL);
				print_message("%s: %s %s %s mbs %lld %s%s: predicted %.1f "
				    "ms (floor %.0f%%), measured %.1f ms (%+.1f%%%s%s)\n",
				    path, json_string_value(json_object_get(o, "family")),
				    json_string_value(json_object_get(o, "precision")),
				    json_string_value(json_object_get(o, "attention")),
				    (long long)json_integer_value(json_object_get(o, "micro_batch")),
				    json_string_value(json_object_get(o, "optimizer")),
				    json_is_true(json_object_get(o, "clip_grad")) ? " clip" : "",
				    got * 1e3, 100 * share, want * 1e3, 100 * err,
				    why ? "; not held: " : "", why ? why : "");
				print_message("  peak: predicted %.2f GiB, measured %.2f GiB (%+.1f%%)\n",
				    peak / 1073741824.0, mpeak / 1073741824.0,
				    100.0 * ((double)peak / (double)mpeak - 1));
				/* The peak, where the script runs shardlab's recipe
				 * as it describes it (amp: its bf16 rows keep fp32
				 * copies of the gradients for the update): never more
				 * than 3% under the allocator's, nor 10% over. */
				if (strcmp(json_string_value(json_object_get(o, "precision")),
				    "amp") == 0 && (peak < 0.97 * (double)mpeak ||
				    peak > 1.10 * (double)mpeak)) {
					bad++;
					print_message("  peak beyond -3%%..+10%%\n");
				}
				if (why != NULL)
					continue;
				held++;
				if (fabs(err) > 0.10 + share / 2) {
					bad++;
					print_message("  beyond %.1f%%\n", 100 * (0.10 + share / 2));
				}
			}
			if (strcmp(hwname, "h100-nvlink") == 0) {
				json_decref(h100);
				h100 = rows;
			} else
				json_decref(rows);
		}
	}
	json_decref(h100);
	print_message("%d measured steps held, %d beyond their bound\n", held, bad);
	if (held == 0)
		skip();
	assert_int_equal(bad, 0);
}

static int
setup(void **state)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/test_compute.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_fields),
		cmocka_unit_test(test_profile_bad),
		cmocka_unit_test(test_kernels_by_hand),
		cmocka_unit_test(test_every_kind_runs),
		cmocka_unit_test(test_h100_gpt17),
		cmocka_unit_test(test_h200_gpt17),
		cmocka_unit_test(test_step_time),
		cmocka_unit_test(test_overlap_and_accumulation),
		cmocka_unit_test(test_step_terms_by_hand),
		cmocka_unit_test(test_whole_steps),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
