/*
 * anytime_portfolio.c: searches side by side on the same reduced problem,
 * each with its own state and seed; the best plan and the best bound are
 * kept, and a proof by one stops the others.
 */
#include "anytime.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/*
 * Searches run side by side (sl_solve_opts.threads 0): one per processor
 * the process may run on, at most this many.  Each further one holds its own search
 * state: 25-45 MB on the contest instances, beside 430-500 MB for one.
 */
#define AT_THREADS_DEFAULT 4
/* Most searches side by side however many are asked for. */
#define AT_THREADS_MAX 64

/*
 * How many searches run side by side: by default one per processor this
 * process may run on (its affinity, as taskset and batch schedulers' CPU
 * sets leave it), else per online processor.
 */
int
at_threads(const sl_solve_opts *o)
{
	long n = 0;
	cpu_set_t cs;

	if (o != NULL && o->first_plan)
		return 1;	/* the first plan, as soon as one search has it */
	if (o != NULL && o->threads > 0)
		return o->threads < AT_THREADS_MAX ? o->threads : AT_THREADS_MAX;
	CPU_ZERO(&cs);
	if (sched_getaffinity(0, sizeof cs, &cs) == 0)
		n = CPU_COUNT(&cs);
	if (n < 1)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > AT_THREADS_DEFAULT ? AT_THREADS_DEFAULT : (int)n;
}

struct at_job {
	at a;
	long double lb;
	bool infeasible;
};

static void *
at_job_run(void *arg)
{
	struct at_job *j = arg;

	at_search(&j->a, &j->lb, &j->infeasible);
	/* a proof, or no plan at all, holds for every search: stop them */
	if (j->a.run.stop != NULL && (j->a.proved || j->infeasible ||
	    (j->a.best_cost < INT64_MAX && (long double)j->a.best_cost <= j->lb)))
		atomic_store(j->a.run.stop, true);
	return NULL;
}

/*
 * at_search in nt threads on the same reduced problem, each
 * from its own random seed (the first one's is the single search's), and
 * the best plan kept.  The searches share nothing but the problem and a
 * flag that the first proof raises; runs of one search on the contest
 * instances vary by several percent with timing alone, and the best of
 * several is steadier.  On return *a is the search whose plan is best,
 * with every search's statistics, *lb the best bound of any.
 */
void
at_portfolio(at *a, const sl_reduction *red, bool mem, int nt,
    long double *lb, bool *infeasible)
{
	struct at_job *j = sl_xcalloc((size_t)nt, sizeof *j);
	pthread_t *th = sl_xcalloc((size_t)nt, sizeof *th);
	bool *run = sl_xcalloc((size_t)nt, sizeof *run);
	atomic_bool done;
	int best = 0;

	atomic_init(&done, false);
	for (int i = 0; i < nt; i++) {
		j[i].a.run = a->run;
		j[i].a.o = a->o;
		j[i].a.deadline_ms = a->deadline_ms;
		j[i].a.until_ms = a->until_ms;
		at_build(&j[i].a, red, mem);
		j[i].a.rng += (uint64_t)i * 0xbf58476d1ce4e5b9ULL;
		j[i].a.run.stop = nt > 1 ? &done : NULL;
	}
	/* the others in threads of their own; one that cannot start is
	 * left out */
	for (int i = 1; i < nt; i++)
		run[i] = pthread_create(&th[i], NULL, at_job_run, &j[i]) == 0;
	at_job_run(&j[0]);
	for (int i = 1; i < nt; i++)
		if (run[i])
			pthread_join(th[i], NULL);
	*lb = j[0].lb;
	*infeasible = j[0].infeasible;
	for (int i = 1; i < nt; i++) {
		if (!run[i])
			continue;
		if (j[i].lb > *lb)
			*lb = j[i].lb;
		if (j[i].a.best_cost < j[best].a.best_cost ||
		    (j[i].a.best_cost == j[best].a.best_cost &&
		    j[i].a.proved && !j[best].a.proved))
			best = i;
		j[0].a.run.cancelled |= j[i].a.run.cancelled;
	}
	for (int i = 0; i < nt; i++) {
		if (i == best || (i > 0 && !run[i]))
			continue;
		j[best].a.windows += j[i].a.windows;
		j[best].a.improved += j[i].a.improved;
		if (j[i].a.first_ms >= 0 && (j[best].a.first_ms < 0 ||
		    j[i].a.first_ms < j[best].a.first_ms))
			j[best].a.first_ms = j[i].a.first_ms;
	}
	j[best].a.run.cancelled = j[0].a.run.cancelled;
	j[best].a.run.stop = NULL;
	*a = j[best].a;
	for (int i = 0; i < nt; i++)
		if (i != best)
			at_free(&j[i].a);
	free(j);
	free(th);
	free(run);
}
