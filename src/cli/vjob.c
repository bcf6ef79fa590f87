/*
 * vjob.c: a validation run of a plan on local GPUs, shared by
 * `shardlab validate` and the explorer's v key.  start turns the plan into a
 * launch list (sl_launch_build) and hands it to the GPU runner
 * (shardlab-runner, a separate program built only with CUDA and NCCL) as a
 * child process; poll waits for it (or not) and reads its measurements back;
 * print writes the report table.  No curses here, and nothing is printed
 * except by cli_validate_print into the stream it is given.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef LIBEXECDIR
#define LIBEXECDIR "/usr/local/libexec/shardlab"
#endif

extern char **environ;

#define VAL_MSG_NO_RUNNER \
	N_("the GPU runner was not built (configure found no CUDA/NCCL; see --with-cuda)")
#define VAL_MSG_NO_GPU N_("no CUDA-capable GPU found: validation needs one")

/* ------------------------------------------------------- runner process */

/*
 * The runner: $SHARDLAB_RUNNER when set, else the installed one, else one
 * beside this program (a build tree); NULL if there is none.
 */
const char *
cli_validate_runner(void)
{
	static char path[4096];
	const char *env = getenv("SHARDLAB_RUNNER");

	if (env != NULL && *env != '\0') {
		snprintf(path, sizeof(path), "%s", env);
		return access(path, X_OK) == 0 ? path : NULL;
	}
	snprintf(path, sizeof(path), "%s", LIBEXECDIR "/shardlab-runner");
	if (access(path, X_OK) == 0)
		return path;
	if (sl_beside_program(path, sizeof(path), "shardlab-runner") &&
	    access(path, X_OK) == 0)
		return path;
	return NULL;
}

static void
val_job_cleanup(cli_vjob *job)
{
	if (job->err_fd >= 0)
		close(job->err_fd);
	job->err_fd = -1;
	if (job->launch_path[0])
		unlink(job->launch_path);
	if (job->result_path[0])
		unlink(job->result_path);
	job->launch_path[0] = job->result_path[0] = '\0';
	free(job->predicted);
	job->predicted = NULL;
	free(job->pred_ns);
	job->pred_ns = NULL;
	free(job->pred_peak);
	job->pred_peak = NULL;
	free(job->step_alloc);
	job->step_alloc = NULL;
	job->pid = -1;
}

int
cli_validate_start(const sl_space *s, const int *choice, bool emulate, int steps,
    cli_vjob *job, sl_error *err)
{
	const char *runner;
	posix_spawn_file_actions_t fa;
	sl_launch l;
	char steps_s[32];
	char *argv[10];
	int pipefd[2], rc, argc = 0;
	pid_t pid;

	memset(job, 0, sizeof(*job));
	job->pid = -1;
	job->err_fd = -1;
	if ((rc = sl_launch_build(s, choice, &l, err)) != SL_OK)
		return rc;
	job->n_devices = l.n_devices;
	job->predicted = sl_xcalloc(l.n_devices, sizeof(*job->predicted));
	job->pred_ns = sl_xcalloc(l.n_devices, sizeof(*job->pred_ns));
	job->pred_peak = sl_xcalloc(l.n_devices, sizeof(*job->pred_peak));
	job->step_alloc = sl_xcalloc(l.n_devices, sizeof(*job->step_alloc));
	for (int d = 0; d < l.n_devices; d++) {
		job->predicted[d] = l.dev[d].predicted;
		/* with the timeline's events the runner allocates its buffers,
		 * transients included, over the step */
		if (l.dev[d].n_event > 0) {
			job->pred_peak[d] = l.dev[d].tl_peak;
			job->step_alloc[d] = l.dev[d].tbuf_sum;
		}
		job->pred_ns[d] = sl_add_sat(l.dev[d].compute_ns, l.dev[d].comm_ns);
	}
	if (!(runner = cli_validate_runner())) {
		const char *env = getenv("SHARDLAB_RUNNER");
		sl_launch_free(&l);
		val_job_cleanup(job);
		/* a runner named by the user that is not there is not a build matter */
		if (env != NULL && *env != '\0')
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("SHARDLAB_RUNNER names %s, which is not an executable "
			    "program: %s"), env, strerror(access(env, F_OK) == 0 ?
			    EACCES : ENOENT));
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _(VAL_MSG_NO_RUNNER));
	}
	if ((rc = cli_tmpfile(job->launch_path, sizeof(job->launch_path), "launch",
	    err)) != SL_OK ||
	    (rc = cli_tmpfile(job->result_path, sizeof(job->result_path), "result",
	    err)) != SL_OK ||
	    (rc = sl_launch_write_json(&l, job->launch_path, err)) != SL_OK) {
		sl_launch_free(&l);
		val_job_cleanup(job);
		return rc;
	}
	sl_launch_free(&l);
	/* the result file appears only when the runner succeeds */
	unlink(job->result_path);

	if (pipe(pipefd) != 0) {
		val_job_cleanup(job);
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("cannot create a pipe: %s"), strerror(errno));
	}
	snprintf(steps_s, sizeof(steps_s), "%d", steps > 0 ? steps : 10);
	argv[argc++] = (char *)runner;
	argv[argc++] = (char *)"--steps";
	argv[argc++] = steps_s;
	if (emulate)
		argv[argc++] = (char *)"--emulate";
	argv[argc++] = (char *)"--out";
	argv[argc++] = job->result_path;
	argv[argc++] = job->launch_path;
	argv[argc] = NULL;

	/* stdin and stdout from /dev/null (a TUI owns the terminal); stderr
	 * into the pipe, read back for the error message */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	posix_spawn_file_actions_addclose(&fa, pipefd[1]);
	rc = posix_spawn(&pid, runner, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		val_job_cleanup(job);
		return sl_error_set(err, SL_EINTERNAL, runner, 0, 0,
		    _("cannot start the GPU runner: %s"), strerror(rc));
	}
	fcntl(pipefd[0], F_SETFL, fcntl(pipefd[0], F_GETFL) | O_NONBLOCK);
	fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
	job->err_fd = pipefd[0];
	job->pid = pid;
	return SL_OK;
}

