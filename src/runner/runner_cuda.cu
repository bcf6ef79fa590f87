/*
 * runner_cuda.cu: the CUDA side of shardlab-runner.  For each rank of the
 * mesh it allocates exactly the buffers of the launch list (one cudaMalloc
 * each, counted by category), then runs warm-up and measured steps of the
 * rank's kernels: matmuls with cuBLAS (bf16 in, fp32 accumulate) on the local
 * shapes, a streaming kernel for the memory-traffic items, and the
 * collectives with NCCL when every rank has its own GPU.  With fewer GPUs the
 * ranks run one after another and the collectives are taken from the cost
 * model.  With --profile it measures a hardware profile instead: gemm
 * throughput over sizes, copy bandwidth, the launch floor, and all-reduce
 * over the local GPUs.
 *
 * Operand data is irrelevant to time, so matmul and copy operands are placed
 * inside the rank's own largest buffer; only when an operand set does not fit
 * there does the runner allocate scratch, reported as overhead.
 */
#include "runner.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

struct rank_ctx {
	const sl_launch *l;
	const rn_opts *o;
	int rank, gpu;
	rn_dev_result *res;
	/* NCCL mode: one communicator per mesh axis, collective byte counts
	 * agreed over each group (uneven shards differ by device) */
	ncclComm_t comm[SL_MAX_AXES];
	const std::vector<int64_t> *coll_bytes;	/* per item index */
	pthread_barrier_t *barrier;
	int *any_failed;	/* set by a rank that cannot run; read after a barrier */
};

void
set_error(rn_dev_result *r, const char *what, const char *detail)
{
	r->ok = false;
	snprintf(r->error, sizeof(r->error), "%s: %s", what, detail);
}

int64_t
used_bytes()
{
	size_t fr = 0, tot = 0;

	if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
		return 0;
	return (int64_t)(tot - fr);
}

/* Reads and writes bytes/2 each: dst = src * 1.0, 16 bytes per thread step. */
__global__ void
traffic_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride)
		dst[i] = src[i];
}

/* Bytes of operands an item needs. */
int64_t
item_need(const sl_launch_item *it, int64_t coll_bytes)
{
	switch (it->kind) {
	case SL_ITEM_GEMM:	/* A, B, C in bf16, each 256-byte aligned */
		return 2 * it->batch * (it->m * it->k + it->k * it->n + it->m * it->n) +
		    3 * 256;
	case SL_ITEM_MEMORY:
		return it->bytes;
	case SL_ITEM_COLL:
		return coll_bytes;
	}
	return 0;
}

struct pool {
	char *big;		/* largest plan buffer */
	int64_t big_bytes;
	char *scratch;		/* only when an item does not fit in big */
	int64_t scratch_bytes;

	char *
	get(int64_t need)
	{
		if (need <= big_bytes)
			return big;
		return scratch;
	}
};

char *
align256(char *p)
{
	return (char *)(((uintptr_t)p + 255) & ~(uintptr_t)255);
}

int
run_gemm(cublasHandle_t h, const sl_launch_item *it, char *base)
{
	if (it->batch <= 0 || it->m <= 0 || it->n <= 0 || it->k <= 0)
		return 0;
	if (it->m > INT_MAX || it->n > INT_MAX || it->k > INT_MAX ||
	    it->batch > INT_MAX)
		return -1;
	int m = (int)it->m, n = (int)it->n, k = (int)it->k;
	int64_t sa = it->m * it->k, sb = it->k * it->n, sc = it->m * it->n;
	__nv_bfloat16 *A = (__nv_bfloat16 *)base;
	__nv_bfloat16 *B = (__nv_bfloat16 *)align256((char *)(A + sa * it->batch));
	__nv_bfloat16 *C = (__nv_bfloat16 *)align256((char *)(B + sb * it->batch));
	float alpha = 1.0f, beta = 0.0f;
	cublasStatus_t st;

	/* column-major C[m,n] = A[m,k] B[k,n] */
	if (it->batch == 1)
		st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
		    A, CUDA_R_16BF, m, B, CUDA_R_16BF, k, &beta, C, CUDA_R_16BF, m,
		    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	else
		st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n,
		    k, &alpha, A, CUDA_R_16BF, m, sa, B, CUDA_R_16BF, k, sb, &beta,
		    C, CUDA_R_16BF, m, sc, (int)it->batch, CUBLAS_COMPUTE_32F,
		    CUBLAS_GEMM_DEFAULT);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

