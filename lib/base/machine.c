#include "base/machine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 4096

static const char B_AFFINITY[] = "the processors this process may run on";
static const char B_QUOTA[] = "the CPU quota of its cgroup";
static const char B_PHYS[] = "the machine's memory";
static const char B_LIMIT[] = "the memory limit of its cgroup";
static const char B_RLIMIT[] = "its address-space limit (ulimit -v or -d)";

/* The lesser of two bounds, 0 standing for none. */
static uint64_t least(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* *v and *bound become lim and what it is where lim bounds *v more. */
static void bound_by(uint64_t *v, const char **bound, uint64_t lim, const char *what)
{
	if (least(*v, lim) != *v) {
		*v = lim;
		*bound = what;
	}
}

/* The first line of dir/name, without its newline: 0, or -1 when
 * unreadable. */
static int first_line(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[PATH_CAP];
	FILE *f = snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path
	                  ? fopen(path, "re") : NULL;
	int ok = f && fgets(buf, (int)cap, f);

	if (f)
		fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The decimal number at *s (advanced past it and the spaces after it),
 * or 0 when there is none or it overflows ("max", "-1" and junk bound
 * nothing). */
static uint64_t number(const char **s)
{
	const char *p = *s;
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	while (*p == ' ')
		p++;
	*s = p;
	return v;
}

/* 1 when the comma-separated list [s, e) holds the word w. */
static int has_word(const char *s, const char *e, const char *w)
{
	size_t n = strlen(w);

	while (s < e) {
		const char *c = memchr(s, ',', (size_t)(e - s));
		const char *t = c ? c : e;

		if ((size_t)(t - s) == n && !memcmp(s, w, n))
			return 1;
		s = t + 1;
	}
	return 0;
}

/* The cgroup of this process in root/proc/self/cgroup: for controller ctl
 * in cgroup v1, or in v2's single hierarchy (ctl NULL, the "0::" line),
 * into out; 0, or -1 when there is none. */
static int cgroup_of(const char *root, const char *ctl, char *out, size_t cap)
{
	char p[PATH_CAP], line[PATH_CAP];
	FILE *f;
	int rc = -1;

	if (snprintf(p, sizeof p, "%s/proc/self/cgroup", root) >= (int)sizeof p ||
	    !(f = fopen(p, "re")))
		return -1;
	while (rc < 0 && fgets(line, sizeof line, f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL, *path;

		if (!b)
			continue;
		path = b + 1;
		path[strcspn(path, "\n")] = 0;
		if (path[0] != '/' || strlen(path) >= cap)
			continue;
		if (ctl ? has_word(a + 1, b, ctl) : (a == line + 1 && line[0] == '0' && b == a + 1)) {
			strcpy(out, path);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

typedef uint64_t (*read_fn)(const char *dir);

/* The least value fn finds in the cgroup directory base + path and each
 * above it up to base itself (which, in a container, is its own cgroup
 * when the path named is the host's); 0 when none has one. */
static uint64_t least_up(const char *base, const char *path, read_fn fn)
{
	char dir[PATH_CAP];
	uint64_t best = 0;
	size_t nb = strlen(base), n;
	struct stat st;

	if (snprintf(dir, sizeof dir, "%s%s", base, path) >= (int)sizeof dir ||
	    stat(base, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	for (n = strlen(dir); n > nb && dir[n - 1] == '/'; n--)
		;
	for (;;) {
		dir[n] = 0;
		best = least(best, fn(dir));
		if (n <= nb)
			break;
		do
			n--;
		while (n > nb && dir[n] != '/');
	}
	return best;
}

static uint64_t file_number(const char *dir, const char *name)
{
	char line[128];
	const char *s = line;
	uint64_t v;

	if (first_line(dir, name, line, sizeof line) < 0)
		return 0;
	v = number(&s);
	return *s ? 0 : v;
}

static uint64_t mem_v2(const char *dir)
{
	return file_number(dir, "memory.max");
}

static uint64_t mem_v1(const char *dir)
{
	return file_number(dir, "memory.limit_in_bytes");
}

/* A quota of q microseconds a period of p: ceil(q / p) processors. */
static uint64_t cpus_of(uint64_t q, uint64_t p)
{
	return q && p ? q / p + (q % p != 0) : 0;
}

static uint64_t cpu_v2(const char *dir)
{
	char line[128];
	const char *s = line;
	uint64_t q, per;

	if (first_line(dir, "cpu.max", line, sizeof line) < 0)
		return 0;
	q = number(&s);
	per = number(&s);
	return *s ? 0 : cpus_of(q, per);
}

static uint64_t cpu_v1(const char *dir)
{
	return cpus_of(file_number(dir, "cpu.cfs_quota_us"), file_number(dir, "cpu.cfs_period_us"));
}

/* The least of fn over the v2 hierarchy (mounted at sys/fs/cgroup, with
 * cgroup.controllers there) and v1 controller ctl's (at sys/fs/cgroup/
 * mount, for each mount named); 0 when neither bounds it. */
static uint64_t cgroup_least(const char *root, read_fn v2, const char *ctl, read_fn v1,
                             const char *const *mounts)
{
	char base[PATH_CAP], path[PATH_CAP], probe[PATH_CAP];
	uint64_t best = 0, v;

	if (snprintf(base, sizeof base, "%s/sys/fs/cgroup", root) < (int)sizeof base &&
	    snprintf(probe, sizeof probe, "%s/cgroup.controllers", base) < (int)sizeof probe &&
	    access(probe, F_OK) == 0 && cgroup_of(root, NULL, path, sizeof path) == 0)
		best = least_up(base, path, v2);
	if (cgroup_of(root, ctl, path, sizeof path) == 0)
		for (int i = 0; mounts[i]; i++)
			if (snprintf(base, sizeof base, "%s/sys/fs/cgroup/%s", root, mounts[i]) <
			            (int)sizeof base &&
			    (v = least_up(base, path, v1))) {
				best = least(best, v);
				break;
			}
	return best;
}

int machine_cpus_at(const char *root, int affinity, const char **bound)
{
	static const char *const mounts[] = { "cpu", "cpu,cpuacct", "cpuacct,cpu", NULL };
	uint64_t n = affinity > 0 ? (uint64_t)affinity : 1;
	const char *b = B_AFFINITY;

	bound_by(&n, &b, cgroup_least(root, cpu_v2, "cpu", cpu_v1, mounts), B_QUOTA);
	if (bound)
		*bound = b;
	return (int)n;
}

uint64_t machine_memory_at(const char *root, uint64_t phys, const char **bound)
{
	static const char *const mounts[] = { "memory", NULL };
	const char *b = B_PHYS;

	bound_by(&phys, &b, cgroup_least(root, mem_v2, "memory", mem_v1, mounts), B_LIMIT);
	if (bound)
		*bound = b;
	return phys;
}

/* The processors of the affinity mask, for masks of any size. */
static int affinity_count(void)
{
	long n;

	for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
		cpu_set_t *s = CPU_ALLOC((size_t)cpus);
		size_t size = CPU_ALLOC_SIZE((size_t)cpus);
		int rc, c = 0;

		if (!s)
			break;
		CPU_ZERO_S(size, s);
		rc = sched_getaffinity(0, size, s);
		if (rc == 0)
			c = CPU_COUNT_S(size, s);
		CPU_FREE(s);
		if (rc == 0 && c > 0)
			return c;
		if (rc != 0 && errno != EINVAL)
			break;
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)(n > 1 << 20 ? 1 << 20 : n) : 1;
}

static struct {
	pthread_once_t once;
	int cpus;
	uint64_t mem;
	const char *cpus_bound, *mem_bound;
} m = { PTHREAD_ONCE_INIT, 0, 0, NULL, NULL };

/* The least of the address-space and data limits (both count every
 * private mapping a process makes: malloc's, the libraries'), 0: none. */
static uint64_t rlimit_bytes(void)
{
	static const int which[] = { RLIMIT_AS, RLIMIT_DATA };
	uint64_t best = 0;

	for (int i = 0; i < 2; i++) {
		struct rlimit r;

		if (getrlimit(which[i], &r) == 0 && r.rlim_cur != RLIM_INFINITY)
			best = least(best, (uint64_t)r.rlim_cur);
	}
	return best;
}

static void init(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t phys = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;

	m.cpus = machine_cpus_at("", affinity_count(), &m.cpus_bound);
	m.mem = machine_memory_at("", phys, &m.mem_bound);
	bound_by(&m.mem, &m.mem_bound, rlimit_bytes(), B_RLIMIT);
}

int machine_cpus(const char **bound)
{
	pthread_once(&m.once, init);
	if (bound)
		*bound = m.cpus_bound;
	return m.cpus;
}

uint64_t machine_memory(const char **bound)
{
	pthread_once(&m.once, init);
	if (bound)
		*bound = m.mem_bound;
	return m.mem;
}

int machine_room(uint64_t bytes)
{
	/* MAP_NORESERVE: no memory is committed, only address space counted
	 * (ulimit -v and -d count it; strict overcommit counts it too) */
	void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return 0;
	munmap(p, (size_t)bytes);
	return 1;
}
