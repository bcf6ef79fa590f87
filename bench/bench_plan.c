/*
 * bench_plan.c: how long the hybrid search (pipeline degree, sub-mesh,
 * micro-batches, stage boundaries, recomputation, and the exact plan of
 * every stage) takes for GPT-3 175B, LLaMA-2-70B and a DeepSeek-V3-sized
 * mixture of experts (61 layers, 256 experts, top-8, latent attention),
 * per operator and under Megatron-LM, over 64, 512 and 1024 devices
 * (`make bench-plan`).  Runs each row three times in a process
 * of its own and prints the first run's CPU time (what `shardlab plan`
 * takes, paying for the memory the search touches first; of_1s is its
 * ratio to the goal of one second), the process's peak resident memory
 * (what the first run touches costs it time), the best wall and CPU time (which a
 * shared machine inflates less), the best CPU time as a ratio to a
 * reference computation timed in the same run (a fixed min-plus product
 * that does not use the engine, so the ratio does not move with the
 * machine's speed or load), the plan found, and a digest of the whole plan (every stage's layers,
 * recomputation and strategies, its time and memory): equal digests are
 * equal plans, so a change meant to be faster shows it changed nothing.
 *
 * Arguments select rows, for profiling one: `bench_plan gpt3 64` runs
 * GPT-3 175B on 64 devices alone, `bench_plan llama` LLaMA-2-70B's three,
 * `bench_plan moe 1024` the mixture on 1024 devices, `bench_plan moe-mg
 * 1024` the same under Megatron-LM (plan's default framework).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#define _POSIX_C_SOURCE 200809L
#include "shardlab.h"
#include "../tests/gpt3.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The reference: a 384 x 384 x 384 min-plus product in plain C, best of
 * three, in CPU ms.
 */
#define REF_N 384
static volatile int64_t ref_sink;