void
run_memory(cudaStream_t s, const sl_launch_item *it, char *base)
{
	size_t half = (size_t)(it->bytes / 2) / sizeof(uint4);

	if (half == 0)
		return;
	const uint4 *src = (const uint4 *)base;
	uint4 *dst = (uint4 *)base + half;
	int threads = 256;
	size_t blocks = std::min<size_t>((half + threads - 1) / threads, 65535 * 8);
	traffic_kernel<<<(unsigned)blocks, threads, 0, s>>>(src, dst, half);
}

ncclResult_t
run_coll(cudaStream_t s, ncclComm_t comm, const sl_launch_item *it,
    int64_t bytes, char *base)
{
	int n = it->group;
	size_t elems = (size_t)(bytes / 2);	/* bf16 */
	ncclResult_t r = ncclSuccess;

	if (n <= 1 || elems == 0)
		return ncclSuccess;
	switch (it->coll) {
	case SL_COLL_ALL_REDUCE:
		return ncclAllReduce(base, base, elems, ncclBfloat16, ncclSum, comm, s);
	case SL_COLL_ALL_GATHER:
		return ncclAllGather(base + (size_t)bytes, base, elems / n,
		    ncclBfloat16, comm, s);
	case SL_COLL_REDUCE_SCATTER:
		return ncclReduceScatter(base, base + (size_t)bytes,
		    elems / n, ncclBfloat16, ncclSum, comm, s);
	case SL_COLL_ALL_TO_ALL: {
		size_t chunk = (size_t)bytes / ((size_t)n * n);
		int me;

		if (chunk == 0)
			return ncclSuccess;
		ncclCommUserRank(comm, &me);
		ncclGroupStart();
		for (int p = 0; p < n; p++) {
			if (p == me)
				continue;
			ncclSend(base + p * chunk, chunk, ncclChar, p, comm, s);
			ncclRecv(base + (size_t)bytes + p * chunk, chunk,
			    ncclChar, p, comm, s);
		}
		r = ncclGroupEnd();
		return r;
	}
	default:
		return ncclSuccess;
	}
}

/*
 * The plan's buffers when the list carries the timeline's events: allocated
 * and released during the step in that order, stream-ordered from a pool
 * that keeps what it reserved (as a caching allocator does) where the GPU
 * has one, else with cudaMalloc and cudaFree.
 */
struct step_mem {
	void **ptr;		/* per timeline buffer, NULL when not held */
	int64_t held, peak;	/* bytes of plan buffers held; most at once */
	int64_t base;		/* cudaMemGetInfo before the rank started */
	int64_t used_peak;	/* without a pool: cudaMemGetInfo after allocating */
	bool async;		/* cudaMallocAsync from the device's pool */
	bool first;		/* the first step: count what is allocated */
};

bool
mem_event(rank_ctx *c, cudaStream_t s, step_mem *m, const sl_launch_event *ev)
{
	const sl_launch_dev *d = &c->l->dev[c->rank];
	const sl_alloc *b = &d->tbuf[ev->buf];
	void **ptr = &m->ptr[ev->buf];
	cudaError_t e;

	if (ev->release) {
		if (*ptr) {
			if (m->async)
				cudaFreeAsync(*ptr, s);
			else
				cudaFree(*ptr);
			*ptr = NULL;
			m->held -= b->bytes;
		}
		return true;
	}
	if (*ptr)
		return true;
	e = m->async ? cudaMallocAsync(ptr, (size_t)b->bytes, s) :
	    cudaMalloc(ptr, (size_t)b->bytes);
	if (e != cudaSuccess) {
		char msg[160];
		snprintf(msg, sizeof(msg), "%s (%lld bytes)", b->name,
		    (long long)b->bytes);
		set_error(c->res, "out of memory allocating", msg);
		cudaGetLastError();
		*ptr = NULL;
		return false;
	}
	m->held += b->bytes;
	m->peak = std::max(m->peak, m->held);
	if (!m->async)
		m->used_peak = std::max(m->used_peak, used_bytes() - m->base);
	if (m->first) {
		sl_mem_add(&c->res->alloc, b->cat, b->bytes);
		c->res->n_alloc++;
	}
	return true;
}

