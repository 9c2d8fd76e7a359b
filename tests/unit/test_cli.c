/*
 * test_cli: what every program shares. cli_finish must report a write that
 * failed before close: a 64 KiB fwrite to /dev/full bypasses the stdio
 * buffer, sets the error flag and leaves nothing for fflush or fclose to
 * fail on. Thread counts and paths from options or the environment are
 * checked alike, and messages about them name where they came from.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cli.h"
#include "base/machine.h"
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

/* Runs fn(arg) in a child with stderr on a file; returns its exit status
 * and the first line of what it wrote in line[n]. */
static int child_err(void (*fn)(const char *), const char *arg, char *line, size_t n)
{
	char path[] = "/tmp/test_cli.XXXXXX";
	int fd = mkstemp(path), st = -1;
	pid_t pid;
	FILE *f;

	line[0] = 0;
	if (fd < 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == 0) {
		if (dup2(fd, STDERR_FILENO) < 0 || !freopen("/dev/null", "w", stdout))
			_exit(9);
		fn(arg);
		_exit(0);
	}
	close(fd);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		st = -1;
	else
		st = WEXITSTATUS(st);
	if ((f = fopen(path, "r"))) {
		if (fgets(line, (int)n, f))
			line[strcspn(line, "\n")] = 0;
		fclose(f);
	}
	unlink(path);
	return st;
}

static void threads_arg(const char *s) { cli_threads_arg(s); }
static void threads(const char *s) { cli_threads(s, NULL); }
static void check_path(const char *s) { cli_check_path("-m/--model", s); }
static void check_path_none(const char *s) { cli_check_path(NULL, s); }

static void test_threads(void)
{
	char line[512];

	cli_init("test_cli");
	T_EQ_I(cli_threads_arg("1"), 1);
	T_EQ_I(cli_threads_arg("1024"), 1024);
	T_EQ_I(cli_threads("7", NULL), 7);
	setenv("LC_THREADS", "3", 1);
	T_EQ_I(cli_threads(NULL, NULL), 3);
	T_EQ_I(cli_threads("5", NULL), 5);             /* -j wins */
	setenv("LC_THREADS", "", 1);
	T_OK(cli_threads(NULL, NULL) >= 1, "an empty LC_THREADS is not set");
	unsetenv("LC_THREADS");
	T_OK(cli_threads(NULL, NULL) >= 1 && cli_threads(NULL, NULL) <= CLI_THREADS_MAX, "the cores");
	{
		const char *from = NULL, *bound;

		/* the processors this process may use, and where each count came from */
		T_EQ_I(cli_threads(NULL, &from), machine_cpus(&bound));
		T_EQ_S(from, bound);
		T_EQ_I(cli_threads("6", &from), 6);
		T_EQ_S(from, "-j/--threads");
		setenv("LC_THREADS", "4", 1);
		T_EQ_I(cli_threads(NULL, &from), 4);
		T_EQ_S(from, "$LC_THREADS");
		unsetenv("LC_THREADS");
	}

	T_EQ_I(child_err(threads_arg, "0", line, sizeof line), LC_EXIT_USAGE);
	T_EQ_S(line, "test_cli: -j/--threads: expected an integer in [1, 1024], got '0'");
	T_EQ_I(child_err(threads_arg, "x", line, sizeof line), LC_EXIT_USAGE);
	T_EQ_S(line, "test_cli: -j/--threads: expected an integer in [1, 1024], got 'x'");
	T_EQ_I(child_err(threads_arg, "2x", line, sizeof line), LC_EXIT_USAGE);
	T_EQ_I(child_err(threads_arg, "1025", line, sizeof line), LC_EXIT_USAGE);
	T_EQ_I(child_err(threads, "", line, sizeof line), LC_EXIT_USAGE);
	T_EQ_S(line, "test_cli: -j/--threads: expected an integer in [1, 1024], got ''");
	setenv("LC_THREADS", "many", 1);
	T_EQ_I(child_err(threads, NULL, line, sizeof line), LC_EXIT_USAGE);
	T_EQ_S(line, "test_cli: $LC_THREADS: expected an integer in [1, 1024], got 'many'");
	T_EQ_I(child_err(threads, "2", line, sizeof line), 0);   /* -j: the variable unread */
	unsetenv("LC_THREADS");
}

static const char *die_path;
static void die_source(const char *msg) { cli_die_source("-m/--model", die_path, msg); }
static void die_source_none(const char *msg) { cli_die_source(NULL, die_path, msg); }

static void test_source(void)
{
	const char *from = "x", *v;
	char line[512];

	cli_init("test_cli");
	unsetenv("LC_TEST_MODEL");
	v = cli_source("a", "-m/--model", "$LC_TEST_MODEL", &from);
	T_EQ_S(v, "a");
	T_EQ_S(from, "-m/--model");
	v = cli_source(NULL, "-m/--model", "$LC_TEST_MODEL", &from);
	T_OK(!v && !from, "neither: the default");
	setenv("LC_TEST_MODEL", "e", 1);
	v = cli_source(NULL, "-m/--model", "$LC_TEST_MODEL", &from);
	T_EQ_S(v, "e");
	T_EQ_S(from, "$LC_TEST_MODEL");
	v = cli_source("", "-m/--model", "$LC_TEST_MODEL", &from);
	T_EQ_S(v, "e");                           /* an empty option is not given */
	v = cli_source("a", "-m/--model", "$LC_TEST_MODEL", &from);
	T_EQ_S(from, "-m/--model");               /* the option wins */
	v = cli_source(NULL, "-m/--model", NULL, &from);
	T_OK(!v && !from, "no variable");
	setenv("LC_TEST_MODEL", "", 1);
	v = cli_source(NULL, "-m/--model", "$LC_TEST_MODEL", &from);
	T_OK(!v && !from, "an empty variable is not set");
	unsetenv("LC_TEST_MODEL");

	T_EQ_I(child_err(check_path, "/nonexistent/x", line, sizeof line), LC_EXIT_DATA);
	T_EQ_S(line, "test_cli: -m/--model /nonexistent/x: No such file or directory");
	T_EQ_I(child_err(check_path, "/", line, sizeof line), 0);
	T_EQ_I(child_err(check_path_none, "/nonexistent/x", line, sizeof line), 0);

	die_path = "m/x";
	T_EQ_I(child_err(die_source, "m/x: no config.json", line, sizeof line), LC_EXIT_DATA);
	T_EQ_S(line, "test_cli: -m/--model m/x: no config.json");
	T_EQ_I(child_err(die_source, "tokenizer (from -m): m/x: no tokenizer", line, sizeof line),
	       LC_EXIT_DATA);
	T_EQ_S(line, "test_cli: -m/--model m/x: no tokenizer");
	T_EQ_I(child_err(die_source, "m/x/config.json: bad", line, sizeof line), LC_EXIT_DATA);
	T_EQ_S(line, "test_cli: -m/--model m/x: m/x/config.json: bad");
	T_EQ_I(child_err(die_source, "m/xy: other", line, sizeof line), LC_EXIT_DATA);
	T_EQ_S(line, "test_cli: -m/--model m/x: m/xy: other");
	T_EQ_I(child_err(die_source_none, "m/x: as it is", line, sizeof line), LC_EXIT_DATA);
	T_EQ_S(line, "test_cli: m/x: as it is");
}

int main(void)
{
	T_RUN(test_finish);
	T_RUN(test_threads);
	T_RUN(test_source);
	return t_done();
}
