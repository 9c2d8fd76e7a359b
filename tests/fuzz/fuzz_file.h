/* fuzz_file.h: the fuzz targets' input as a file, for the readers that
 * open files by name (textin, JSON Lines, lc-cat --merge). */
#ifndef LC_FUZZ_FILE_H
#define LC_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* An anonymous memory file holding data[size] (none: an empty one, to
 * write), named path ("/proc/self/fd/N"): its descriptor, to close when
 * done, or -1. */
static inline int fuzz_file(const uint8_t *data, size_t size, char path[64])
{
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, 64, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