static double
reference_ms(void)
{
	int64_t *a = malloc(sizeof(int64_t) * REF_N * REF_N);
	int64_t *c = malloc(sizeof(int64_t) * REF_N * REF_N);
	double best = 1e300;

	if (a == NULL || c == NULL) {
		fprintf(stderr, "bench_plan: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < REF_N * REF_N; i++)
		a[i] = (int64_t)((i * 2654435761u) % 1000003u);
	for (int rep = 0; rep < 3; rep++) {
		double c0 = cpu_ms();
		for (int i = 0; i < REF_N; i++)
			for (int j = 0; j < REF_N; j++) {
				int64_t m = INT64_MAX;
				for (int k = 0; k < REF_N; k++) {
					int64_t x = a[i * REF_N + k] + a[k * REF_N + j];
					if (x < m)
						m = x;
				}
				c[i * REF_N + j] = m;
			}
		ref_sink = c[rep];
		if (cpu_ms() - c0 < best)
			best = cpu_ms() - c0;
	}
	free(a);
	free(c);
	return best;
}

/* FNV-1a over the plan: what the search chose and what it costs. */
static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static uint64_t
plan_digest(const sl_pipeline *pl)
{
	uint64_t h = 1469598103934665603ULL;
	int64_t x[8];

	x[0] = pl->pp;
	x[1] = pl->virt;
	x[2] = pl->mesh.axes[0].size;
	x[3] = pl->mesh.n_axes > 1 ? pl->mesh.axes[1].size : 1;
	x[4] = pl->micro_batches;
	x[5] = pl->graph_batch;
	x[6] = pl->step_ns;
	x[7] = pl->max_mem;
	h = fnv(h, x, sizeof x);
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		int64_t y[6] = { st->first_layer, st->n_layers, st->recompute,
		    st->micro_ns, st->sync_ns, st->acts };
		h = fnv(h, y, sizeof y);
		h = fnv(h, &st->states, sizeof st->states);
		for (int u = 0; u < st->n_strat_ops; u++)
			h = fnv(h, st->strategy[u], strlen(st->strategy[u]));
	}
	return h;
}

#define N_MODELS 4
static sl_gen_config cfg[N_MODELS];
static const char *const row_name[N_MODELS] = { "gpt3", "llama", "moe", "moe-mg" };
static const int64_t row_batch[N_MODELS] = { 1536, 1024, 4096, 4096 };
/* the per-operator search, and the mixture as `shardlab plan` plans it by
 * default: under Megatron-LM (its distributed optimizer), each choice of
 * the experts' axes searched */
static const sl_framework row_fw[N_MODELS] = { SL_FW_FREE, SL_FW_FREE,
    SL_FW_FREE, SL_FW_MEGATRON };
static sl_hw hw;
static double ref;
static const int devices[] = { 64, 512, 1024 };

/*
 * One row: three searches in a process of its own (a fresh heap, as a
 * user's `shardlab plan` has): the first one's CPU time, which pays for
 * the memory the search touches first, and the best of the three.
 */
static int
run_row(int mi, int di)
{
	double best_cpu = 1e300, best_wall = 1e300, first_cpu = 0;
	sl_hybrid_result r;
	sl_error err;
	char buf[96];
	uint64_t dig = 0;
	struct rusage ru;
	double peak_mb = 0;

	sl_tune_allocator();	/* as shardlab's main does */
	for (int rep = 0; rep < 3; rep++) {
		sl_hybrid_opts o;
		double c0;

		sl_hybrid_opts_default(&o);
		o.model = gen_model_fn;
		o.model_ctx = &cfg[mi];
		o.hw = hw;
		o.devices = devices[di];
		o.global_batch = row_batch[mi];
		o.space.recipe.precision = SL_PREC_MEGATRON;
		o.space.recipe.recompute = SL_RECOMP_AUTO;
		o.space.recipe.framework = row_fw[mi];
		if (row_fw[mi] == SL_FW_MEGATRON)
			o.space.recipe.shard_states = 1;
		sl_error_clear(&err);
		c0 = cpu_ms();
		if (sl_hybrid_search(&o, &r, &err) != SL_OK) {
			fprintf(stderr, "bench_plan: %s\n", err.msg);
			return 1;
		}
		if (rep == 0)
			first_cpu = cpu_ms() - c0;
		if (cpu_ms() - c0 < best_cpu)
			best_cpu = cpu_ms() - c0;
		if (r.time_ms < best_wall)
			best_wall = r.time_ms;
		if (rep < 2)
			sl_hybrid_result_free(&r);
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		peak_mb = ru.ru_maxrss / 1024.0;
	if (r.found) {
		snprintf(buf, sizeof buf, "pp %d, %d x %d, m %lld, %.2f s/step, "
		    "%.1f GiB",
		    r.best.pp, r.best.mesh.axes[0].size,
		    r.best.mesh.n_axes > 1 ? r.best.mesh.axes[1].size : 1,
		    (long long)r.best.micro_batches, r.best.step_ns / 1e9,
		    r.best.max_mem / (double)(1 << 30));
		dig = plan_digest(&r.best);
	} else
		snprintf(buf, sizeof buf, "nothing fits");
	printf("%-12s %7d %8.1f %8.1f %8.1f %7.2f %6.3f %7.0f %7lld %6lld  %016llx %s\n",
	    cfg[mi].name, devices[di], best_wall, first_cpu, best_cpu,
	    best_cpu / ref, first_cpu / 1000.0, peak_mb, (long long)r.stage_solves,
	    (long long)r.configs, (unsigned long long)dig, buf);
	fflush(stdout);
	sl_hybrid_result_free(&r);
	return 0;
}

int
main(int argc, char **argv)
{
	sl_error err;
	int rc = 0;

	sl_error_clear(&err);
	if (sl_hw_load("a100-sxm", &hw, &err) != SL_OK) {
		fprintf(stderr, "bench_plan: %s\n", err.msg);
		return 1;
	}
	gpt3_175b_config(&cfg[0]);
	sl_gen_defaults(SL_FAM_LLAMA, &cfg[1]);
	snprintf(cfg[1].name, sizeof cfg[1].name, "llama-2-70b");
	cfg[1].layers = 80;
	cfg[1].hidden = 8192;
	cfg[1].heads = 64;
	cfg[1].kv_heads = 8;
	cfg[1].ffn = 28672;
	cfg[1].vocab = 32000;
	cfg[1].seq = 4096;
	/* DeepSeek-V3's sizes (tests/data/hf/DeepSeek-V3.json) */
	sl_gen_defaults(SL_FAM_MOE, &cfg[2]);
	snprintf(cfg[2].name, sizeof cfg[2].name, "deepseek-v3");
	cfg[2].layers = 61;
	cfg[2].hidden = 7168;
	cfg[2].heads = cfg[2].kv_heads = 128;
	cfg[2].ffn = 18432;
	cfg[2].vocab = 129280;
	cfg[2].seq = 4096;
	cfg[2].experts = 256;
	cfg[2].topk = 8;
	cfg[2].moe_ffn = 2048;
	cfg[2].shared_ffn = 2048;
	cfg[2].first_dense = 3;
	cfg[2].score_bias = true;
	cfg[2].q_lora = 1536;
	cfg[2].kv_lora = 512;
	cfg[2].qk_nope = 128;
	cfg[2].qk_rope = 64;
	cfg[2].v_head = 128;
	cfg[3] = cfg[2];
	snprintf(cfg[3].name, sizeof cfg[3].name, "dsv3-megatron");
	ref = reference_ms();
	printf("hybrid search, three runs per row in a process of its own; reference "
	    "(%dx%dx%d min-plus product): %.1f CPU ms\n", REF_N, REF_N, REF_N, ref);
	printf("%-12s %7s %8s %8s %8s %7s %6s %7s %7s %6s  %-16s %s\n", "model", "devices",
	    "wall_ms", "first_ms", "cpu_ms", "ref_x", "of_1s", "peak_mb", "solves", "cfgs",
	    "digest", "plan");
	fflush(stdout);
	for (int mi = 0; mi < N_MODELS; mi++)
		for (int di = 0; di < 3; di++) {
			pid_t pid;
			int st;

			if (argc > 1 && strcmp(argv[1], row_name[mi]) != 0)
				continue;
			if (argc > 2 && atoi(argv[2]) != devices[di])
				continue;
			if ((pid = fork()) < 0) {
				perror("bench_plan: fork");
				return 1;
			}
			if (pid == 0)
				_exit(run_row(mi, di));
			if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				rc = 1;
		}
	return rc;
}