/* Releases whatever a step left held (after a failure). */
void
mem_release_all(const sl_launch_dev *d, cudaStream_t s, step_mem *m)
{
	for (int i = 0; m->ptr && i < d->n_tbuf; i++)
		if (m->ptr[i]) {
			if (m->async)
				cudaFreeAsync(m->ptr[i], s);
			else
				cudaFree(m->ptr[i]);
			m->ptr[i] = NULL;
		}
	m->held = 0;
}

/* One step of a rank on its stream; false with the error set on failure.
 * With m, the step allocates and releases the plan's buffers by the list's
 * events. */
bool
run_step(rank_ctx *c, cublasHandle_t h, cudaStream_t s, pool *p, bool nccl,
    step_mem *m)
{
	const sl_launch_dev *d = &c->l->dev[c->rank];
	int e = 0;

	for (int i = 0; i < d->n_items; i++) {
		const sl_launch_item *it = &d->item[i];

		for (; m && e < d->n_event && d->event[e].at <= i; e++)
			if (!mem_event(c, s, m, &d->event[e]))
				return false;

		switch (it->kind) {
		case SL_ITEM_GEMM:
			if (run_gemm(h, it, p->get(item_need(it, 0))) != 0) {
				set_error(c->res, "cuBLAS matmul failed", it->name);
				return false;
			}
			break;
		case SL_ITEM_MEMORY:
			run_memory(s, it, p->get(it->bytes));
			break;
		case SL_ITEM_COLL:
			if (nccl) {
				int64_t b = (*c->coll_bytes)[i];
				ncclResult_t r = run_coll(s, c->comm[it->axis], it, b,
				    p->get(2 * b));
				if (r != ncclSuccess) {
					set_error(c->res, "NCCL collective failed",
					    ncclGetErrorString(r));
					return false;
				}
			}
			break;
		}
	}
	for (; m && e < d->n_event; e++)
		if (!mem_event(c, s, m, &d->event[e]))
			return false;
	cudaError_t err = cudaGetLastError();
	if (err != cudaSuccess) {
		set_error(c->res, "kernel launch failed", cudaGetErrorString(err));
		return false;
	}
	return true;
}

/* What a rank holds while it runs (run_rank). */
struct rank_state {
	cublasHandle_t h;
	cudaStream_t s;
	cudaEvent_t ev0, ev1;
	pool p;
	step_mem m;
	cudaMemPool_t mpool;
	std::vector<void *> bufs;	/* the plan's buffers, without events */
	int64_t base;		/* cudaMemGetInfo before the rank's buffers */
	bool nccl, replay;
};

/*
 * The rank's device, stream and cuBLAS handle, and the memory in use before
 * anything of the plan; with the list's events, the pool the step's buffers
 * come from.  false with the error set.
 */
bool
rank_start(rank_ctx *c, rank_state *st)
{
	const sl_launch_dev *d = &c->l->dev[c->rank];
	rn_dev_result *r = c->res;
	bool ok = true;

	r->id = c->rank;
	r->gpu = c->gpu;
	r->ok = true;
	cudaSetDevice(c->gpu);
	cudaFree(0);		/* create the context before the first reading */
	if (cudaStreamCreate(&st->s) != cudaSuccess || cublasCreate(&st->h) !=
	    CUBLAS_STATUS_SUCCESS) {
		set_error(r, "cannot start CUDA or cuBLAS", cudaGetErrorString(
		    cudaGetLastError()));
		ok = false;
	}
	if (ok)
		cublasSetStream(st->h, st->s);
	cudaDeviceSynchronize();
	st->base = used_bytes();
	if (st->replay) {
		int pools = 0;

		r->replayed = true;
		st->m.base = st->base;
		st->m.ptr = (void **)calloc(d->n_tbuf + 1, sizeof(void *));
		cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, c->gpu);
		if (pools && cudaDeviceGetDefaultMemPool(&st->mpool, c->gpu) ==
		    cudaSuccess) {
			uint64_t keep = UINT64_MAX;
			cudaMemPoolSetAttribute(st->mpool,
			    cudaMemPoolAttrReleaseThreshold, &keep);
			st->m.async = true;
		}
		cudaGetLastError();
	}
	return ok;
}

