/*
 * bench_published.c: the published Megatron-LM runs (tests/published.h)
 * predicted at their published layouts on the a100-sxm profile: for each
 * row its layout, the predicted step and its parts (pipelined time,
 * gradient sync left after it, optimizer), the published step, and their
 * ratio as published throughput over predicted (above 1: the prediction is
 * slower than the run was).  doc/validation.md holds its output.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "shardlab.h"
#include "../tests/published.h"

#include <math.h>
#include <stdio.h>

int
main(void)
{
	double sum = 0, worst = 0;

	printf("| source | model | tp | pp | v | dp | mbs | gbs | recompute | "
	    "pipeline s | sync s | optimizer s | predicted s | published s | "
	    "throughput ratio | MFU | HFU |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"
	    "---:|---:|---:|---:|\n");
	for (int i = 0; i < N_PUB_ROWS; i++) {
		const pub_row *r = &pub_rows[i];
		sl_gen_config gc;
		sl_pipeline pl;
		sl_error err;
		char buf[1400];
		double pred, pub, ratio;

		sl_error_clear(&err);
		if (pub_eval(r, &gc, &pl, &err) != SL_OK) {
			fprintf(stderr, "%s %s: %s\n", r->source, r->name,
			    sl_error_format(&err, buf, sizeof buf));
			return 1;
		}
		pred = pl.step_ns / 1e9;
		pub = pub_step_s(r);
		ratio = pub / pred;
		sum += fabs(log(ratio));
		if (fabs(ratio - 1) > worst)
			worst = fabs(ratio - 1);
		printf("| %s | %s | %d | %d | %d | %d | %d | %d | %s%s | %.2f | "
		    "%.3f | %.3f | %.2f | %.2f | %.3f | %.1f%% | %.1f%% |\n",
		    r->source, r->name, r->tp, r->pp, r->v,
		    r->gpus / (r->tp * r->pp), r->mbs, r->gbs,
		    sl_recompute_name(r->recompute),
		    r->layout == SL_LAYOUT_MEGATRON_SP ? " + SP" : "",
		    pl.pipe_ns / 1e9, pl.sync_ns / 1e9, pl.optim_ns / 1e9, pred,
		    pub, ratio, 100 * pl.mfu, 100 * pl.hfu);
		fflush(stdout);
		sl_pipeline_free(&pl);
	}
	printf("\n%d rows: geometric mean error %.1f%%, worst %.1f%%\n",
	    N_PUB_ROWS, 100 * (exp(sum / N_PUB_ROWS) - 1), 100 * worst);
	return 0;
}
