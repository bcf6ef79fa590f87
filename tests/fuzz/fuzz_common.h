/*
 * fuzz_common.h: what the libFuzzer targets share: the input written to a
 * memory file, read back by path through /proc/self/fd like any file.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A memory file holding data; its path in path.  -1 on failure. */
static inline int
fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return -1;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
