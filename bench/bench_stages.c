/*
 * bench_stages.c: how long the explorer's stages panel takes to re-evaluate
 * a pipeline after a key, for gpt-1.7b on 4 and 8 devices of h100-nvlink at
 * 2 and 4 stages: sl_pipeline_eval from nothing against sl_pipe_ctx_eval
 * with the spaces and stage plans of earlier keys kept, over every position
 * of the first boundary (first visit, then again), without pins and with
 * a pin of one layer's operator.  Prints milliseconds and the ratio to one
 * frame (16 ms).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "shardlab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sl_graph *
model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	sl_model_opts mo = { .micro_batch = batch, .devices = 1, .seq = seq };

	return sl_model_open(ctx, &mo, err);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
main(void)
{
	static const int devs[] = { 4, 8 }, pps[] = { 2, 4 };
	sl_hybrid_opts o;
	sl_error err;
	sl_hw hw;

	sl_error_clear(&err);
	if (sl_hw_load("h100-nvlink", &hw, &err) != SL_OK) {
		fprintf(stderr, "bench_stages: %s\n", err.msg);
		return 1;
	}
	printf("%-9s %4s %3s %12s %12s %12s %12s %8s\n", "model", "devs", "pp",
	    "cold ms", "1st move ms", "again ms", "worst ms", "x frame");
	for (size_t a = 0; a < sizeof devs / sizeof *devs; a++)
		for (size_t b = 0; b < sizeof pps / sizeof *pps; b++) {
			int D = devs[a], p = pps[b], L = 24, layers[8];
			sl_recompute rec[8] = { 0 };
			sl_pipe_config c = { .pp = p, .virt = 1, .outer = 1,
			    .inner = D / p, .graph_batch = 1, .micro_batches = D,
			    .layers = layers, .recompute = rec };
			sl_pipeline pl;
			sl_pipe_ctx *ctx;
			double t0, cold;

			sl_hybrid_opts_default(&o);
			o.model = model;
			o.model_ctx = "gpt-1.7b";
			o.hw = hw;
			o.devices = D;
			o.space.recipe.micro_batch = 1;
			for (int j = 0; j < p; j++)
				layers[j] = L / p;
			t0 = now_ms();
			if (sl_pipeline_eval(&o, &c, &pl, &err) != SL_OK) {
				fprintf(stderr, "bench_stages: %s\n", err.msg);
				return 1;
			}
			cold = now_ms() - t0;
			sl_pipeline_free(&pl);
			ctx = sl_pipe_ctx_new(&o);
			/* without pins, then with a pin of one layer's operator
			 * (each stage solved for its own layers) */
			for (int pin = 0; pin < 2; pin++) {
				double first = 0, again = 0, worst = 0;
				int n = 0;

				if (pin) {
					sl_constraints cs;
					memset(&cs, 0, sizeof cs);
					sl_constraints_add(&cs, "layer3.qkv", "rep", true);
					sl_pipe_ctx_constrain(ctx, &cs);
					sl_constraints_free(&cs);
				}
				for (int j = 0; j < p; j++)
					layers[j] = L / p;
				if (sl_pipe_ctx_eval(ctx, &c, &pl, NULL, &err) != SL_OK)
					return 1;
				sl_pipeline_free(&pl);
				for (int pass = 0; pass < 2; pass++)
					for (int l = 1; l < L / p * 2; l++) {
						double t;
						layers[0] = l;
						layers[1] = L / p * 2 - l;
						t0 = now_ms();
						if (sl_pipe_ctx_eval(ctx, &c, &pl, NULL, &err) != SL_OK) {
							fprintf(stderr, "bench_stages: %s\n", err.msg);
							return 1;
						}
						t = now_ms() - t0;
						sl_pipeline_free(&pl);
						if (pass == 0)
							first += t, n++;
						else
							again += t;
						if (t > worst)
							worst = t;
					}
				printf("%-9s %4d %3d %12.1f %12.2f %12.2f %12.2f %8.2f%s\n",
				    "gpt-1.7b", D, p, cold, first / n, again / n, worst,
				    worst / 16.0, pin ? "  pin on layer3.qkv" : "");
			}
			sl_pipe_ctx_free(ctx);
		}
	return 0;
}
