/*
 * test_framework.c: what Megatron-LM, torchtitan and DeepSpeed run, as
 * facts from their own code (each rule with the file it comes from), the
 * plans the frameworks take on a mesh, the exports of such plans, and a
 * pipeline plan file reopened with nothing but itself.
 */
#include "testutil.h"
#include "internal.h"
#include "gpt3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A layout of one framework: 8 devices as pp x dp x cp x tp, even stages
 * of the model's layers, m micro-batches of mbs samples. */
static void
layout(sl_layout *l, sl_framework fw, int pp, int dp, int cp, int tp,
    int64_t mbs, int64_t m, const int *layers, const sl_recompute *rec)
{
	memset(l, 0, sizeof *l);
	l->framework = fw;
	l->pp = pp;
	l->vpp = 1;
	l->dp = dp;
	l->cp = cp;
	l->tp = tp;
	l->world = pp * dp * cp * tp;
	l->schedule = SL_SCHED_1F1B;
	l->n_stages = pp;
	l->stage_layers = layers;
	l->stage_recompute = rec;
	l->micro_batch = mbs;
	l->micro_batches = m;
	l->global_batch = mbs * dp * m;
	l->precision = sl_framework_precision(fw);
	l->zero = fw == SL_FW_TORCHTITAN ? 3 : 1;
}

static void
gen_arch(sl_family fam, int layers, int heads, int kv, int seq, sl_arch *a)
{
	sl_gen_config c;
	sl_graph *g;
	sl_error err;

	sl_gen_defaults(fam, &c);
	c.layers = layers;
	c.hidden = 64 * heads;
	c.heads = heads;
	c.kv_heads = kv;
	c.seq = seq;
	c.ffn = 0;		/* the family's rule */
	c.vocab = 1000;
	c.batch = 1;
	sl_error_clear(&err);
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(sl_arch_of(g, a, &err), SL_OK);
	sl_graph_free(g);
}

/* The world and the global batch of l's degrees and batches. */
static sl_layout *
fix(sl_layout *l)
{
	l->world = l->pp * l->dp * l->cp * l->tp;
	l->global_batch = l->micro_batch * l->dp * l->micro_batches;
	return l;
}

#define RUNS(l, a) sl_layout_check(fix(l), (a), why, sizeof why)
#define REFUSES(l, a, text) do {					\
	assert_false(RUNS((l), (a)));					\
	if (strstr(why, (text)) == NULL)				\
		fail_msg("expected \"%s\", got \"%s\"", (text), why);	\
} while (0)

/* ---------------------------------------------------------- the model */

static void
test_arch(void **state)
{
	sl_arch a;

	(void)state;
	/* LLaMA: RMSNorm, SwiGLU, RoPE (no position table), untied output,
	 * no biases, no dropout, grouped key/value heads */
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 512, &a);
	assert_int_equal(a.family, SL_FAM_LLAMA);
	assert_int_equal(a.layers, 4);
	assert_int_equal(a.hidden, 512);
	assert_int_equal(a.heads, 8);
	assert_int_equal(a.kv_heads, 2);
	assert_int_equal(a.ffn, sl_gen_ffn(SL_FAM_LLAMA, 512));
	assert_int_equal(a.seq, 512);
	assert_false(a.tied);
	assert_false(a.bias);
	assert_true(a.dropout == 0.0);
	/* GPT: pre-LN, tied embeddings, biases, dropout 0.1 */
	gen_arch(SL_FAM_GPT, 2, 4, 4, 128, &a);
	assert_int_equal(a.family, SL_FAM_GPT);
	assert_int_equal(a.ffn, 4 * 256);
	assert_true(a.tied);
	assert_true(a.bias);
	assert_true(a.dropout == 0.1);
	/* BERT: post-LN */
	gen_arch(SL_FAM_BERT, 2, 4, 4, 128, &a);
	assert_int_equal(a.family, SL_FAM_BERT);
}

/* --------------------------------------------------------- Megatron-LM */

static void
test_megatron_rules(void **state)
{
	static const int even[2] = { 2, 2 }, odd[2] = { 3, 1 };
	static const sl_recompute none[2] = { SL_RECOMP_NONE, SL_RECOMP_NONE };
	static const sl_recompute mixed[2] = { SL_RECOMP_FULL, SL_RECOMP_NONE };
	sl_layout l;
	sl_arch a;
	char why[256];

	(void)state;
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 512, &a);
	layout(&l, SL_FW_MEGATRON, 2, 2, 1, 2, 1, 4, even, none);
	assert_true(RUNS(&l, &a));
	/* uneven stages: first and last counts or a layout (arguments.py,
	 * transformer_config.py) */
	l.stage_layers = odd;
	assert_true(RUNS(&l, &a));
	l.stage_layers = even;
	/* transformer_config.py __post_init__: num_query_groups (2) must be
	 * a multiple of tensor_model_parallel_size */
	l.tp = 4;
	l.dp = 1;
	REFUSES(&l, &a, "key/value heads are not a multiple of tensor parallel 4");
	/* and the heads */
	gen_arch(SL_FAM_GPT, 4, 6, 6, 512, &a);
	REFUSES(&l, &a, "attention heads are not a multiple of tensor parallel 4");
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 512, &a);
	l.tp = 2;
	l.dp = 2;
	/* arguments.py validate_args: seq-length a multiple of 2 x cp */
	l.cp = 3;
	l.dp = 1;
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 500, &a);
	REFUSES(&l, &a, "sequence 500 is not a multiple of 2 x context parallel 3");
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 512, &a);
	layout(&l, SL_FW_MEGATRON, 2, 2, 1, 2, 1, 4, even, none);
	/* schedules.py get_forward_backward_func: no GPipe */
	l.schedule = SL_SCHED_GPIPE;
	REFUSES(&l, &a, "Megatron-LM has no GPipe schedule");
	/* schedules.py, interleaving: micro-batches a multiple of the
	 * pipeline ranks */
	{
		static const int four[4] = { 1, 1, 1, 1 };
		static const sl_recompute n4[4] = { 0, 0, 0, 0 };
		l.schedule = SL_SCHED_INTERLEAVED;
		l.vpp = 2;
		l.n_stages = 4;
		l.stage_layers = four;
		l.stage_recompute = n4;
		l.micro_batches = 3;
		REFUSES(&l, &a, "3 micro-batches are not a multiple of 2 pipeline ranks");
		l.micro_batches = 4;
		assert_true(RUNS(&l, &a));
	}
	/* transformer_config.py: one recompute granularity for all */
	layout(&l, SL_FW_MEGATRON, 2, 2, 1, 2, 1, 4, even, mixed);
	REFUSES(&l, &a, "stages recompute differently");
	/* arguments.py: --bf16/--fp16 weights; no fp32-weight autocast */
	layout(&l, SL_FW_MEGATRON, 2, 2, 1, 2, 1, 4, even, none);
	l.precision = SL_PREC_AMP;
	REFUSES(&l, &a, "no fp32-weights autocast");
	/* --fp16 runs; validate_args: "Expert parallelism is not supported
	 * with fp16 training." */
	l.precision = SL_PREC_FP16;
	assert_true(RUNS(&l, &a));
	a.moe.experts = 4;		/* a mixture of 4 experts over 2 ranks */
	a.moe.moe_ffn = 512;
	l.ep = 2;
	REFUSES(&l, &a, "no expert parallelism in fp16");
	l.precision = SL_PREC_MEGATRON;
	assert_true(RUNS(&l, &a));
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 512, &a);
	/* the batch: global = micro x data parallel x micro-batches
	 * (num_microbatches_calculator.py) */
	layout(&l, SL_FW_MEGATRON, 2, 2, 1, 2, 1, 4, even, none);
	l.global_batch = 9;
	assert_false(sl_layout_check(&l, &a, why, sizeof why));
	assert_non_null(strstr(why, "a global batch of 9 is not"));
}

