/* The processors and memory a process may use, from cgroup files laid
 * out under a temporary root as the kernel lays them out: v2's single
 * hierarchy, v1's per-controller mounts, a container that sees the host's
 * path but has its own cgroup mounted at the top, limits on ancestors,
 * and files holding junk. */
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/machine.h"
#include "t.h"

static char root[256];

/* root/rel with its directories made, holding s. */
static void put(const char *rel, const char *s)
{
	char p[1024];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", root, rel);
	for (char *c = p + strlen(root) + 1; *c; c++)
		if (*c == '/') {
			*c = 0;
			mkdir(p, 0755);
			*c = '/';
		}
	f = fopen(p, "w");
	T_OK(f != NULL, "cannot write %s", p);
	if (f) {
		fputs(s, f);
		fclose(f);
	}
}

static void drop_root(void)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	T_OK(!*root || system(cmd) == 0, "rm %s", root);
}

static void fresh(void)
{
	drop_root();
	snprintf(root, sizeof root, "/tmp/lc-test-machine.XXXXXX");
	T_OK(mkdtemp(root) != NULL, "mkdtemp");
}

#define GiB ((uint64_t)1 << 30)

static void test_none(void)
{
	const char *b;

	fresh();   /* no /proc, no /sys: the affinity mask and physical memory */
	T_EQ_I(machine_cpus_at(root, 8, &b), 8);
	T_EQ_S(b, "the processors this process may run on");
	T_EQ_I(machine_memory_at(root, 16 * GiB, &b), 16 * GiB);
	T_EQ_S(b, "the machine's memory");
	T_EQ_I(machine_cpus_at(root, 0, NULL), 1);   /* at least one */
	T_EQ_I(machine_memory_at(root, 0, NULL), 0);
}

