/*
 * run.c: the solver run, one clock, deadline and cancel for every solver
 * (internal.h, sl_run).  A solver polls sl_run_over; one that hands work
 * to another gives it a run within its own.  Times are monotonic
 * milliseconds.
 */
#include "internal.h"

#include <math.h>
#include <string.h>
#include <time.h>

double
sl_run_clock(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void
sl_run_start(sl_run *r, const sl_solve_opts *o)
{
	memset(r, 0, sizeof *r);
	r->start = sl_run_clock();
	r->deadline = o != NULL && o->time_limit > 0 ?
	    r->start + o->time_limit * 1e3 : INFINITY;
	if (o != NULL) {
		r->cancel = o->cancel;
		r->cancel_ctx = o->cancel_ctx;
	}
}

void
sl_run_within(sl_run *r, const sl_run *outer, double ms)
{
	*r = *outer;
	r->start = sl_run_clock();
	if (ms >= 0 && r->start + ms < r->deadline)
		r->deadline = r->start + ms;
}

void
sl_run_shrink(sl_run *r, double share, double margin_ms)
{
	if (r->deadline < INFINITY)
		r->deadline = r->start + (r->deadline - r->start) * share -
		    margin_ms;
}

double
sl_run_ms(const sl_run *r)
{
	return sl_run_clock() - r->start;
}

double
sl_run_left(const sl_run *r)
{
	return r->deadline < INFINITY ? r->deadline - sl_run_clock() : INFINITY;
}

bool
sl_run_cancelled(sl_run *r)
{
	if (!r->cancelled && r->cancel != NULL && r->cancel(r->cancel_ctx))
		r->cancelled = true;
	return r->cancelled || (r->stop != NULL &&
	    atomic_load_explicit(r->stop, memory_order_relaxed));
}

bool
sl_run_over(sl_run *r)
{
	return sl_run_cancelled(r) || (r->deadline < INFINITY &&
	    sl_run_clock() >= r->deadline);
}
