/*
 * bench_plan.c: how long the hybrid search (pipeline degree, sub-mesh,
 * micro-batches, stage boundaries, recomputation, and the exact plan of
 * every stage) takes for GPT-3 175B and LLaMA-2-70B over 64, 512 and 1024
 * devices.  Prints times (wall, and the process's CPU time, which a shared
 * machine does not inflate), the plan found, and the ratio to one second.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#define _POSIX_C_SOURCE 200809L
#include "shardlab.h"
#include "../tests/gpt3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static sl_graph *
model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	sl_gen_config c = *(const sl_gen_config *)ctx;

	c.batch = batch;
	if (seq > 0)
		c.seq = seq;
	return sl_gen(&c, err);
}

int
main(void)
{
	static const int devices[] = { 64, 512, 1024 };
	sl_gen_config cfg[2];
	sl_hw hw;
	sl_error err;

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
	printf("%-12s %8s %10s %8s %8s %8s %10s  %s\n", "model", "devices", "search_ms",
	    "cpu_ms", "solves", "configs", "ratio_1s", "plan");
	for (int mi = 0; mi < 2; mi++)
		for (int di = 0; di < 3; di++) {
			sl_hybrid_opts o;
			sl_hybrid_result r;
			char buf[64];
			double c0;

			sl_hybrid_opts_default(&o);
			o.model = model;
			o.model_ctx = &cfg[mi];
			o.hw = hw;
			o.devices = devices[di];
			o.global_batch = mi == 0 ? 1536 : 1024;
			o.space.recipe.precision = SL_PREC_MEGATRON;
			o.space.recipe.recompute = SL_RECOMP_AUTO;
			sl_error_clear(&err);
			c0 = cpu_ms();
			if (sl_hybrid_search(&o, &r, &err) != SL_OK) {
				fprintf(stderr, "bench_plan: %s\n", err.msg);
				return 1;
			}
			if (r.found)
				snprintf(buf, sizeof buf, "pp %d, %d x %d, m %lld, %.2f s/step",
				    r.best.pp, r.best.mesh.axes[0].size,
				    r.best.mesh.n_axes > 1 ? r.best.mesh.axes[1].size : 1,
				    (long long)r.best.micro_batches, r.best.step_ns / 1e9);
			else
				snprintf(buf, sizeof buf, "nothing fits");
			printf("%-12s %8d %10.1f %8.0f %8lld %8lld %10.3f  %s\n", cfg[mi].name,
			    devices[di], r.time_ms, cpu_ms() - c0, (long long)r.stage_solves,
			    (long long)r.configs, r.time_ms / 1000.0, buf);
			fflush(stdout);
			sl_hybrid_result_free(&r);
		}
	return 0;
}