/* ---------------------------------------------------------- torchtitan */

static void
test_torchtitan_rules(void **state)
{
	static const int even[2] = { 2, 2 };
	static const sl_recompute none[2] = { SL_RECOMP_NONE, SL_RECOMP_NONE };
	static const sl_recompute sel[2] = { SL_RECOMP_SELECTIVE, SL_RECOMP_SELECTIVE };
	sl_layout l;
	sl_arch a, g;
	char why[256];

	(void)state;
	gen_arch(SL_FAM_LLAMA, 4, 8, 2, 512, &a);
	gen_arch(SL_FAM_GPT, 4, 8, 8, 512, &g);
	layout(&l, SL_FW_TORCHTITAN, 2, 2, 1, 2, 1, 4, even, none);
	assert_true(RUNS(&l, &a));
	/* torch/distributed/tensor/parallel/style.py: nn.Linear by heads;
	 * GPT-2's fused Conv1D cannot be split */
	REFUSES(&l, &g, "need a LLaMA-family model");
	/* torch/distributed/pipelining/schedules.py: as many micro-batches
	 * as ranks */
	l.micro_batches = 1;
	REFUSES(&l, &a, "1 micro-batches are fewer than 2 pipeline ranks");
	/* job_config.py ActivationCheckpoint: full, or selective by
	 * operator policy (selective_ac_option "op"), which is what
	 * selective costs under torchtitan */
	layout(&l, SL_FW_TORCHTITAN, 2, 2, 1, 2, 1, 4, even, sel);
	assert_true(RUNS(&l, &a));
	/* fp32 parameters under mixed_precision_param */
	layout(&l, SL_FW_TORCHTITAN, 2, 2, 1, 2, 1, 4, even, none);
	l.precision = SL_PREC_BF16;
	REFUSES(&l, &a, "torchtitan keeps fp32 parameters");
	/* job_config.py mixed_precision_param: bfloat16 or float32 */
	l.precision = SL_PREC_FP16;
	REFUSES(&l, &a, "torchtitan keeps fp32 parameters");
	/* parallelize.py: DDP only without other parallelism */
	layout(&l, SL_FW_TORCHTITAN, 2, 2, 1, 2, 1, 4, even, none);
	l.zero = 0;
	REFUSES(&l, &a, "replicated data parallel (DDP) with other parallelism");
	/* enable_cpu_offload moves parameters and gradients too */
	layout(&l, SL_FW_TORCHTITAN, 2, 2, 1, 2, 1, 4, even, none);
	l.offload_optimizer = true;
	REFUSES(&l, &a, "not the optimizer alone");
}

/* ----------------------------------------------------------- DeepSpeed */