/*
 * Without events, the plan's buffers exactly as listed, up front; then
 * scratch for operand sets larger than the largest plan buffer, and the
 * events that time a step.  Returns ok, false with the error set.
 */
bool
rank_alloc(rank_ctx *c, rank_state *st, bool ok)
{
	const sl_launch_dev *d = &c->l->dev[c->rank];
	rn_dev_result *r = c->res;
	pool *p = &st->p;

	for (int i = 0; ok && !st->replay && i < d->n_alloc; i++) {
		void *ptr = NULL;
		cudaError_t e = cudaMalloc(&ptr, (size_t)d->alloc[i].bytes);

		if (e != cudaSuccess) {
			char msg[160];
			snprintf(msg, sizeof(msg), "%s (%lld bytes)", d->alloc[i].name,
			    (long long)d->alloc[i].bytes);
			set_error(r, "out of memory allocating", msg);
			cudaGetLastError();
			ok = false;
			break;
		}
		cudaMemset(ptr, 0, (size_t)d->alloc[i].bytes);
		st->bufs.push_back(ptr);
		sl_mem_add(&r->alloc, d->alloc[i].cat, d->alloc[i].bytes);
		r->n_alloc++;
		if (d->alloc[i].bytes > p->big_bytes) {
			p->big_bytes = d->alloc[i].bytes;
			p->big = (char *)ptr;
		}
	}
	cudaDeviceSynchronize();
	r->meminfo_delta = used_bytes() - st->base;

	for (int i = 0; ok && i < d->n_items; i++) {
		const sl_launch_item *it = &d->item[i];
		int64_t need = item_need(it, st->nccl && it->kind == SL_ITEM_COLL ?
		    2 * (*c->coll_bytes)[i] : 0);
		if (need > p->big_bytes)
			p->scratch_bytes = std::max(p->scratch_bytes, need);
	}
	if (ok && p->scratch_bytes > 0) {
		if (cudaMalloc((void **)&p->scratch, (size_t)p->scratch_bytes) !=
		    cudaSuccess) {
			cudaGetLastError();
			set_error(r, "out of memory allocating", "matmul operands");
			ok = false;
		} else {
			r->overhead_bytes = p->scratch_bytes;
		}
	}
	if (ok && (cudaEventCreate(&st->ev0) != cudaSuccess ||
	    cudaEventCreate(&st->ev1) != cudaSuccess)) {
		set_error(r, "cannot create CUDA events", cudaGetErrorString(
		    cudaGetLastError()));
		ok = false;
	}
	return ok;
}

/*
 * The warm-up steps, then the timed ones, and what they measured.  With
 * NCCL, one rank that cannot run would leave the others waiting in their
 * collectives: then none runs; every rank must reach every barrier, failed
 * or not.
 */
