/*
 * bench_load.c: loading stays linear in the size of the input (`make
 * bench`).  Times reading a generated GPT model of 3,004 and 12,004
 * operators, and a plan of 15,000 and 60,000 operators, and prints the time
 * ratio of the large to the small: about 4 when loading is linear, about 16
 * when it is quadratic (as name lookups by scan were).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#define _POSIX_C_SOURCE 200809L
#include "shardlab.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Best of three loads of the model file, in ms; its operators in *n_ops. */
static double
load_model(const char *path, int *n_ops)
{
	double best = 1e300;

	for (int i = 0; i < 3; i++) {
		sl_error err;
		double t0 = now_ms();
		sl_graph *g;

		sl_error_clear(&err);
		if ((g = sl_model_load_json(path, &err)) == NULL) {
			fprintf(stderr, "bench_load: %s: %s\n", path, err.msg);
			exit(1);
		}
		if (now_ms() - t0 < best)
			best = now_ms() - t0;
		*n_ops = g->n_ops;
		sl_graph_free(g);
	}
	return best;
}

static double
model_ms(const char *dir, int layers, int *n_ops)
{
	sl_gen_config c;
	sl_graph *g;
	sl_error err;
	char path[512];

	sl_error_clear(&err);
	sl_gen_defaults(SL_FAM_GPT, &c);
	c.layers = layers;
	snprintf(path, sizeof path, "%s/gpt%d.json", dir, layers);
	if ((g = sl_gen(&c, &err)) == NULL ||
	    sl_model_save_json(g, path, &err) != SL_OK) {
		fprintf(stderr, "bench_load: %s\n", err.msg);
		exit(1);
	}
	sl_graph_free(g);
	return load_model(path, n_ops);
}

/* A plan of n operators (names only: reading, not mapping). */
static double
plan_ms(const char *dir, int n)
{
	char path[512];
	double best = 1e300;
	FILE *f;

	snprintf(path, sizeof path, "%s/plan%d.json", dir, n);
	if ((f = fopen(path, "w")) == NULL)
		exit(1);
	fprintf(f, "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
	    " \"model\": {\"name\": \"m\"}, \"mesh\": {\"shape\": [4]},\n"
	    " \"ops\": [");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\n  {\"name\": \"layer%d.op%d\", \"strategy\": \"dp\"}",
		    i ? "," : "", i / 12, i % 12);
	fprintf(f, "\n]}\n");
	fclose(f);
	for (int i = 0; i < 3; i++) {
		sl_plan_file pf;
		sl_error err;
		double t0 = now_ms();

		sl_error_clear(&err);
		if (sl_plan_read(path, &pf, &err) != SL_OK) {
			fprintf(stderr, "bench_load: %s: %s\n", path, err.msg);
			exit(1);
		}
		if (now_ms() - t0 < best)
			best = now_ms() - t0;
		sl_plan_file_free(&pf);
	}
	return best;
}

int
main(void)
{
	char dir[] = "/tmp/bench_load.XXXXXX";
	char cmd[600];
	double m1, m4, p1, p4;
	int n1, n4;

	if (mkdtemp(dir) == NULL)
		return 1;
	m1 = model_ms(dir, 250, &n1);
	m4 = model_ms(dir, 1000, &n4);
	p1 = plan_ms(dir, 15000);
	p4 = plan_ms(dir, 60000);
	printf("shardlab load benchmark (best of 3; linear loading gives ratios near 4)\n");
	printf("model %6d ops %8.1f ms | %6d ops %8.1f ms | ratio %.1f\n",
	    n1, m1, n4, m4, m4 / m1);
	printf("plan  %6d ops %8.1f ms | %6d ops %8.1f ms | ratio %.1f\n",
	    15000, p1, 60000, p4, p4 / p1);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