static void
test_deepspeed_rules(void **state)
{
	static const int even[2] = { 2, 2 }, odd[2] = { 3, 1 };
	static const sl_recompute none[2] = { SL_RECOMP_NONE, SL_RECOMP_NONE };
	sl_layout l;
	sl_arch a;
	char why[256];

	(void)state;
	gen_arch(SL_FAM_GPT, 4, 8, 8, 512, &a);
	layout(&l, SL_FW_DEEPSPEED, 2, 4, 1, 1, 1, 4, even, none);
	assert_true(RUNS(&l, &a));
	/* pipe/topology.py and config.py _batch_assertion: tensor-parallel
	 * ranks would count as data parallel */
	l.tp = 2;
	l.dp = 2;
	REFUSES(&l, &a, "no tensor or context parallelism");
	/* pipe/engine.py: ZeRO-2 and ZeRO-3 are incompatible with pipeline
	 * parallelism */
	layout(&l, SL_FW_DEEPSPEED, 2, 4, 1, 1, 1, 4, even, none);
	l.zero = 3;
	REFUSES(&l, &a, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism");
	/* without a pipeline ZeRO-3 runs */
	{
		static const int one[1] = { 4 };
		static const sl_recompute n1[1] = { SL_RECOMP_NONE };
		layout(&l, SL_FW_DEEPSPEED, 1, 8, 1, 1, 1, 4, one, n1);
		l.zero = 3;
		assert_true(RUNS(&l, &a));
	}
	/* pipe/module.py: even partitions; and one 1F1B schedule */
	layout(&l, SL_FW_DEEPSPEED, 2, 4, 1, 1, 1, 4, odd, none);
	REFUSES(&l, &a, "PipelineModule partitions layers evenly");
	layout(&l, SL_FW_DEEPSPEED, 2, 4, 1, 1, 1, 4, even, none);
	l.schedule = SL_SCHED_GPIPE;
	REFUSES(&l, &a, "1F1B with one stage per rank");
	/* precision_config.py: bf16 or fp16 (loss-scaled) over fp32 master
	 * weights, or fp32; no autocast of fp32 weights */
	layout(&l, SL_FW_DEEPSPEED, 2, 4, 1, 1, 1, 4, even, none);
	l.precision = SL_PREC_FP16;
	assert_true(RUNS(&l, &a));
	l.precision = SL_PREC_AMP;
	REFUSES(&l, &a, "DeepSpeed trains in bf16 or fp16");
}

/* --------------------------------------------- the frameworks' plans */

/* The space of a small GPT on a 2 x 2 mesh of dp and tp. */
static sl_space *
gpt_space(sl_graph **g)
{
	sl_gen_config c;
	sl_hw hw;
	sl_mesh m;
	sl_space_opts so;
	sl_error err;
	int shape[2] = { 2, 2 };

	sl_gen_defaults(SL_FAM_GPT, &c);
	c.batch = 4;
	sl_error_clear(&err);
	*g = sl_gen(&c, &err);
	assert_non_null(*g);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, 2, shape, &m, &err), SL_OK);
	sl_space_opts_default(&so);
	return sl_space_build(*g, &m, &so, &err);
}

static const char *
strat_of(const sl_space *s, const int *choice, const char *op)
{
	int v = sl_graph_find_op(s->g, op);

	assert_true(v >= 0);
	return s->ops[v].strat[choice[v]].name;
}

static void
test_framework_choice(void **state)
{
	static const sl_axis_role role[2] = { SL_AXIS_DP, SL_AXIS_TP };
	sl_graph *g;
	sl_space *s = gpt_space(&g);
	int *c = calloc((size_t)g->n_ops, sizeof *c);
	char why[256];

	(void)state;
	assert_non_null(s);
	/* Megatron-LM: column-parallel qkv and fc1, row-parallel proj and
	 * fc2, heads, norms on the sequence (megatron/core/tensor_parallel/
	 * layers.py, megatron/core/transformer/transformer_layer.py) */
	assert_int_equal(sl_framework_choice(s, role, 0, false, c, why, sizeof why), SL_OK);
	assert_string_equal(strat_of(s, c, "layer0.qkv"), "dp0.col1");
	assert_string_equal(strat_of(s, c, "layer0.proj"), "dp0.row1");
	assert_string_equal(strat_of(s, c, "layer0.attn"), "dp0.head1");
	assert_string_equal(strat_of(s, c, "layer0.fc1"), "dp0.col1");
	assert_string_equal(strat_of(s, c, "layer0.fc2"), "dp0.row1");
	assert_string_equal(strat_of(s, c, "layer0.ln1"), "dp0.seq1");
	assert_string_equal(strat_of(s, c, "embed"), "dp0.vocab1");
	/* every choice keeps the axes' contract */
	for (int v = 0; v < g->n_ops; v++)
		assert_true(sl_strategy_roles_ok(s, v, &s->ops[v].strat[c[v]], role));
	/* FSDP (torchtitan): the same split with the parameters sharded
	 * over dp; a norm's weight, replicated over tp too, stays whole */
	assert_int_equal(sl_framework_choice(s, role, 0, true, c, why, sizeof why), SL_OK);
	assert_string_equal(strat_of(s, c, "layer0.qkv"), "dp0.col1+z");
	assert_string_equal(strat_of(s, c, "layer0.ln1"), "dp0.seq1");
	for (int v = 0; v < g->n_ops; v++)
		assert_true(sl_strategy_roles_ok(s, v, &s->ops[v].strat[c[v]], role));
	free(c);
	sl_space_free(s);
	sl_graph_free(g);
}

/* --------------------------------------------------------- the exports */

typedef struct run {
	sl_gen_config gc;
	sl_hybrid_opts o;
	sl_pipe_config c;
	int layers[8];
	sl_recompute rec[8];
} run;

/* The search's options over the generated model of r on H100s. */
static void
opts_for_gen(run *r)
{
	sl_error err;

	sl_error_clear(&err);
	sl_hybrid_opts_default(&r->o);
	assert_int_equal(sl_hw_load("h100-nvlink", &r->o.hw, &err), SL_OK);
	r->o.model = gen_model_fn;
	r->o.model_ctx = &r->gc;
}

/* A 10-layer GPT on 4 stages of 2 (tensor parallel) for Megatron-LM. */
static void
gpt10(run *r, const int *layers)
{
	sl_gen_defaults(SL_FAM_GPT, &r->gc);
	r->gc.layers = 10;
	r->gc.hidden = 512;
	r->gc.heads = 8;
	r->gc.kv_heads = 8;
	r->gc.ffn = 0;
	r->gc.seq = 256;
	opts_for_gen(r);
	r->o.devices = 8;
	r->o.global_batch = 8;
	r->o.space.recipe.framework = SL_FW_MEGATRON;
	r->o.space.recipe.precision = SL_PREC_MEGATRON;
	r->o.space.recipe.shard_states = 1;
	for (int j = 0; j < 4; j++) {
		r->layers[j] = layers[j];
		r->rec[j] = SL_RECOMP_NONE;
	}
	pipe_config(&r->c, 4, 1, 1, 2, 2, 4, r->layers, r->rec);
}