void
rank_steps(rank_ctx *c, rank_state *st, bool ok)
{
	const sl_launch_dev *d = &c->l->dev[c->rank];
	rn_dev_result *r = c->res;
	int64_t peak, total_ns = 0, min_ns = INT64_MAX;
	int steps = c->o->steps, warm = c->o->warmup;
	bool nccl = st->nccl;

	if (nccl) {
		if (!ok)
			*c->any_failed = 1;
		pthread_barrier_wait(c->barrier);
		if (ok && *c->any_failed) {
			set_error(r, "not run", "another rank could not start");
			ok = false;
		}
	}
	peak = used_bytes() - st->base;
	for (int step = 0; step < warm + steps; step++) {
		if (nccl)
			pthread_barrier_wait(c->barrier);
		if (!ok)
			continue;
		cudaEventRecord(st->ev0, st->s);
		ok = run_step(c, st->h, st->s, &st->p, nccl, st->replay ? &st->m : NULL);
		cudaEventRecord(st->ev1, st->s);
		cudaError_t e = cudaEventSynchronize(st->ev1);
		if (ok && e != cudaSuccess) {
			set_error(r, "step failed", cudaGetErrorString(e));
			ok = false;
		}
		peak = std::max(peak, used_bytes() - st->base);
		if (st->replay) {
			peak = std::max(peak, st->m.used_peak);
			if (st->m.first)	/* what the pool keeps after a step */
				r->meminfo_delta = used_bytes() - st->base;
			st->m.first = false;
		}
		if (!ok || step < warm)
			continue;
		float ms = 0;
		cudaEventElapsedTime(&ms, st->ev0, st->ev1);
		int64_t ns = (int64_t)(ms * 1e6);
		total_ns += ns;
		min_ns = std::min(min_ns, ns);
	}
	r->meminfo_peak = peak;
	r->held_peak = st->m.peak;
	if (ok && steps > 0) {
		r->step_ns = total_ns / steps;
		r->step_min_ns = min_ns;
		if (nccl) {
			r->comm_measured = true;
			r->compute_ns = -1;	/* not separated from the collectives */
			r->comm_ns = -1;
		} else {
			r->compute_ns = r->step_ns;
			r->comm_ns = d->comm_ns;	/* modelled */
			r->step_ns += d->comm_ns;
			r->step_min_ns += d->comm_ns;
		}
	}
}

/* Gives back everything the rank took. */
void
rank_finish(rank_ctx *c, rank_state *st)
{
	const sl_launch_dev *d = &c->l->dev[c->rank];

	if (st->ev0)
		cudaEventDestroy(st->ev0);
	if (st->ev1)
		cudaEventDestroy(st->ev1);
	for (void *b : st->bufs)
		cudaFree(b);
	if (st->replay) {
		mem_release_all(d, st->s, &st->m);
		if (st->s)
			cudaStreamSynchronize(st->s);
		if (st->mpool)	/* the next emulated rank starts from nothing */
			cudaMemPoolTrimTo(st->mpool, 0);
		free(st->m.ptr);
	}
	if (st->p.scratch)
		cudaFree(st->p.scratch);
	if (st->h)
		cublasDestroy(st->h);
	if (st->s)
		cudaStreamDestroy(st->s);
}

void *
run_rank(void *arg)
{
	rank_ctx *c = (rank_ctx *)arg;
	rank_state st{};
	bool ok;

	st.nccl = c->barrier != NULL;
	st.replay = c->l->dev[c->rank].n_event > 0;
	st.m.first = true;
	ok = rank_start(c, &st);
	ok = rank_alloc(c, &st, ok);
	rank_steps(c, &st, ok);
	rank_finish(c, &st);
	return NULL;
}

/* Mesh coordinates back to a device id (row-major). */
int
mesh_dev(const sl_mesh *m, const int *coord)
{
	int id = 0;

	for (int a = 0; a < m->n_axes; a++)
		id = id * m->axes[a].size + coord[a];
	return id;
}

