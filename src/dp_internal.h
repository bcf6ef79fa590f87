/*
 * dp_internal.h: what the exact DP's files share (solve_dp.c, the folded
 * layers and the live object; dp_elim.c, variable elimination) and no one
 * else sees.
 */
#ifndef DP_INTERNAL_H
#define DP_INTERNAL_H

#include "internal.h"

#define DP_INF INT64_MAX
/* Most work (entries times strategies, summed over steps) one solve may
 * take, unless sl_solve_opts.work_cap says less. */
#define DP_MAX_WORK 4e9
#define DP_MAX_K 65535

static inline int64_t
dp_add(int64_t a, int64_t b)
{
	int64_t r;

	if (a == DP_INF || b == DP_INF)
		return DP_INF;
	if (__builtin_add_overflow(a, b, &r))
		return a > 0 ? DP_INF : INT64_MIN;
	return r;
}

/*
 * Variable elimination's state (dp_elim.c): factors over the nodes'
 * strategies, the record of each step for the plan by substitution.
 */
typedef struct ve_fac {
	int ar;			/* arity; 0 when consumed */
	int *sc;		/* scope: variables, row-major order of t */
	int64_t *t;
} ve_fac;

typedef struct ve_step {
	int x, ny;
	int *y;			/* neighbours at elimination, index order of arg */
	uint16_t *arg;		/* best strategy of x per neighbour choice */
} ve_step;

/* A candidate general step: its size when pushed (ve_cost). */
typedef struct ve_cand {
	double c;
	int v;
} ve_cand;

typedef struct ve {
	int n;
	int *k;
	int64_t **u;		/* unary costs per variable */
	ve_fac *f;
	int nf, capf;
	int **adj;		/* variable -> factor ids (dead ones skipped) */
	int *nadj, *capadj;
	uint8_t *state;		/* 0 live, 1 kept, 2 eliminated */
	int64_t cst;
	ve_step *st;
	int nst, capst;
	int *mark, stamp;
	int width;		/* largest neighbour count met */
	int64_t max_entries;	/* largest factor built */
	double work;		/* entries x strategies so far */
	double cap;		/* most work allowed */
	bool sym;		/* symbolic: scopes only, no tables */
	sl_run *run;		/* polled now and then; NULL never */
	int polls;
	int stop;		/* 1: the run's deadline passed, 2: cancelled */
	/* general steps by size, smallest (then lowest index) first: a heap
	 * of candidates, stale ones dropped when met */
	ve_cand *heap;
	int nheap, capheap;
	/* scratch */
	int *nb, *fl, capfl;
	int64_t *tmp1, *tmp2;
	size_t captmp1, captmp2;
} ve;

/* dp_elim.c */
void ve_init(ve *w, int n, const int *k);
void ve_free_work(ve *w);
void ve_free(ve *w);
void ve_add_binary(ve *w, int a, int b, int64_t *t, bool take);
void dp_minplus(const int64_t *A, const int64_t *B, int64_t *C, int r, int m,
    int c);
int ve_run(ve *w, sl_error *err);
void ve_backsub(const ve *w, int *val);

#endif