static void
test_megatron_stage_layout(void **state)
{
	static const int first_last[4] = { 1, 4, 4, 1 }, any[4] = { 3, 2, 3, 2 },
	    even[4] = { 3, 3, 2, 2 };
	run r;
	sl_pipeline pl;
	sl_error err;
	char *text;

	(void)state;
	/* equal middle stages: the first and last counts (arguments.py
	 * --decoder-first/last-pipeline-num-layers) */
	gpt10(&r, first_last);
	sl_error_clear(&err);
	if (sl_pipeline_eval(&r.o, &r.c, &pl, &err) != SL_OK)
		fail_msg("%s", err.msg);
	text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_MEGATRON, &err);
	if (text == NULL)
		fail_msg("%s", err.msg);
	assert_non_null(strstr(text, "--decoder-first-pipeline-num-layers 1 \\\n"));
	assert_non_null(strstr(text, "--decoder-last-pipeline-num-layers 1 \\\n"));
	assert_null(strstr(text, "--pipeline-model-parallel-layout"));
	free(text);
	sl_pipeline_free(&pl);
	/* anything else: the layout, stages in rank order between E and L
	 * (pipeline_parallel_layer_layout.py) */
	gpt10(&r, any);
	assert_int_equal(sl_pipeline_eval(&r.o, &r.c, &pl, &err), SL_OK);
	text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_MEGATRON, &err);
	assert_non_null(text);
	assert_non_null(strstr(text, "--pipeline-model-parallel-layout \"E,t*3|t*2|t*3|t*2,L\""));
	assert_null(strstr(text, "--decoder-first"));
	free(text);
	sl_pipeline_free(&pl);
	gpt10(&r, even);
	assert_int_equal(sl_pipeline_eval(&r.o, &r.c, &pl, &err), SL_OK);
	text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_MEGATRON, &err);
	assert_non_null(strstr(text, "--pipeline-model-parallel-layout \"E,t*3|t*3|t*2|t*2,L\""));
	/* the model's arguments and the batch */
	assert_non_null(strstr(text, "--num-layers 10 \\\n"));
	assert_non_null(strstr(text, "--micro-batch-size 2 \\\n"));
	assert_non_null(strstr(text, "--global-batch-size 8 \\\n"));
	assert_non_null(strstr(text, "--use-distributed-optimizer"));
	free(text);
	/* a Megatron-LM plan is launched with Megatron-LM only */
	assert_null(sl_pipeline_export(&pl, &r.o, SL_EXPORT_DEEPSPEED, &err));
	assert_int_equal(err.code, SL_EINPUT);
	sl_pipeline_free(&pl);
}

/*
 * DeepSpeedConfig (deepspeed/runtime/config.py, _batch_assertion):
 * train_batch_size = micro x accumulation x the ranks of PipelineModule's
 * grid that are not stages.
 */
static void
test_deepspeed_batch_identity(void **state)
{
	static const int two[2] = { 5, 5 };
	run r;
	sl_pipeline pl;
	sl_error err;
	char *text, *p;
	long tb, mb, ga;

	(void)state;
	sl_gen_defaults(SL_FAM_GPT, &r.gc);
	r.gc.layers = 10;
	r.gc.seq = 256;
	opts_for_gen(&r);
	r.o.devices = 8;
	r.o.global_batch = 24;
	r.o.space.zero = false;
	r.o.space.recipe.framework = SL_FW_DEEPSPEED;
	r.o.space.recipe.shard_states = 1;
	for (int j = 0; j < 2; j++) {
		r.layers[j] = two[j];
		r.rec[j] = SL_RECOMP_NONE;
	}
	/* 2 stages of 4 data-parallel ranks, 3 micro-batches of 8 */
	pipe_config(&r.c, 2, 1, 4, 1, 8, 3, r.layers, r.rec);
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&r.o, &r.c, &pl, &err), SL_OK);
	text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_DEEPSPEED, &err);
	if (text == NULL)
		fail_msg("%s", err.msg);
	assert_non_null(p = strstr(text, "\"train_batch_size\": "));
	tb = strtol(p + 20, NULL, 10);
	assert_non_null(p = strstr(text, "\"train_micro_batch_size_per_gpu\": "));
	mb = strtol(p + 34, NULL, 10);
	assert_non_null(p = strstr(text, "\"gradient_accumulation_steps\": "));
	ga = strtol(p + 31, NULL, 10);
	assert_int_equal(tb, 24);
	assert_int_equal(tb, mb * ga * (8 / 2));
	assert_non_null(strstr(text, "\"stage\": 1"));
	assert_non_null(strstr(text, "num_stages=2"));
	free(text);
	sl_pipeline_free(&pl);
}

/*
 * The DTensor script's parallelize plans name modules of the model
 * families only: Hugging Face's LlamaForCausalLM (modeling_llama.py) and
 * torchtitan's LLaMA (torchtitan/models/llama3/model/model.py).
 */
static void
test_dtensor_names(void **state)
{
	static const char *const llama[] = { "\"self_attn.q_proj\"",
	    "\"self_attn.k_proj\"", "\"self_attn.v_proj\"", "\"self_attn.o_proj\"",
	    "\"mlp.gate_proj\"", "\"mlp.up_proj\"", "\"mlp.down_proj\"",
	    "\"input_layernorm\"", "\"post_attention_layernorm\"",
	    "\"model.embed_tokens\"", "\"model.norm\"", "\"lm_head\"" };
	static const char *const titan[] = { "\"attention.wq\"", "\"attention.wk\"",
	    "\"attention.wv\"", "\"attention.wo\"", "\"feed_forward.w1\"",
	    "\"feed_forward.w2\"", "\"feed_forward.w3\"", "\"attention_norm\"",
	    "\"ffn_norm\"", "\"tok_embeddings\"", "\"output\"" };
	static const char *const gone[] = { "attn.qkv", "attn.proj", "mlp.fc1",
	    "mlp.fc2" };
	static const int one[1] = { 2 };
	run r;
	sl_pipeline pl;
	sl_error err;
	char *text;

	(void)state;
	sl_gen_defaults(SL_FAM_LLAMA, &r.gc);
	r.gc.seq = 256;
	opts_for_gen(&r);
	r.o.devices = 4;
	r.o.global_batch = 4;
	r.o.space.recipe.framework = SL_FW_TORCHTITAN;
	r.o.space.recipe.precision = SL_PREC_AMP;
	r.layers[0] = one[0];
	r.rec[0] = SL_RECOMP_NONE;
	pipe_config(&r.c, 1, 1, 2, 2, 4, 1, r.layers, r.rec);
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&r.o, &r.c, &pl, &err), SL_OK);
	text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_DTENSOR, &err);
	if (text == NULL)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < sizeof llama / sizeof *llama; i++)
		if (strstr(text, llama[i]) == NULL)
			fail_msg("no %s", llama[i]);
	for (size_t i = 0; i < sizeof titan / sizeof *titan; i++)
		if (strstr(text, titan[i]) == NULL)
			fail_msg("no %s", titan[i]);
	for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
		assert_null(strstr(text, gone[i]));
	/* the root sharded, the precision policy, sequence and loss parallel */
	assert_non_null(strstr(text, "fully_shard(model, mesh=dp"));
	assert_non_null(strstr(text, "MixedPrecisionPolicy(param_dtype="));
	assert_non_null(strstr(text, "SequenceParallel()"));
	assert_non_null(strstr(text, "loss_parallel()"));
	assert_non_null(strstr(text, "PP, DP, CP, TP = 1, 2, 1, 2"));
	free(text);
	sl_pipeline_free(&pl);
}

