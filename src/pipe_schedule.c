/*
 * pipe_schedule.c: the arithmetic of pipeline schedules (GPipe, 1F1B,
 * interleaved 1F1B): micro-batches in flight per device, the activations
 * held at a device's peak, the bubble and the pipelined time.  Plain
 * functions of the degree, the chunks and the micro-batches; nothing here
 * knows a model.  doc/cost-model.md, "Pipelines", has the formulas.
 */
#include "internal.h"

#include <stdlib.h>

static const char *const sched_names[SL_SCHED_COUNT] = { "1f1b", "gpipe", "interleaved" };

const char *
sl_schedule_name(sl_schedule s)
{
	return (unsigned)s < SL_SCHED_COUNT ? sched_names[s] : "?";
}

int
sl_schedule_from_name(const char *s)
{
	for (int i = 0; s != NULL && i < SL_SCHED_COUNT; i++)
		if (strcmp(s, sched_names[i]) == 0)
			return i;
	return -1;
}

/* ---------------------------------------------------------- schedules */

int64_t
sl_pipe_in_flight(sl_schedule s, int p, int v, int64_t m, int d)
{
	int64_t n;

	if (m < 1 || p < 1 || d < 0 || d >= p)
		return 0;
	switch (s) {
	case SL_SCHED_GPIPE:
		return m;
	case SL_SCHED_INTERLEAVED:
		if (v <= 1)
			break;		/* one chunk is plain 1F1B */
		n = 2 * (int64_t)(p - d - 1) + (int64_t)(v - 1) * p + 1;
		return n < (int64_t)v * m ? n : (int64_t)v * m;
	default:
		break;
	}
	{
		n = p - d;
		return n < m ? n : m;
	}
}

/*
 * Interleaved 1F1B as Megatron-LM runs it on device d: forward k on chunk
 * (k mod p v) / p, backward k on chunk v - 1 - (k mod p v) / p; a warm-up
 * of min(v m, 2 (p - d - 1) + (v - 1) p) forwards, then one forward and
 * one backward at a time, then the backwards left (p divides m, as
 * Megatron-LM asks; otherwise every chunk in flight is counted at the
 * largest chunk's activations).  After the warm-up the
 * chunks in flight after each forward repeat every p v steps (forwards and
 * backwards each meet every chunk p times in p v), and the cool-down only
 * releases: the peak is after a forward among the first p v steps, or
 * after the warm-up when nothing follows it.
 */
int64_t
sl_pipe_peak_acts(sl_schedule s, int p, int v, int64_t m, int d,
    const int64_t *acts)
{
	int64_t total, warm, steady, peak = 0, *n;
	int64_t pv = (int64_t)p * v;

	if (m < 1 || p < 1 || d < 0 || d >= p)
		return 0;
	if (s != SL_SCHED_INTERLEAVED || v <= 1)
		return sl_mul_sat(sl_pipe_in_flight(s, p, 1, m, d), acts[0]);
	if (m % p != 0) {
		/* no order of Megatron-LM's (it asks p | m): every chunk in
		 * flight at the largest chunk's */
		for (int c = 0; c < v; c++)
			if (acts[c] > peak)
				peak = acts[c];
		return sl_mul_sat(sl_pipe_in_flight(s, p, v, m, d), peak);
	}
	total = sl_mul_sat(v, m);
	warm = 2 * (int64_t)(p - d - 1) + (int64_t)(v - 1) * p;
	if (warm > total)
		warm = total;
	steady = total - warm < pv ? total - warm : pv;
	n = sl_xcalloc((size_t)v, sizeof *n);
	for (int64_t k = 0; k < warm; k++)
		n[(k % pv) / p]++;
	for (int64_t i = 0; i <= steady; i++) {
		int64_t held = 0;
		if (i < steady)
			n[((warm + i) % pv) / p]++;	/* forward */
		else if (steady > 0)
			break;
		for (int c = 0; c < v; c++)
			held = sl_add_sat(held, sl_mul_sat(n[c], acts[c]));
		if (held > peak)
			peak = held;
		if (i < steady)
			n[v - 1 - (i % pv) / p]--;	/* backward */
	}
	free(n);
	return peak;
}

double
sl_pipe_bubble(int p, int v, int64_t m)
{
	if (v < 1)
		v = 1;
	if (p <= 1 || m < 1)
		return 0;
	return (double)(p - 1) / ((double)v * (double)m + (double)(p - 1));
}

int64_t
sl_pipe_time(int p, int v, int64_t m, const int64_t *t)
{
	int64_t mx = 0, sum = 0;

	if (v < 1)
		v = 1;
	for (int d = 0; d < p; d++) {
		if (t[d] > mx)
			mx = t[d];
		sum = sl_add_sat(sum, t[d]);
	}
	return sl_add_sat(sl_mul_sat(m, mx), (sum - mx) / v);
}

/*
 * A device's sync S in buckets of q S while its backward B runs: buckets
 * ready at q B, 2 q B, ..., B; the reduction keeps up when S <= B and ends
 * q S after the backward, else it ends (1 - q) B earlier than S after
 * the first bucket: max(q S, S - (1 - q) B) past the backward.  The drain
 * of the devices before it hides that much more.
 */
int64_t
sl_pipe_sync_exposed(int p, int v, const int64_t *sync, const int64_t *bwd,
    const double *q)
{
	double lag = 0, worst = 0;

	if (v < 1)
		v = 1;
	for (int d = 0; d < p; d++) {
		double s = (double)sync[d], b = (double)bwd[d];
		double f = q[d] < 0 ? 0 : q[d] > 1 ? 1 : q[d];
		double x = f * s > s - (1 - f) * b ? f * s : s - (1 - f) * b;

		if (x - lag > worst)
			worst = x - lag;
		lag += b / v;
	}
	return worst >= 9.2e18 ? INT64_MAX : (int64_t)(worst + 0.5);
}
