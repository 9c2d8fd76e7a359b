/*
 * test_cli: what every program shares. cli_finish must report a write that
 * failed before close: a 64 KiB fwrite to /dev/full bypasses the stdio
 * buffer, sets the error flag and leaves nothing for fflush or fclose to
 * fail on.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "base/cli.h"
#include "t.h"

/* Runs fn in a child with stdout on path; returns its exit status. */
static int child(const char *path, void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (!freopen(path, "w", stdout))
			_exit(9);
		if (!freopen("/dev/null", "w", stderr))
			_exit(9);
		fn();
		_exit(99);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void big_unchecked_write(void)
{
	static char buf[65536];
	size_t n = fwrite(buf, 1, sizeof buf, stdout);

	(void)n;   /* ignored on purpose: cli_finish must still see the failure */
	exit(cli_finish(LC_EXIT_OK));
}

static void small_buffered_write(void)
{
	printf("hello\n");
	exit(cli_finish(LC_EXIT_OK));
}

static void test_finish(void)
{
	cli_init("test_cli");
	if (access("/dev/full", W_OK) != 0) {
		T_OK(1, "no /dev/full: skipped");
		return;
	}
	T_EQ_I(child("/dev/full", big_unchecked_write), LC_EXIT_DATA);
	T_EQ_I(child("/dev/full", small_buffered_write), LC_EXIT_DATA);
	T_EQ_I(child("/dev/null", big_unchecked_write), LC_EXIT_OK);
	T_EQ_I(child("/dev/null", small_buffered_write), LC_EXIT_OK);
}

int main(void)
{
	T_RUN(test_finish);
	return t_done();
}