/*
 * HSDP under torchtitan: a LLaMA stage on a 2x4 mesh whose two axes are
 * data parallel, the outer one left replicated by +z
 * (sl_space_opts.zero_replicate).  The layout, the TOML, the DTensor
 * script and the JSON plan carry replicate 2 x shard 4, torchtitan's
 * rule dp_replicate x dp_shard x cp x tp x pp = world
 * (torchtitan/distributed/parallel_dims.py); full sharding on the same
 * mesh is replicate 1 x shard 8.
 */
static void
test_torchtitan_hsdp(void **state)
{
	static const int one[1] = { 2 };
	static const sl_axis_role dpdp[2] = { SL_AXIS_DP, SL_AXIS_DP };
	static const int shape[2] = { 2, 4 };
	run r;
	sl_topo topo;
	sl_pipeline pl;
	sl_layout l;
	sl_error err;
	int layers[1];
	sl_recompute rec[1];
	char *text;

	(void)state;
	for (int hsdp = 0; hsdp < 2; hsdp++) {
		sl_gen_defaults(SL_FAM_LLAMA, &r.gc);
		r.gc.seq = 256;
		opts_for_gen(&r);
		sl_error_clear(&err);
		assert_int_equal(sl_topo_make(&r.o.hw, 2, shape, dpdp, &topo, &err),
		    SL_OK);
		r.o.topo = &topo;
		r.o.devices = 8;
		r.o.global_batch = 8;
		r.o.space.recipe.framework = SL_FW_TORCHTITAN;
		r.o.space.recipe.precision = SL_PREC_AMP;
		r.o.space.zero_replicate = hsdp ? 1u : 0u;
		r.layers[0] = one[0];
		r.rec[0] = SL_RECOMP_NONE;
		pipe_config(&r.c, 1, 1, 2, 4, 8, 1, r.layers, r.rec);
		if (sl_pipeline_eval(&r.o, &r.c, &pl, &err) != SL_OK)
			fail_msg("%s", err.msg);
		if (sl_pipeline_layout(&pl, &r.o, &l, layers, rec, &err) != SL_OK)
			fail_msg("%s", err.msg);
		assert_int_equal(l.zero, 3);
		assert_int_equal(l.dp, 8);
		assert_int_equal(l.dp_replicate, hsdp ? 2 : 1);
		text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_TORCHTITAN, &err);
		if (text == NULL)
			fail_msg("%s", err.msg);
		assert_non_null(strstr(text, hsdp ?
		    "data_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n" :
		    "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 8\n"));
		free(text);
		text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_DTENSOR, &err);
		if (text == NULL)
			fail_msg("%s", err.msg);
		assert_non_null(strstr(text, hsdp ? "DP_REPLICATE = 2\n" :
		    "DP_REPLICATE = 1\n"));
		assert_non_null(strstr(text, "mesh_dim_names=(\"pp\", \"dp_replicate\", "
		    "\"dp_shard\""));
		free(text);
		text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_JSON, &err);
		if (text == NULL)
			fail_msg("%s", err.msg);
		assert_non_null(strstr(text, hsdp ? "\"dp_replicate\": 2" :
		    "\"dp_replicate\": 1"));
		assert_non_null(strstr(text, hsdp ? "\"dp_shard\": 4" :
		    "\"dp_shard\": 8"));
		free(text);
		sl_pipeline_free(&pl);
	}
}

/*
 * torchtitan's selective recomputation (activation_checkpoint.mode
 * "selective", selective_ac_option "op": torchtitan/distributed/
 * activation_checkpoint.py, _apply_op_sac, save list of torchtitan/
 * models/llama3/infra/parallelize.py) on a LLaMA layer of b samples of s
 * tokens, hidden h, H query and K key/value heads of d, feed-forward f.
 * The block runs seven mm: wq, wk, wv, wo, w1, w3, w2; the policy saves
 * the odd ones (wq, wv, w1, w2) and attention's output with its
 * log-sum-exp, and recomputes wk, wo, w3 and every other operator.  By
 * hand, what the layer keeps beyond full recomputation (its input alone):
 *   2 (b s H d + b s K d)    wq, wv (bf16)
 *   2 b s H d + 4 b H s      attention's output and log-sum-exp (fp32)
 *   2 b s f + 2 b s h        w1, w2
 * and its backward re-runs 2 b s h K d (wk) + 2 b s H d h (wo) + 2 b s h f
 * (w3) FLOPs of matrix products.
 */
