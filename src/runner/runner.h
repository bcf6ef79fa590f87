/*
 * runner.h: the GPU validation runner (shardlab-runner).  runner_main.c reads
 * a launch list (sl_launch_write_json) and writes the result JSON; the CUDA
 * part (runner_cuda.cu) allocates each rank's buffers, runs its kernels with
 * cuBLAS and its collectives with NCCL, and measures.  This header is the
 * plain C boundary between the two.
 */
#ifndef SL_RUNNER_H
#define SL_RUNNER_H

#include "shardlab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit statuses of the runner (the same as the command line's). */
#define RN_EXIT_OK 0
#define RN_EXIT_USAGE 2
#define RN_EXIT_FAIL 3		/* no device, CUDA or NCCL failure */

typedef enum rn_mode {
	RN_MODE_NCCL,		/* one GPU per mesh device, collectives measured */
	RN_MODE_EMULATED	/* ranks one after another, collectives modelled */
} rn_mode;

typedef struct rn_opts {
	int steps;		/* measured steps (default 10) */
	int warmup;		/* unmeasured steps before them (default 3) */
	bool emulate;		/* force emulation even with enough GPUs */
} rn_opts;

typedef struct rn_dev_result {
	int id;			/* mesh device (rank) */
	int gpu;		/* CUDA device it ran on */
	bool ok;
	char error[256];	/* why not ok ("out of memory allocating ...") */
	sl_mem alloc;		/* bytes the runner allocated, by category */
	int64_t n_alloc;	/* cudaMalloc calls for the plan's buffers */
	int64_t overhead_bytes;	/* runner scratch beyond the plan's buffers */
	int64_t meminfo_delta;	/* cudaMemGetInfo: used after allocating - before */
	int64_t meminfo_peak;	/* cudaMemGetInfo: most used during the steps - before */
	bool replayed;		/* allocated and released by the list's events */
	int64_t held_peak;	/* replayed: most bytes of plan buffers held at once */
	int64_t step_ns;	/* measured: mean over the steps */
	int64_t step_min_ns;
	int64_t compute_ns;	/* measured kernels (emulated: whole rank step) */
	int64_t comm_ns;	/* modelled (emulated) or measured within the step */
	bool comm_measured;
} rn_dev_result;

typedef struct rn_result {
	char gpu_name[256];
	int n_gpus;
	int64_t gpu_memory;	/* bytes of GPU 0 */
	int cuda_runtime, cuda_driver, nccl_version;
	rn_mode mode;
	int steps, warmup;
	int n_devices;
	rn_dev_result *dev;
} rn_result;

/* What `shardlab profile` asks the runner to measure (--profile). */
#define RN_MAX_PROFILE_POINTS 32
typedef struct rn_profile {
	char gpu_name[256];
	int n_gpus;
	int64_t gpu_memory;
	int cuda_runtime, cuda_driver, nccl_version;
	int n_gemm;		/* bf16 gemms, cuBLAS: shape and mean seconds */
	int64_t gemm_m[RN_MAX_PROFILE_POINTS], gemm_n[RN_MAX_PROFILE_POINTS],
	    gemm_k[RN_MAX_PROFILE_POINTS];
	double gemm_s[RN_MAX_PROFILE_POINTS];
	int64_t copy_bytes;	/* one device-to-device copy of this many bytes */
	double copy_s;
	double launch_s;	/* an empty kernel, issue to issue */
	int n_allreduce;	/* NCCL all-reduce over all GPUs (with 2 or more) */
	int64_t ar_bytes[RN_MAX_PROFILE_POINTS];
	double ar_s[RN_MAX_PROFILE_POINTS];
} rn_profile;

/* Measures p on the local GPUs; RN_EXIT_OK, or RN_EXIT_FAIL with why. */
int rn_profile_run(rn_profile *p, char *why, size_t len);

/* Number of CUDA devices; 0 with why filled when none can be used. */
int rn_gpu_count(char *why, size_t len);
/* Runs the launch list; fills r (r->dev allocated with l->n_devices entries).
 * Returns RN_EXIT_OK, or RN_EXIT_FAIL with why filled. */
int rn_run(const sl_launch *l, const rn_opts *o, rn_result *r, char *why,
    size_t len);

#ifdef __cplusplus
}
#endif
#endif /* SL_RUNNER_H */