static void
val_drain(cli_vjob *job)
{
	ssize_t n;

	while (job->err_fd >= 0) {
		char buf[512];

		n = read(job->err_fd, buf, sizeof(buf));
		if (n <= 0) {
			if (n == 0 || (errno != EINTR && errno != EAGAIN))
				break;
			if (errno == EAGAIN)
				break;
			continue;
		}
		size_t room = sizeof(job->errbuf) - 1 - job->errlen;
		size_t k = (size_t)n < room ? (size_t)n : room;
		memcpy(job->errbuf + job->errlen, buf, k);
		job->errlen += k;
		job->errbuf[job->errlen] = '\0';
	}
}

static int64_t
val_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static int
val_read_result(cli_vjob *job, cli_vresult *res, sl_error *err)
{
	int rc = cli_vresult_read(job->result_path, job->n_devices,
	    job->predicted, job->pred_ns, res, err);

	if (rc == SL_OK)
		for (int d = 0; d < res->n_devices; d++)
		{
			res->dev[d].pred_peak = job->pred_peak[d];
			res->dev[d].step_alloc = job->step_alloc[d];
		}
	return rc;
}

int
cli_vresult_read(const char *path, int n_devices, const sl_mem *predicted,
    const int64_t *pred_ns, cli_vresult *res, sl_error *err)
{
	sl_json j;
	sl_error je;
	json_t *root, *devs, *gpu;
	struct { const char *result_path; int n_devices;
	    const sl_mem *predicted; const int64_t *pred_ns; } jb = { path,
	    n_devices, predicted, pred_ns }, *job = &jb;

	sl_error_clear(&je);
	if (sl_json_read_file(&j, path, SL_JSON_DUPLICATES, SL_EINTERNAL,
	    &je) != SL_OK)
		return sl_error_set(err, SL_EINTERNAL, je.file, je.line,
		    je.column, _("the GPU runner's result is unreadable: %s"), je.msg);
	root = j.root;
	devs = json_object_get(root, "devices");
	if (!json_is_array(devs) || (int)json_array_size(devs) != job->n_devices) {
		sl_json_free(&j);
		return sl_error_set(err, SL_EINTERNAL, job->result_path, 0, 0,
		    ngettext("the GPU runner's result does not list the plan's %d device",
		    "the GPU runner's result does not list the plan's %d devices",
		    job->n_devices), job->n_devices);
	}
	gpu = json_object_get(root, "gpu");
	snprintf(res->gpu, sizeof(res->gpu), "%s",
	    json_string_value(json_object_get(gpu, "name")) ?
	    json_string_value(json_object_get(gpu, "name")) : "?");
	res->n_gpus = (int)val_int(gpu, "count");
	res->gpu_memory = val_int(gpu, "memory_bytes");
	snprintf(res->mode, sizeof(res->mode), "%s",
	    json_string_value(json_object_get(root, "mode")) ?
	    json_string_value(json_object_get(root, "mode")) : "?");
	res->steps = (int)val_int(root, "steps");
	res->warmup = (int)val_int(root, "warmup");
	res->n_devices = job->n_devices;
	res->dev = sl_xcalloc(job->n_devices, sizeof(*res->dev));
	for (int d = 0; d < job->n_devices; d++) {
		json_t *jd = json_array_get(devs, d);
		json_t *mem = json_object_get(jd, "memory_bytes");
		cli_vdev *v = &res->dev[d];
		const char *e = json_string_value(json_object_get(jd, "error"));
		const char *comm = json_string_value(json_object_get(jd, "comm"));

		v->predicted = job->predicted[d];
		v->pred_ns = job->pred_ns[d];
		v->ok = json_is_true(json_object_get(jd, "ok"));
		snprintf(v->error, sizeof(v->error), "%s", e ? e : "");
		for (int c = 0; c < SL_CAT_COUNT; c++)
			sl_mem_add(&v->measured, c, val_int(mem, sl_mem_cat_name(c)));
		v->meminfo_delta = val_int(jd, "meminfo_delta_bytes");
		v->meminfo_peak = val_int(jd, "meminfo_peak_bytes");
		v->held_peak = json_is_integer(json_object_get(jd, "peak_held_bytes")) ?
		    val_int(jd, "peak_held_bytes") : -1;
		v->overhead = val_int(jd, "overhead_bytes");
		v->step_ns = val_int(jd, "step_time_ns");
		v->compute_ns = val_int(jd, "compute_time_ns");
		v->comm_ns = val_int(jd, "comm_time_ns");
		v->comm_measured = comm && strcmp(comm, "measured") == 0;
	}
	sl_json_free(&j);
	return SL_OK;
}