static void
test_torchtitan_sac(void **state)
{
	const int64_t b = 2, s = 256, h = 512, H = 8, K = 2, d = 64;
	sl_gen_config gc;
	sl_space_opts so;
	sl_graph *g;
	sl_space *sp;
	sl_mesh mesh;
	sl_hw hw;
	sl_error err;
	int64_t f, acts[2] = { 0, 0 }, want;
	const sl_layer *ly;
	static const int one[1] = { 1 };
	double rerun = 0;

	(void)state;
	sl_gen_defaults(SL_FAM_LLAMA, &gc);
	gc.layers = 2;
	gc.hidden = h;
	gc.heads = H;
	gc.kv_heads = K;
	gc.ffn = 0;
	gc.seq = s;
	gc.vocab = 1000;
	sl_error_clear(&err);
	assert_non_null(g = gen_model_fn(&gc, b, s, &err));
	f = sl_gen_ffn(SL_FAM_LLAMA, h);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, 1, one, &mesh, &err), SL_OK);
	sl_space_opts_default(&so);
	so.recipe.framework = SL_FW_TORCHTITAN;
	so.recipe.precision = SL_PREC_AMP;
	so.recipe.attention = SL_ATTN_FLASH;
	so.recipe.recompute = SL_RECOMP_SELECTIVE;
	assert_non_null(sp = sl_space_build(g, &mesh, &so, &err));
	ly = &g->layers[1];
	for (int k = 0; k < 2; k++) {
		sl_space_set_recompute(sp, k == 0 ? SL_RECOMP_FULL : SL_RECOMP_SELECTIVE);
		for (int v = ly->first_op; v < ly->first_op + ly->n_ops; v++) {
			sl_mem mm;
			sl_node_stage_mem(sp, v, 0, NULL, &mm);
			acts[k] += mm.acts;
		}
	}
	want = 2 * (b * s * H * d + b * s * K * d) + 2 * b * s * H * d +
	    4 * b * H * s + 2 * b * s * f + 2 * b * s * h;
	fprintf(stderr, "# op SAC keeps %lld bytes a layer, full recomputation "
	    "%lld; by hand %lld more\n", (long long)acts[1], (long long)acts[0],
	    (long long)want);
	/* full recomputation: the block's input, at the width its RMSNorm
	 * keeps it under autocast (fp32) */
	assert_int_equal(acts[0], 4 * b * s * h);
	assert_int_equal(acts[1] - acts[0], want);
	/* the forward the backward re-runs: wk's share of the fused qkv, wo,
	 * w3 */
	for (int v = ly->first_op; v < ly->first_op + ly->n_ops; v++)
		rerun += sl_op_model_flops(g, &g->ops[v]) * sl_op_recompute_share(sp, v);
	assert_true(rerun == (double)(2 * b * s * h * K * d + 2 * b * s * H * d * h +
	    2 * b * s * h * f));
	sl_space_free(sp);
	/*
	 * Tensor parallel 2 with sequence parallelism, torchtitan's plan:
	 * the column-parallel wq, wv, w1 and attention keep half, the
	 * row-parallel w2 its whole partial sum, and the reduce-scatters
	 * after wo and w2 (saved by name) half of b s h each; the block's
	 * input is split over the sequence.
	 */
	{
		static const int two[1] = { 2 };
		static const sl_axis_role tp[1] = { SL_AXIS_TP };
		int *c = calloc((size_t)g->n_ops, sizeof *c);
		char why[256];

		assert_int_equal(sl_mesh_make(&hw, 1, two, &mesh, &err), SL_OK);
		assert_non_null(sp = sl_space_build(g, &mesh, &so, &err));
		assert_int_equal(sl_framework_choice(sp, tp, 0, true, c, why,
		    sizeof why), SL_OK);
		acts[0] = acts[1] = 0;
		for (int k = 0; k < 2; k++) {
			sl_space_set_recompute(sp, k == 0 ? SL_RECOMP_FULL :
			    SL_RECOMP_SELECTIVE);
			for (int v = ly->first_op; v < ly->first_op + ly->n_ops; v++) {
				sl_mem mm;
				sl_node_stage_mem(sp, v, c[v], NULL, &mm);
				acts[k] += mm.acts;
			}
		}
		want = (2 * (b * s * H * d + b * s * K * d) + 2 * b * s * H * d +
		    4 * b * H * s + 2 * b * s * f) / 2 + 2 * b * s * h +
		    2 * (2 * b * s * h / 2);
		fprintf(stderr, "# tensor parallel 2: op SAC keeps %lld bytes a layer, "
		    "full recomputation %lld; by hand %lld more\n",
		    (long long)acts[1], (long long)acts[0], (long long)want);
		assert_int_equal(acts[0], 4 * b * s * h / 2);
		assert_int_equal(acts[1] - acts[0], want);
		free(c);
		sl_space_free(sp);
	}
	sl_graph_free(g);
}

/*
 * HSDP chosen by the search: a 4-layer LLaMA on 16 devices of two nodes
 * of 8 (h100-2node-ib), pipeline and tensor parallelism 1, so that every
 * configuration is 16 data-parallel ranks, sharded over all of them or
 * within each node and replicated across the two
 * (sl_hybrid_opts.dp_replicate).  hsdp_brute evaluates every
 * configuration (micro-batch size, replicate degree, recomputation) and
 * keeps the fastest that fits, as the search must.
 */
static void
hsdp_run(run *r, double inter_bw, int64_t limit)
{
	sl_error err;

	sl_gen_defaults(SL_FAM_LLAMA, &r->gc);
	r->gc.layers = 4;
	r->gc.hidden = 1024;
	r->gc.heads = 16;
	r->gc.kv_heads = 16;
	r->gc.ffn = 0;
	r->gc.seq = 512;
	opts_for_gen(r);
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("h100-2node-ib", &r->o.hw, &err), SL_OK);
	if (inter_bw > 0)
		r->o.hw.inter.bandwidth = inter_bw;
	r->o.devices = 16;
	r->o.global_batch = 64;
	r->o.pp = 1;
	r->o.tp = 1;
	r->o.mem_limit = limit;
	r->o.space.recipe.framework = SL_FW_TORCHTITAN;
	r->o.space.recipe.precision = SL_PREC_AMP;
	r->o.space.recipe.recompute = SL_RECOMP_AUTO;
}