int
run_nccl(const sl_launch *l, const rn_opts *o, rn_result *r, char *why, size_t len)
{
	int n = l->n_devices;
	const sl_mesh *m = &l->mesh;
	std::vector<rank_ctx> ctx(n);
	std::vector<std::vector<int64_t>> bytes(n);
	std::vector<pthread_t> th(n);
	pthread_barrier_t bar;

	std::vector<std::vector<int>> colls(n);
	int any_failed = 0;

	/* every device runs the same sequence of collectives; the j-th of one
	 * device meets the j-th of the others in its group */
	for (int d = 0; d < n; d++) {
		memset(&ctx[d], 0, sizeof(ctx[d]));
		bytes[d].assign(l->dev[d].n_items, 0);
		for (int i = 0; i < l->dev[d].n_items; i++)
			if (l->dev[d].item[i].kind == SL_ITEM_COLL)
				colls[d].push_back(i);
	}
	for (int d = 1; d < n; d++) {
		bool same = colls[d].size() == colls[0].size();
		for (size_t j = 0; same && j < colls[d].size(); j++) {
			const sl_launch_item *x = &l->dev[d].item[colls[d][j]];
			const sl_launch_item *y = &l->dev[0].item[colls[0][j]];
			same = x->coll == y->coll && x->axis == y->axis;
		}
		if (!same) {
			snprintf(why, len, "the collectives of devices 0 and %d "
			    "differ: not a launch list of one plan", d);
			return RN_EXIT_FAIL;
		}
	}
	/* sizes agreed over each group: the largest (uneven shards) */
	for (int d = 0; d < n; d++) {
		for (size_t j = 0; j < colls[d].size(); j++) {
			const sl_launch_item *it = &l->dev[d].item[colls[d][j]];
			int a = it->axis, coord[SL_MAX_AXES];
			int64_t mx = 0;
			memcpy(coord, l->dev[d].coord, sizeof(coord));
			for (int k = 0; k < m->axes[a].size; k++) {
				coord[a] = k;
				int p = mesh_dev(m, coord);
				mx = std::max(mx, l->dev[p].item[colls[p][j]].bytes);
			}
			bytes[d][colls[d][j]] = mx;
		}
	}
	/* one communicator per group of each axis */
	for (int a = 0; a < m->n_axes; a++) {
		for (int d = 0; d < n; d++) {
			if (l->dev[d].coord[a] != 0)
				continue;
			int g = m->axes[a].size, coord[SL_MAX_AXES];
			std::vector<int> devs(g);
			std::vector<ncclComm_t> comms(g);
			memcpy(coord, l->dev[d].coord, sizeof(coord));
			for (int k = 0; k < g; k++) {
				coord[a] = k;
				devs[k] = mesh_dev(m, coord);
			}
			ncclResult_t nr = ncclCommInitAll(comms.data(), g, devs.data());
			if (nr != ncclSuccess) {
				snprintf(why, len, "ncclCommInitAll failed: %s",
				    ncclGetErrorString(nr));
				return RN_EXIT_FAIL;
			}
			for (int k = 0; k < g; k++)
				ctx[devs[k]].comm[a] = comms[k];
		}
	}
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (int d = 0; d < n; d++) {
		ctx[d].l = l;
		ctx[d].o = o;
		ctx[d].rank = d;
		ctx[d].gpu = d;
		ctx[d].res = &r->dev[d];
		ctx[d].coll_bytes = &bytes[d];
		ctx[d].barrier = &bar;
		ctx[d].any_failed = &any_failed;
		pthread_create(&th[d], NULL, run_rank, &ctx[d]);
	}
	for (int d = 0; d < n; d++)
		pthread_join(th[d], NULL);
	pthread_barrier_destroy(&bar);
	for (int d = 0; d < n; d++)
		for (int a = 0; a < m->n_axes; a++)
			if (ctx[d].comm[a])
				ncclCommDestroy(ctx[d].comm[a]);
	return RN_EXIT_OK;
}

/* ------------------------------------------------------------ profile */

__global__ void
empty_kernel()
{
}

/* Mean seconds of iters calls of fn on stream s after warm-up calls. */
template <typename F>
double
time_it(cudaStream_t s, int iters, F fn)
{
	cudaEvent_t e0, e1;
	float ms = 0;

	for (int i = 0; i < 3; i++)
		fn();
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaEventRecord(e0, s);
	for (int i = 0; i < iters; i++)
		fn();
	cudaEventRecord(e1, s);
	cudaEventSynchronize(e1);
	cudaEventElapsedTime(&ms, e0, e1);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return ms / 1e3 / iters;
}