int
cli_validate_poll(cli_vjob *job, bool block, cli_vresult *res, sl_error *err)
{
	int status, rc;
	pid_t r;

	if (job->pid < 0)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("no validation is running"));
	memset(res, 0, sizeof(*res));
	for (;;) {
		val_drain(job);
		r = waitpid(job->pid, &status, block ? 0 : WNOHANG);
		if (r == 0)
			return 1;	/* still running */
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	val_drain(job);
	job->pid = -1;
	if (r < 0) {
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("lost the GPU runner: %s"), strerror(errno));
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		rc = val_read_result(job, res, err);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 3 &&
	    strstr(job->errbuf, "no CUDA device found")) {
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _(VAL_MSG_NO_GPU));
	} else {
		/* the runner's last line says why */
		char *msg = job->errbuf, *nl;
		while ((nl = strrchr(msg, '\n')) && nl[1] == '\0')
			*nl = '\0';
		if ((nl = strrchr(msg, '\n')))
			msg = nl + 1;
		if (WIFSIGNALED(status))
			rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("the GPU runner was killed by signal %d%s%s"),
			    WTERMSIG(status), *msg ? ": " : "", msg);
		else
			rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("the GPU runner failed (status %d)%s%s"),
			    WEXITSTATUS(status), *msg ? ": " : "", msg);
	}
	val_job_cleanup(job);
	return rc;
}