static void test_v2(void)
{
	const char *b;

	fresh();
	put("proc/self/cgroup", "0::/user.slice/job.scope\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
	put("sys/fs/cgroup/user.slice/job.scope/memory.max", "4294967296\n");
	put("sys/fs/cgroup/user.slice/job.scope/cpu.max", "150000 100000\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, &b), 4 * GiB);
	T_EQ_S(b, "the memory limit of its cgroup");
	T_EQ_I(machine_cpus_at(root, 8, &b), 2);   /* 1.5 processors, rounded up */
	T_EQ_S(b, "the CPU quota of its cgroup");
	/* a tighter limit above it counts; "max" bounds nothing */
	put("sys/fs/cgroup/user.slice/memory.max", "1073741824\n");
	put("sys/fs/cgroup/user.slice/job.scope/cpu.max", "max 100000\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), GiB);
	T_EQ_I(machine_cpus_at(root, 8, &b), 8);
	T_EQ_S(b, "the processors this process may run on");
	/* a quota above the affinity mask's count leaves the mask's */
	put("sys/fs/cgroup/user.slice/job.scope/cpu.max", "1600000 100000\n");
	T_EQ_I(machine_cpus_at(root, 8, NULL), 8);
	/* a limit above physical memory leaves physical memory */
	put("sys/fs/cgroup/user.slice/memory.max", "max\n");
	put("sys/fs/cgroup/user.slice/job.scope/memory.max", "68719476736\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, &b), 16 * GiB);
	T_EQ_S(b, "the machine's memory");
	/* without cgroup.controllers there is no v2 hierarchy to read */
	fresh();
	put("proc/self/cgroup", "0::/a\n");
	put("sys/fs/cgroup/a/memory.max", "1073741824\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 16 * GiB);
}

static void test_v1(void)
{
	const char *b;

	fresh();
	put("proc/self/cgroup", "12:pids:/x\n4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n"
	                        "1:name=systemd:/docker/abc\n");
	/* the container sees the host's path; its own cgroup is the mount */
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
	put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "300000\n");
	put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, &b), 2 * GiB);
	T_EQ_S(b, "the memory limit of its cgroup");
	T_EQ_I(machine_cpus_at(root, 64, &b), 3);
	T_EQ_S(b, "the CPU quota of its cgroup");
	/* v1's "no limit" (a page-rounded LLONG_MAX) and a quota of -1 */
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 16 * GiB);
	T_EQ_I(machine_cpus_at(root, 64, NULL), 64);
	/* on the host: the path itself, under a "cpu" mount */
	fresh();
	put("proc/self/cgroup", "5:memory:/batch/job7\n2:cpu:/batch/job7\n");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("sys/fs/cgroup/memory/batch/job7/memory.limit_in_bytes", "3221225472\n");
	put("sys/fs/cgroup/cpu/batch/cpu.cfs_quota_us", "50000\n");
	put("sys/fs/cgroup/cpu/batch/cpu.cfs_period_us", "100000\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 3 * GiB);
	T_EQ_I(machine_cpus_at(root, 2, NULL), 1);   /* half a processor: one */
}

static void test_junk(void)
{
	fresh();
	put("proc/self/cgroup", "0::/j\n");
	put("sys/fs/cgroup/cgroup.controllers", "");
	put("sys/fs/cgroup/j/memory.max", "12abc\n");
	put("sys/fs/cgroup/j/cpu.max", "100000\n");   /* no period */
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 16 * GiB);
	T_EQ_I(machine_cpus_at(root, 4, NULL), 4);
	put("sys/fs/cgroup/j/memory.max", "99999999999999999999999\n");   /* overflows */
	put("sys/fs/cgroup/j/cpu.max", "100000 0\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 16 * GiB);
	T_EQ_I(machine_cpus_at(root, 4, NULL), 4);
	put("sys/fs/cgroup/j/memory.max", "0\n");
	put("sys/fs/cgroup/j/cpu.max", "-5 100000\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 16 * GiB);
	T_EQ_I(machine_cpus_at(root, 4, NULL), 4);
	/* lines that are not cgroup lines, a relative path */
	put("proc/self/cgroup", "garbage\n0::j\n::\n");
	put("sys/fs/cgroup/j/memory.max", "1024\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 16 * GiB);
	/* the same limit read, once the line is right */
	put("proc/self/cgroup", "garbage\n0::/j\n");
	T_EQ_I(machine_memory_at(root, 16 * GiB, NULL), 1024);
}

/* This process: whatever bounds it, at least one processor, and no more
 * memory than the machine's. */
static void test_here(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t phys = (uint64_t)pages * (uint64_t)size;
	int n = machine_cpus(NULL);

	T_OK(n >= 1 && n <= sysconf(_SC_NPROCESSORS_CONF), "%d processors", n);
	T_OK(machine_memory(NULL) <= phys && machine_memory(NULL) > 0, "%llu bytes",
	     (unsigned long long)machine_memory(NULL));
}

/* Room in the address space: there is some here; under a limit just
 * above what a child has mapped, 64 MiB more is not there, and the limit
 * bounds the memory it may use. */
static void test_room(void)
{
	pid_t pid;
	int st = -1;

	T_OK(machine_room((uint64_t)1 << 20), "1 MiB of room");
	if ((pid = fork()) == 0) {
		unsigned long long lim = t_limit_as((long long)16 << 20);
		const char *b;

		if (!lim)
			_exit(11);
		if (machine_room((uint64_t)64 << 20))
			_exit(12);
		if (!machine_room((uint64_t)1 << 20))
			_exit(13);
		/* (under AddressSanitizer what is mapped, its shadow, is more
		 * than the machine's memory: then that stays the bound) */
		if (lim < (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) &&
		    (machine_memory(&b) != lim ||
		     strcmp(b, "its address-space limit (ulimit -v or -d)")))
			_exit(14);
		_exit(0);
	}
	T_OK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork");
	T_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's checks: status %d", st);
}

int main(void)
{
	T_RUN(test_none);
	T_RUN(test_v2);
	T_RUN(test_v1);
	T_RUN(test_junk);
	T_RUN(test_room);       /* first: its child reads the limits fresh */
	T_RUN(test_here);
	drop_root();
	return t_done();
}
