/*
 * anytime.h: what the anytime search's files share and no one else sees:
 * the search's state and the functions one file calls in another.
 *
 *   solve_anytime.c      the entry (sl_run_anytime): the exact answers of
 *                        small problems, the reductions, GLPK after the
 *                        search
 *   anytime_search.c     the schedule of one search (at_search)
 *   anytime_state.c      the state: the load over time, what a move costs
 *                        and whether it keeps the limit, the best plan
 *   anytime_moves.c      moves under the limit: ICM, the repair, exchanges,
 *                        compound moves, relinking
 *   anytime_windows.c    the tree DP, windows re-solved exactly, forest
 *                        moves, the neighbourhood search's loop
 *   anytime_price.c      the limit priced: the Lagrangian bound, the priced
 *                        search's rounds, TRW-S
 *   anytime_portfolio.c  searches side by side
 */
#ifndef ANYTIME_H
#define ANYTIME_H

#include "internal.h"

/* Largest window, in nodes. */
#define AT_WINDOW_MAX 400
/*
 * Costs from 1e16 up mark impossible pairs (the contest writes 1e18); the
 * search sees them as 1e14, so that sums of many (up to 90,000) stay clear
 * of saturation and a plan with one impossible pair fewer is seen to be
 * better.  A plan whose cost reaches 1e14 has one and is no answer.
 */
#define AT_IMPOSSIBLE SL_COST_IMPOSSIBLE
#define AT_HARD ((int64_t)100000000000000LL)
/* Impossible pairs listed at once, for windows to aim at. */
#define AT_HARD_LIST 1024
/* The first priced round's search (ms): the first plan comes after it. */
#define AT_FIRST_SLICE 200.0
/* Most moves one exchange at the limit takes (at_fix). */
#define AT_FIX_STEPS 64

/* One search's state on the reduced problem (at_build, at_free). */
typedef struct at {
	const sl_problem *p;
	const sl_solve_opts *o;
	uint8_t **ok;		/* allowed after reductions */
	int n;
	int *aoff, *aedge;	/* incident edges, CSR */
	/* time segments; node v's memory in pieces poff[v] .. poff[v + 1] - 1,
	 * piece j using puse[j][s] over segments [plo[j], phi[j]) (one piece
	 * per node the reductions merged into v) */
	int nseg;
	int *poff, *plo, *phi;
	int64_t **puse;
	int64_t **usum;		/* per node and strategy, over its pieces */
	int *powner;		/* a piece's node */
	/* the pieces by the nodes of the segment tree that cover them
	 * (stabbing: the pieces live at a segment lie on its root path) */
	int *xoff, *xpc;
	/* the nodes live at one segment (at_live_list): lvn[0 .. nlv - 1],
	 * node lvn[i]'s usage there on strategy s at lvu[lvo[i] + s] */
	int *lvn, nlv, *lvo, *lvpos, *lvmark, lvstamp;
	int64_t *lvu;
	int64_t *base;		/* fixed load per segment (contracted nodes) */
	int64_t *tmax, *tadd;	/* segment tree over segments */
	int tsize;
	int64_t limit;		/* INT64_MAX when none */
	bool has_mem;
	int *x;			/* current plan */
	int64_t cost;
	int *best;
	int64_t best_cost;
	double first_ms;
	uint64_t rng;
	/* the search's run (its deadline the search's own end), and that end
	 * in ms from its start */
	sl_run run;
	double deadline_ms;
	/* window scratch */
	int *wstamp, stamp;
	int *worder, *wpar, *wpe, *wy, *wpos;
	int *wpi, *wpei;	/* per window position: its parent's, its edge */
	size_t *woff, *waoff;
	int64_t *wu, *wprice;
	int *warg;
	int64_t mu;		/* last price that made a window fit */
	int64_t **nc;		/* node costs the search sees (priced or not) */
	int64_t **pc;		/* priced node costs */
	bool priced;		/* searching the priced problem, limit off */
	int ball;		/* size of BFS balls solved by the DP; 0 none */
	int *gbuf, *gnew;	/* compound moves */
	int *hard, nhard;	/* nodes on impossible pairs, windows go there */
	int *fixv, *fixs;	/* at_fix's moves, to undo them */
	int64_t gshift;
	double until_ms;	/* end of the current phase */
	bool proved;		/* best is optimal */
	long balls_ok;
	/* statistics */
	long windows, improved;
} at;

/* The other end of edge e from v. */
static inline int
at_other(const sl_problem *p, int e, int v)
{
	return p->edge[e][0] == v ? p->edge[e][1] : p->edge[e][0];
}

/* Cost of edge e with v on s and the other end on t. */
static inline int64_t
at_ecell(const sl_problem *p, int e, int v, int s, int t)
{
	int u0 = p->edge[e][0], u1 = p->edge[e][1];

	if (u0 == v)
		return p->ecost[e][(size_t)s * p->k[u1] + t];
	return p->ecost[e][(size_t)t * p->k[u1] + s];
}

/* anytime_state.c */
double at_ms(const at *a);
bool at_over(at *a);
int at_rnd(at *a, int n);
int64_t at_seg_max(const at *a, int node, int l, int r, int ql, int qr);
void at_load_move(at *a, int v, int s, int t);
bool at_has_pieces(const at *a, int v);
void at_live_list(at *a, int seg);
int64_t at_use_at(const at *a, int v, int s, int seg);
int64_t at_load_over(const at *a, int v);
void at_load_reset(at *a);
int64_t at_peak(const at *a);
bool at_rise_fits(const at *a, int v, int t);
bool at_fits(at *a, int v, int t);
int64_t at_local(const at *a, int v, int s);
int64_t at_score(const at *a);
int64_t at_shift(const at *a, int64_t before, int64_t after);
void at_record(at *a);
int at_peak_seg(const at *a);
void at_build(at *a, const sl_reduction *red, bool mem);
void at_free(at *a);
void at_plan_load(const at *a, const int *x, int64_t *load);

/* anytime_moves.c */
void at_icm(at *a);
bool at_repair(at *a);
bool at_fix(at *a, int64_t gain, int64_t *spent);
void at_swap_pass(at *a);
void at_relink(at *a, const int *y);
void at_group_pass(at *a);
void at_find_hard(at *a);

/* anytime_windows.c */
long double at_tree_dp(const sl_problem *p, int nw, const int *node,
    const int *par, const int *pe, int64_t *u, const size_t *uoff, int *arg,
    const size_t *aoff, const int *dflt, int *y);
void at_lns(at *a, long double lb, double until_ms);

/* anytime_price.c */
void at_priced_search(at *a, long double *lb);
void at_lag_bound(at *a, long double *lb);

/* anytime_portfolio.c */
int at_threads(const sl_solve_opts *o);
void at_portfolio(at *a, const sl_reduction *red, bool mem, int nt,
    long double *lb, bool *infeasible);

/* anytime_search.c */
void at_search(at *a, long double *bound, bool *infeasible);

#endif