void
cli_validate_cancel(cli_vjob *job)
{
	if (job->pid > 0) {
		/* SIGTERM, then SIGKILL if the runner is still there after 2 s */
		struct timespec tick = { 0, 10 * 1000 * 1000 };
		pid_t r = 0;

		kill(job->pid, SIGTERM);
		for (int i = 0; i < 200; i++) {
			r = waitpid(job->pid, NULL, WNOHANG);
			if (r != 0 && !(r < 0 && errno == EINTR))
				break;
			nanosleep(&tick, NULL);
		}
		if (r == 0) {
			kill(job->pid, SIGKILL);
			while (waitpid(job->pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	val_job_cleanup(job);
}

void
cli_vresult_free(cli_vresult *res)
{
	free(res->dev);
	memset(res, 0, sizeof(*res));
}

/* --------------------------------------------------------------- report */

/* Error of measured against predicted, percent of the measurement. */
double
cli_validate_error(int64_t predicted, int64_t measured)
{
	if (measured == 0)
		return predicted == 0 ? 0.0 : 100.0;
	return 100.0 * (double)(predicted - measured) / (double)measured;
}

static void
val_row(FILE *fp, int dev, const char *what, int64_t pred, int64_t meas,
    bool bytes, const char *source)
{
	char a[32], b[32];

	if (bytes) {
		sl_format_bytes(pred, a, sizeof(a));
		sl_format_bytes(meas, b, sizeof(b));
	} else {
		sl_format_ns(pred, a, sizeof(a));
		sl_format_ns(meas, b, sizeof(b));
	}
	cli_fprintf(fp, "%6d  %-16s %14s %14s %+9.2f%%  %s\n", dev, what, a, b,
	    cli_validate_error(pred, meas), source);
}

const sl_mem *
cli_vdev_alloc(const cli_vdev *v)
{
	return v->pred_peak > 0 ? &v->step_alloc : &v->predicted;
}

void
cli_validate_print(FILE *fp, const char *plan, const sl_space *s,
    const cli_vresult *res)
{
	char buf[32];

	fprintf(fp, _("validation of %s: model %s, mesh "), sl_esc(plan), sl_esc(s->g->name));
	if (s->mesh.n_axes == 1)
		fprintf(fp, "%d", s->mesh.axes[0].size);
	else
		fprintf(fp, "%dx%d", s->mesh.axes[0].size, s->mesh.axes[1].size);
	fprintf(fp, _(", hardware %s\n"), sl_esc(s->mesh.hw.name));
	fprintf(fp, ngettext("GPU: %s x%d (%s), %d step after %d warm-up\n",
	    "GPU: %s x%d (%s), %d steps after %d warm-up\n", res->steps), sl_esc(res->gpu),
	    res->n_gpus, sl_format_bytes(res->gpu_memory, buf, sizeof(buf)),
	    res->steps, res->warmup);
	if (strcmp(res->mode, "nccl") == 0)
		fprintf(fp, _("mode: one GPU per device; memory, kernels and NCCL "
		    "collectives measured\n"));
	else
		fprintf(fp, _("mode: emulated, ranks one after another; memory and "
		    "kernels measured, communication modelled\n"));
	cli_fprintf(fp, "%6s  %-16s %14s %14s %10s  %s\n", _("device"), _("quantity"),
	    _("predicted"), _("measured"), _("error"), _("source"));
	for (int d = 0; d < res->n_devices; d++) {
		const cli_vdev *v = &res->dev[d];

		if (!v->ok) {
			fprintf(fp, "%6d  %s\n", d, sl_esc(v->error));
			continue;
		}
		const sl_mem *alloc = cli_vdev_alloc(v);

		for (int c = 0; c < SL_CAT_COUNT; c++)
			val_row(fp, d, sl_mem_cat_name(c), sl_mem_get(alloc, c),
			    sl_mem_get(&v->measured, c), true, _("measured (allocated)"));
		val_row(fp, d, _("memory total"), sl_mem_total(alloc),
		    sl_mem_total(&v->measured), true, _("measured (allocated)"));
		val_row(fp, d, _("device memory"), sl_mem_total(&v->predicted),
		    v->meminfo_delta, true, _("measured (cudaMemGetInfo)"));
		if (v->pred_peak > 0 && v->held_peak >= 0)
			val_row(fp, d, _("timeline peak"), v->pred_peak,
			    v->held_peak, true, _("measured (held by the runner)"));
		val_row(fp, d, _("peak in step"), v->pred_peak > 0 ? v->pred_peak :
		    sl_mem_total(&v->predicted), v->meminfo_peak, true,
		    _("measured (cudaMemGetInfo)"));
		val_row(fp, d, _("step time"), v->pred_ns, v->step_ns, false,
		    v->comm_measured ? _("measured") :
		    _("compute measured + communication modelled"));
	}
	fprintf(fp, _("error = (predicted - measured) / measured; predicted time is "
	    "compute at the profile's peak FLOP/s plus modelled communication\n"));
}

