/*
 * profile.c: `shardlab profile`, which measures a hardware profile on
 * the local GPUs.  The GPU runner (shardlab-runner --profile) does the
 * measuring; the engine (sl_hw_apply_measured, sl_hw_write) turns what it
 * measured and a base profile into a profile file.  This file starts the
 * runner, waits for it, and reports.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The last non-empty line of a file (the runner's reason), into buf. */
static void
prof_last_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[512];

	buf[0] = '\0';
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] != '\0')
			snprintf(buf, len, "%s", line);
	}
	fclose(f);
}

/* Runs `runner --profile --out result`; SL_OK when it measured. */
static int
prof_run(const char *runner, const char *result, const char *errpath,
    sl_error *err)
{
	posix_spawn_file_actions_t fa;
	char *argv[5], last[512];
	pid_t pid;
	int status, rc;

	argv[0] = (char *)runner;
	argv[1] = (char *)"--profile";
	argv[2] = (char *)"--out";
	argv[3] = (char *)result;
	argv[4] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_TRUNC, 0);
	rc = posix_spawn(&pid, runner, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return sl_error_set(err, SL_EINTERNAL, runner, 0, 0,
		    _("cannot start the GPU runner: %s"), strerror(rc));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("lost the GPU runner: %s"), strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return SL_OK;
	prof_last_line(errpath, last, sizeof last);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3 &&
	    strstr(last, "no CUDA device found") != NULL)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("no CUDA-capable GPU found: profiling needs one"));
	if (WIFSIGNALED(status))
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("the GPU runner was killed by signal %d%s%s"),
		    WTERMSIG(status), *last ? ": " : "", last);
	return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
	    _("the GPU runner failed (status %d)%s%s"), WEXITSTATUS(status),
	    *last ? ": " : "", last);
}

/* The profile's name: the output file's, without directory and ".json". */
static void
prof_name(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	snprintf(buf, len, "%s", *base ? base : "measured");
	n = strlen(buf);
	if (n > 5 && strcmp(buf + n - 5, ".json") == 0)
		buf[n - 5] = '\0';
}

static int
cmd_profile(int argc, char **argv)
{
	cli_opts o;
	sl_error err;
	sl_hw hw, check;
	const char *runner;
	char result[4096] = "", errpath[4096] = "", b[4][32];
	int64_t reserve = 0;
	int rc;

	sl_error_clear(&err);
	if ((rc = cli_parse(argc, argv, &o, &err)) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 0 || o.output == NULL) {
		rc = sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("usage: shardlab profile [--hw BASE] -o FILE"));
		goto out;
	}
	if ((rc = sl_hw_load(o.hw, &hw, &err)) != SL_OK)
		goto out;
	if (!(runner = cli_validate_runner())) {
		rc = sl_error_set(&err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("the GPU runner was not built (configure found no CUDA/NCCL; see --with-cuda)"));
		goto out;
	}
	if ((rc = cli_tmpfile(result, sizeof result, "profile", &err)) != SL_OK ||
	    (rc = cli_tmpfile(errpath, sizeof errpath, "profile-err", &err)) != SL_OK)
		goto out;
	unlink(result);		/* appears only when the runner succeeds */
	if (!o.quiet)
		fprintf(stderr, "%s\n", _("shardlab: measuring the local GPUs..."));
	if ((rc = prof_run(runner, result, errpath, &err)) != SL_OK ||
	    (rc = sl_hw_apply_measured(&hw, result, &reserve, &err)) != SL_OK)
		goto out;
	{
		char base[64], desc[sizeof hw.description];
		snprintf(base, sizeof base, "%s", hw.name);
		prof_name(o.output, hw.name, sizeof hw.name);
		/* file content, in English like the bundled profiles */
		snprintf(desc, sizeof desc, "measured by shardlab profile on %s "
		    "(memory less %.2f GiB for the runtime); peak, attention "
		    "and inter-node link from %s",
		    hw.device, (double)reserve / (1 << 30), base);
		memcpy(hw.description, desc, sizeof desc);
	}
	if ((rc = sl_hw_write(&hw, o.output, &err)) != SL_OK)
		goto out;
	/* what was written must load: a profile shardlab refuses is a bug */
	if (strcmp(o.output, "-") != 0 &&
	    (rc = sl_hw_load(o.output, &check, &err)) != SL_OK) {
		rc = SL_EINTERNAL;
		err.code = SL_EINTERNAL;
		goto out;
	}
	if (strcmp(o.output, "-") != 0 && !o.quiet) {
		printf(_("wrote %s: %s, %d gemm sizes (%.0f to %.0f TFLOP/s), "
		    "memory %.2f TB/s, launch floor %s\n"), sl_esc(o.output),
		    sl_esc(hw.device),
		    hw.n_gemm, hw.gemm[0].achieved / 1e12,
		    hw.gemm[hw.n_gemm - 1].achieved / 1e12,
		    hw.mem_bandwidth / 1e12,
		    sl_format_ns((int64_t)(hw.launch_overhead * 1e9), b[0], sizeof b[0]));
		printf(ngettext("node: %d device, link %.1f GB/s, latency %s\n",
		    "node: %d devices, link %.1f GB/s, latency %s\n",
		    hw.devices_per_node),
		    hw.devices_per_node, hw.intra.bandwidth / 1e9,
		    sl_format_ns((int64_t)(hw.intra.latency * 1e9), b[1], sizeof b[1]));
		printf(_("memory for plans: %s per device (%s less %s for the CUDA "
		    "context, libraries, communication buffers and the allocator)\n"),
		    cli_bytes(hw.memory_bytes, b[2]), cli_bytes(hw.memory_bytes + reserve, b[3]),
		    cli_bytes(reserve, b[0]));
	}
out:
	if (result[0])
		unlink(result);
	if (errpath[0])
		unlink(errpath);
	cli_opts_free(&o);
	return rc == SL_OK ? SL_OK : cli_report(&err);
}

const struct cli_cmd cli_cmd_profile = {
	.name = "profile",
	.bit = CLI_C_PROFILE,
	.usage = N_("profile [--hw BASE] -o FILE"),
	.help = N_("measure a hardware profile on the local GPUs (needs the GPU runner)"),
	.run = cmd_profile,
};