int
profile_gemms(rn_profile *p, cudaStream_t s, char *why, size_t len)
{
	static const int64_t ms[] = { 512, 2048, 8192 };
	static const int64_t nk[][2] = { { 1024, 1024 }, { 4096, 1024 },
	    { 1024, 4096 }, { 4096, 4096 }, { 16384, 4096 }, { 4096, 16384 } };
	const int64_t max_elems = 8192LL * 16384 + 16384LL * 4096 + 8192LL * 16384;
	cublasHandle_t h;
	char *buf = NULL;

	if (cudaMalloc(&buf, 2 * max_elems + 3 * 256) != cudaSuccess) {
		snprintf(why, len, "out of memory for the gemm operands");
		return RN_EXIT_FAIL;
	}
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
		cudaFree(buf);
		snprintf(why, len, "cublasCreate failed");
		return RN_EXIT_FAIL;
	}
	cublasSetStream(h, s);
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		for (size_t j = 0; j < sizeof(nk) / sizeof(nk[0]); j++) {
			sl_launch_item it;
			int bad = 0;

			if (p->n_gemm >= RN_MAX_PROFILE_POINTS)
				break;
			memset(&it, 0, sizeof(it));
			it.kind = SL_ITEM_GEMM;
			it.batch = 1;
			it.m = ms[i];
			it.n = nk[j][0];
			it.k = nk[j][1];
			double t = time_it(s, 20, [&] {
				bad |= run_gemm(h, &it, buf);
			});
			if (bad || cudaGetLastError() != cudaSuccess) {
				cublasDestroy(h);
				cudaFree(buf);
				snprintf(why, len, "gemm %lld x %lld x %lld failed",
				    (long long)it.m, (long long)it.n, (long long)it.k);
				return RN_EXIT_FAIL;
			}
			p->gemm_m[p->n_gemm] = it.m;
			p->gemm_n[p->n_gemm] = it.n;
			p->gemm_k[p->n_gemm] = it.k;
			p->gemm_s[p->n_gemm++] = t;
		}
	cublasDestroy(h);
	cudaFree(buf);
	return RN_EXIT_OK;
}

int
profile_memory(rn_profile *p, cudaStream_t s, char *why, size_t len)
{
	const int64_t bytes = 512LL << 20;
	char *a = NULL, *b = NULL;

	if (cudaMalloc(&a, bytes) != cudaSuccess ||
	    cudaMalloc(&b, bytes) != cudaSuccess) {
		cudaFree(a);
		snprintf(why, len, "out of memory for the copy test");
		return RN_EXIT_FAIL;
	}
	p->copy_bytes = bytes;
	p->copy_s = time_it(s, 20, [&] {
		cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
	});
	p->launch_s = time_it(s, 1000, [&] {
		empty_kernel<<<1, 1, 0, s>>>();
	});
	cudaFree(a);
	cudaFree(b);
	if (cudaGetLastError() != cudaSuccess) {
		snprintf(why, len, "the copy or launch test failed");
		return RN_EXIT_FAIL;
	}
	return RN_EXIT_OK;
}

/* All-reduce over every GPU, driven from one thread in NCCL groups. */
int
profile_allreduce(rn_profile *p, char *why, size_t len)
{
	static const int64_t sizes[] = { 1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28 };
	int n = p->n_gpus;
	std::vector<ncclComm_t> comm(n);
	std::vector<cudaStream_t> st(n);
	std::vector<char *> buf(n, nullptr);
	std::vector<int> devs(n);
	int rc = RN_EXIT_OK;

	for (int d = 0; d < n; d++)
		devs[d] = d;
	if (ncclCommInitAll(comm.data(), n, devs.data()) != ncclSuccess) {
		snprintf(why, len, "ncclCommInitAll failed");
		return RN_EXIT_FAIL;
	}
	for (int d = 0; d < n; d++) {
		cudaSetDevice(d);
		cudaStreamCreate(&st[d]);
		if (cudaMalloc(&buf[d], sizes[4]) != cudaSuccess) {
			snprintf(why, len, "out of memory on GPU %d", d);
			rc = RN_EXIT_FAIL;
		}
	}
	for (size_t i = 0; rc == RN_EXIT_OK && i < sizeof(sizes) / sizeof(sizes[0]);
	    i++) {
		const int iters = 20;
		struct timespec t0, t1;
		auto once = [&] {
			ncclGroupStart();
			for (int d = 0; d < n; d++)
				ncclAllReduce(buf[d], buf[d], sizes[i] / 2, ncclBfloat16,
				    ncclSum, comm[d], st[d]);
			ncclGroupEnd();
		};
		auto sync = [&] {
			for (int d = 0; d < n; d++) {
				cudaSetDevice(d);
				cudaStreamSynchronize(st[d]);
			}
		};
		for (int w = 0; w < 3; w++)
			once();
		sync();
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int it = 0; it < iters; it++)
			once();
		sync();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		p->ar_bytes[p->n_allreduce] = sizes[i];
		p->ar_s[p->n_allreduce++] = ((t1.tv_sec - t0.tv_sec) +
		    (t1.tv_nsec - t0.tv_nsec) / 1e9) / iters;
	}
	for (int d = 0; d < n; d++) {
		cudaSetDevice(d);
		cudaFree(buf[d]);
		cudaStreamDestroy(st[d]);
		ncclCommDestroy(comm[d]);
	}
	cudaSetDevice(0);
	return rc;
}

} /* namespace */

