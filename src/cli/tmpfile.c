/*
 * tmpfile.c: the temporary files of the command line and the explorer (the
 * GPU runner's launch list and results, a profile's raw measurements), made
 * in one way: empty, private, named after what they hold.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

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
