/*
 * tmpfile.c: the temporary files of the command line and the explorer (the
 * GPU runner's launch list and results, a profile's raw measurements), made
 * in one way: empty, private, named after what they hold; and the signals
 * on which both front ends remove the atomic writer's temporary files.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

int
cli_exit_signals(int *sigs, int n)
{
	/*
	 * Every signal whose default action ends the process and that can be
	 * caught (signal(7)), the real-time ones included: any of them
	 * arriving while a file is written would leave its temporary file
	 * (SIGUSR1 and SIGALRM did).  Not the faults a sanitizer reports
	 * itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL): they are defects.
	 */
	static const int fixed[] = {
		SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1,
		SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGABRT, SIGTRAP,
		SIGSYS,
#ifdef SIGPOLL
		SIGPOLL,
#endif
#ifdef SIGSTKFLT
		SIGSTKFLT,
#endif
#ifdef SIGPWR
		SIGPWR,
#endif
	};
	int k = 0;

	for (size_t i = 0; i < SL_ARRAY_LEN(fixed) && k < n; i++)
		sigs[k++] = fixed[i];
#ifdef SIGRTMIN
	for (int s = SIGRTMIN; s <= SIGRTMAX && k < n; s++)
		sigs[k++] = s;
#endif
	return k;
}

int
cli_tmpfile(char *buf, size_t len, const char *what, sl_error *err)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(buf, len, "%s/shardlab-%s-XXXXXX", dir && *dir ? dir : "/tmp", what);
	fd = mkstemp(buf);
	if (fd < 0)
		return sl_error_set(err, SL_EINTERNAL, buf, 0, 0,
		    _("cannot create a temporary file: %s"), strerror(errno));
	close(fd);
	return SL_OK;
}