/* The fastest fitting configuration by enumeration; its degree in *rep. */
static int64_t
hsdp_brute(run *r, int *rep, int64_t *mem)
{
	static const sl_recompute recs[2] = { SL_RECOMP_NONE, SL_RECOMP_FULL };
	int64_t best = -1;

	for (int b = 1; b <= 8; b *= 2)
		for (int q = 1; q <= 2; q++)
			for (int k = 0; k < 2; k++) {
				sl_pipe_config c;
				sl_pipeline pl;
				sl_error err;
				int layers[1] = { 4 };
				sl_recompute rec[1] = { recs[k] };

				if (64 % (16 * b) != 0)
					continue;
				pipe_config(&c, 1, 1, 16, 1, 16 * b, 64 / (16 * b), layers, rec);
				c.dp_replicate = q;
				sl_error_clear(&err);
				if (sl_pipeline_eval(&r->o, &c, &pl, &err) != SL_OK)
					fail_msg("%s", err.msg);
				if (pl.fits && (best < 0 || pl.step_ns < best)) {
					best = pl.step_ns;
					*rep = q;
					*mem = pl.max_mem;
				}
				sl_pipeline_free(&pl);
			}
	return best;
}

static void
test_search_hsdp(void **state)
{
	run r;
	sl_hybrid_result res;
	sl_pipeline full, hsdp;
	sl_error err;
	int64_t want, mem, P;
	int rep = 0;
	int layers[1] = { 4 };
	sl_recompute rec[1] = { SL_RECOMP_NONE };
	sl_pipe_config c;

	(void)state;
	/* InfiniBand at 100 Gb/s between the nodes, NVLink inside */
	hsdp_run(&r, 12.5e9, 0);
	want = hsdp_brute(&r, &rep, &mem);
	sl_error_clear(&err);
	assert_int_equal(sl_hybrid_search(&r.o, &res, &err), SL_OK);
	assert_true(res.found);
	assert_int_equal(res.best.step_ns, want);
	assert_int_equal(res.best.dp_replicate, rep);
	assert_int_equal(res.best.dp_replicate, 2);
	/* replicate x shard, both data parallel, the shard group a node */
	assert_int_equal(res.best.mesh.n_axes, 2);
	assert_int_equal(res.best.mesh.axes[0].size, 2);
	assert_int_equal(res.best.mesh.axes[1].size, 8);
	assert_true(res.best.mesh.axes[0].link.bandwidth == 12.5e9);
	assert_true(res.best.mesh.axes[1].link.bandwidth == r.o.hw.intra.bandwidth);
	/*
	 * By hand: FSDP2 keeps every parameter's fp32 weight, gradient and
	 * two Adam moments (16 bytes) sharded over its shard group: 16 P / 8
	 * bytes a device under HSDP, 16 P / 16 under full sharding.
	 */
	pipe_config(&c, 1, 1, 16, 1, res.best.graph_batch, res.best.micro_batches,
	    layers, rec);
	c.dp_replicate = 1;
	assert_int_equal(sl_pipeline_eval(&r.o, &c, &full, &err), SL_OK);
	c.dp_replicate = 2;
	assert_int_equal(sl_pipeline_eval(&r.o, &c, &hsdp, &err), SL_OK);
	{
		sl_graph *g = gen_model_fn(&r.gc, 1, 512, &err);
		assert_non_null(g);
		P = sl_graph_param_count(g);
		sl_graph_free(g);
	}
	assert_int_equal(P % 16, 0);
	assert_int_equal(hsdp.stage[0].states.params + hsdp.stage[0].states.grads +
	    hsdp.stage[0].states.optim, 16 * P / 8);
	assert_int_equal(full.stage[0].states.params + full.stage[0].states.grads +
	    full.stage[0].states.optim, 16 * P / 16);
	assert_true(hsdp.step_ns < full.step_ns);
	assert_true(hsdp.max_mem > full.max_mem);
	fprintf(stderr, "# slow links: HSDP %lld ns, %lld B; FSDP %lld ns, %lld B\n",
	    (long long)hsdp.step_ns, (long long)hsdp.max_mem,
	    (long long)full.step_ns, (long long)full.max_mem);
	sl_hybrid_result_free(&res);

	/*
	 * Memory between the least either needs (one sample a rank, every
	 * layer recomputed): full sharding is what fits.
	 */
	pipe_config(&c, 1, 1, 16, 1, 16, 4, layers, rec);
	rec[0] = SL_RECOMP_FULL;
	sl_pipeline_free(&hsdp);
	sl_pipeline_free(&full);
	c.dp_replicate = 1;
	assert_int_equal(sl_pipeline_eval(&r.o, &c, &full, &err), SL_OK);
	c.dp_replicate = 2;
	assert_int_equal(sl_pipeline_eval(&r.o, &c, &hsdp, &err), SL_OK);
	assert_true(hsdp.max_mem > full.max_mem);
	hsdp_run(&r, 12.5e9, (hsdp.max_mem + full.max_mem) / 2);
	want = hsdp_brute(&r, &rep, &mem);
	assert_int_equal(sl_hybrid_search(&r.o, &res, &err), SL_OK);
	assert_true(res.found);
	assert_int_equal(res.best.step_ns, want);
	assert_int_equal(res.best.dp_replicate, rep);
	assert_int_equal(res.best.dp_replicate, 1);
	sl_hybrid_result_free(&res);
	sl_pipeline_free(&hsdp);
	sl_pipeline_free(&full);

	/* the links between nodes as fast as within: the search and the
	 * enumeration agree */
	hsdp_run(&r, 0, 0);
	r.o.hw.inter = r.o.hw.intra;
	want = hsdp_brute(&r, &rep, &mem);
	assert_int_equal(sl_hybrid_search(&r.o, &res, &err), SL_OK);
	assert_true(res.found);
	assert_int_equal(res.best.step_ns, want);
	fprintf(stderr, "# fast links: best replicate %d (enumeration %d), %lld ns\n",
	    res.best.dp_replicate, rep, (long long)want);
	sl_hybrid_result_free(&res);

	/* --dp-replicate 2 forces it; Megatron-LM never replicates */
	hsdp_run(&r, 0, 0);
	r.o.dp_replicate = 2;
	assert_int_equal(sl_hybrid_search(&r.o, &res, &err), SL_OK);
	assert_true(res.found);
	assert_int_equal(res.best.dp_replicate, 2);
	sl_hybrid_result_free(&res);
	r.o.dp_replicate = 1;
	assert_int_equal(sl_hybrid_search(&r.o, &res, &err), SL_OK);
	assert_true(res.found);
	assert_int_equal(res.best.dp_replicate, 1);
	sl_hybrid_result_free(&res);
}

