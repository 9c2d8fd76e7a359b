/*
 * machine: the processors and the memory this process may use. Under
 * taskset, in a container or a batch system's job they are fewer than
 * the machine's, and defaults sized by the machine's would oversubscribe
 * the processors (threads taking turns, workers spinning for ones that
 * do not run) or ask for more memory than the process may have (the OOM
 * killer). So:
 *
 *   processors: those of the affinity mask (taskset, a cpuset), at most
 *     a cgroup's CPU quota (docker --cpus; cgroup v2 cpu.max, v1
 *     cpu.cfs_quota_us / cpu.cfs_period_us), rounded up, at least 1;
 *   memory: physical memory, at most a cgroup's memory limit (v2
 *     memory.max, v1 memory.limit_in_bytes) on the process's cgroup or any
 *     above it, and its address-space and data limits (ulimit -v, -d;
 *     they count what is mapped, more than what is used).
 *
 * Read once and kept. Files that are missing, unreadable or hold
 * anything but a number (or "max") bound nothing.
 */
#ifndef LC_MACHINE_H
#define LC_MACHINE_H

#include <stdint.h>

/* Processors, >= 1; *bound (may be NULL) says what set them. */
int machine_cpus(const char **bound);
/* Memory in bytes, 0 when the system does not say; *bound as above. */
uint64_t machine_memory(const char **bound);

/* 1 when bytes more can still be mapped: libraries that crash or hang
 * where their own allocations fail (near an address-space limit) are
 * called only with such room (compute/). */
int machine_room(uint64_t bytes);

/* The same read under root, a directory standing for / (tests), from the
 * affinity mask's count and the physical memory given (the limits of
 * ulimit are machine_memory's alone). */
int machine_cpus_at(const char *root, int affinity, const char **bound);
uint64_t machine_memory_at(const char *root, uint64_t phys, const char **bound);

#endif
