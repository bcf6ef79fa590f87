/*
 * fuzz_file.c: libFuzzer target for the readers that take a path: IOPDDL
 * problems, plans and hardware profiles.  The input is written to a
 * memory file and read back through /proc/self/fd.
 */
#define _GNU_SOURCE
#include "shardlab.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("fuzz", 0);
	sl_error err;
	sl_problem *p;
	sl_plan_file pf;
	sl_hw hw;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	sl_error_clear(&err);
	if ((p = sl_iopddl_load(path, &err)) != NULL)
		sl_problem_free(p);
	sl_error_clear(&err);
	if (sl_plan_read(path, &pf, &err) == SL_OK)
		sl_plan_file_free(&pf);
	sl_error_clear(&err);
	(void)sl_hw_load(path, &hw, &err);
	close(fd);
	return 0;
}