extern "C" int
rn_profile_run(rn_profile *p, char *why, size_t len)
{
	cudaDeviceProp prop;
	cudaStream_t s;
	int rc;

	memset(p, 0, sizeof(*p));
	p->n_gpus = rn_gpu_count(why, len);
	if (p->n_gpus <= 0)
		return RN_EXIT_FAIL;
	cudaSetDevice(0);
	if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
		snprintf(p->gpu_name, sizeof(p->gpu_name), "%s", prop.name);
		p->gpu_memory = (int64_t)prop.totalGlobalMem;
	}
	cudaRuntimeGetVersion(&p->cuda_runtime);
	cudaDriverGetVersion(&p->cuda_driver);
	ncclGetVersion(&p->nccl_version);
	cudaStreamCreate(&s);
	rc = profile_gemms(p, s, why, len);
	if (rc == RN_EXIT_OK)
		rc = profile_memory(p, s, why, len);
	cudaStreamDestroy(s);
	if (rc == RN_EXIT_OK && p->n_gpus >= 2)
		rc = profile_allreduce(p, why, len);
	return rc;
}

extern "C" int
rn_gpu_count(char *why, size_t len)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		snprintf(why, len, "%s", cudaGetErrorString(e));
		return 0;
	}
	if (n == 0)
		snprintf(why, len, "no CUDA device");
	return n;
}

extern "C" int
rn_run(const sl_launch *l, const rn_opts *o, rn_result *r, char *why, size_t len)
{
	int ngpu = rn_gpu_count(why, len);
	cudaDeviceProp prop;

	memset(r, 0, sizeof(*r));
	if (ngpu <= 0)
		return RN_EXIT_FAIL;
	r->n_gpus = ngpu;
	if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
		snprintf(r->gpu_name, sizeof(r->gpu_name), "%s", prop.name);
		r->gpu_memory = (int64_t)prop.totalGlobalMem;
	}
	cudaRuntimeGetVersion(&r->cuda_runtime);
	cudaDriverGetVersion(&r->cuda_driver);
	ncclGetVersion(&r->nccl_version);
	r->steps = o->steps;
	r->warmup = o->warmup;
	r->n_devices = l->n_devices;
	r->dev = (rn_dev_result *)calloc(l->n_devices, sizeof(*r->dev));
	if (!r->dev) {
		snprintf(why, len, "out of host memory");
		return RN_EXIT_FAIL;
	}
	if (!o->emulate && l->n_devices > 1 && ngpu >= l->n_devices) {
		r->mode = RN_MODE_NCCL;
		return run_nccl(l, o, r, why, len);
	}
	r->mode = RN_MODE_EMULATED;
	for (int d = 0; d < l->n_devices; d++) {
		rank_ctx c;

		memset(&c, 0, sizeof(c));
		c.l = l;
		c.o = o;
		c.rank = d;
		c.gpu = d % ngpu;
		c.res = &r->dev[d];
		run_rank(&c);
	}
	return RN_EXIT_OK;
}