/* ------------------------------------------------- a plan file reopened */

static char tmpdir[512];

/*
 * A pipeline plan written by the export and reopened with nothing but the
 * file (sl_plan_pipe_setup) gives the same step time and peak.
 */
static void
test_plan_reopens(void **state)
{
	static const int layers[4] = { 3, 2, 3, 2 };
	run r;
	sl_pipeline pl, back;
	sl_plan_file pf;
	sl_hybrid_opts o2;
	sl_pipe_config c2;
	sl_topo topo;
	sl_error err;
	char path[600], *text;
	FILE *fp;

	(void)state;
	gpt10(&r, layers);
	r.o.space.recipe.recompute = SL_RECOMP_SELECTIVE;
	r.rec[1] = SL_RECOMP_SELECTIVE;
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&r.o, &r.c, &pl, &err), SL_OK);
	text = sl_pipeline_export(&pl, &r.o, SL_EXPORT_JSON, &err);
	assert_non_null(text);
	snprintf(path, sizeof path, "%s/plan.json", tmpdir);
	assert_non_null(fp = fopen(path, "w"));
	fputs(text, fp);
	fclose(fp);
	free(text);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	assert_true(pf.has_setup);
	assert_int_equal(pf.recipe.framework, SL_FW_MEGATRON);
	assert_int_equal(pf.recipe.shard_states, 1);
	assert_int_equal(pf.outer, 1);
	assert_int_equal(pf.inner, 2);
	assert_int_equal(pf.devices, 8);
	assert_string_equal(pf.hw.name, r.o.hw.name);
	assert_true(pf.hw.flops == r.o.hw.flops);
	assert_int_equal(sl_plan_pipe_setup(&pf, &o2, &topo, &c2, &err), SL_OK);
	o2.model = gen_model_fn;
	o2.model_ctx = &r.gc;
	assert_int_equal(sl_pipeline_eval(&o2, &c2, &back, &err), SL_OK);
	assert_true(back.step_ns == pl.step_ns);
	assert_true(back.max_mem == pl.max_mem);
	for (int j = 0; j < 4; j++)
		assert_string_equal(back.stage[j].strategy[0], pl.stage[j].strategy[0]);
	sl_pipeline_free(&back);
	sl_plan_file_free(&pf);
	sl_pipeline_free(&pl);
	unlink(path);
}

/*
 * An HSDP plan the search chose, written and reopened with nothing but
 * the file: the same replicate degree, sub-mesh, step time and peak
 * (the sub-mesh is replicate x shard, which outer x inner alone does not
 * say).
 */
static void
test_plan_reopens_hsdp(void **state)
{
	run r;
	sl_hybrid_result res;
	sl_pipeline back;
	sl_plan_file pf;
	sl_hybrid_opts o2;
	sl_pipe_config c2;
	sl_topo topo;
	sl_error err;
	char path[600], *text;
	FILE *fp;

	(void)state;
	hsdp_run(&r, 12.5e9, 0);
	sl_error_clear(&err);
	assert_int_equal(sl_hybrid_search(&r.o, &res, &err), SL_OK);
	assert_true(res.found);
	assert_int_equal(res.best.dp_replicate, 2);
	text = sl_pipeline_export(&res.best, &r.o, SL_EXPORT_JSON, &err);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"replicate\": 2"));
	snprintf(path, sizeof path, "%s/hsdp.json", tmpdir);
	assert_non_null(fp = fopen(path, "w"));
	fputs(text, fp);
	fclose(fp);
	free(text);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	assert_true(pf.has_setup);
	assert_int_equal(pf.dp_replicate, 2);
	assert_int_equal(pf.outer, 16);
	assert_int_equal(pf.inner, 1);
	assert_int_equal(sl_plan_pipe_setup(&pf, &o2, &topo, &c2, &err), SL_OK);
	assert_int_equal(c2.dp_replicate, 2);
	o2.model = gen_model_fn;
	o2.model_ctx = &r.gc;
	assert_int_equal(sl_pipeline_eval(&o2, &c2, &back, &err), SL_OK);
	assert_int_equal(back.dp_replicate, 2);
	assert_int_equal(back.mesh.axes[0].size, 2);
	assert_true(back.step_ns == res.best.step_ns);
	assert_true(back.max_mem == res.best.max_mem);
	/* without the degree (an older plan) it is another plan */
	c2.dp_replicate = 1;
	sl_pipeline_free(&back);
	assert_int_equal(sl_pipeline_eval(&o2, &c2, &back, &err), SL_OK);
	assert_true(back.step_ns != res.best.step_ns);
	sl_pipeline_free(&back);
	sl_plan_file_free(&pf);
	sl_hybrid_result_free(&res);
	unlink(path);
}

static int
setup(void **state)
{
	const char *t = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "%s/test_framework.XXXXXX", t ? t : "/tmp");
	return mkdtemp(tmpdir) == NULL;
}

static int
teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arch),
		cmocka_unit_test(test_megatron_rules),
		cmocka_unit_test(test_torchtitan_rules),
		cmocka_unit_test(test_deepspeed_rules),
		cmocka_unit_test(test_framework_choice),
		cmocka_unit_test(test_megatron_stage_layout),
		cmocka_unit_test(test_deepspeed_batch_identity),
		cmocka_unit_test(test_dtensor_names),
		cmocka_unit_test(test_torchtitan_hsdp),
		cmocka_unit_test(test_search_hsdp),
		cmocka_unit_test(test_torchtitan_sac),
		cmocka_unit_test(test_plan_reopens),
		cmocka_unit_test(test_plan_reopens_hsdp),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
