#include "base/cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fileio.h"
#include "base/machine.h"

#ifndef LC_VERSION
#define LC_VERSION "0"
#endif

static const char *prog = "lc";

void cli_init(const char *name)
{
	prog = name;
	/* A standard descriptor the caller closed (2>&-, >&-) would be the
	 * next file opened, and what goes to stderr or stdout would land in
	 * it (lc-train's log lines in loss.tsv): hold each with /dev/null,
	 * opened for the other direction, so that a write to it still fails
	 * (stdout's then reported by cli_finish) and a read sees an error. */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	/* A reader that goes away (| head) ends every program quietly, as
	 * with a shell's default: a parent that ignores SIGPIPE (inherited
	 * across exec) made some programs exit 0 at the EPIPE and others
	 * say "write error: Broken pipe" and exit 1. */
	signal(SIGPIPE, SIG_DFL);
}

const char *cli_name(void)
{
	return prog;
}

static void vmsg(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(code);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void cli_stats(double t0)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	cli_warn("stats: wall %.3f s, peak RSS %.1f MiB", clock_now() - t0,
	         (double)ru.ru_maxrss / 1024.0);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help'.\n", prog);
	exit(LC_EXIT_USAGE);
}

/* The long options that arg ("--name" or "--name=value") may mean: the one
 * named exactly, else every one that name abbreviates; with val >= 0, only
 * those with that val. Returns how many, the first in *hit. */
static int long_matches(const struct option *lo, const char *arg, int val,
                        const struct option **hit)
{
	const char *name = arg + 2;
	size_t len = strcspn(name, "=");
	int n = 0;

	*hit = NULL;
	for (; lo && lo->name; lo++) {
		if (strncmp(lo->name, name, len) != 0 || (val >= 0 && lo->val != val))
			continue;
		if (strlen(lo->name) == len) {
			*hit = lo;
			return 1;
		}
		if (!n++)
			*hit = lo;
	}
	return n;
}

/* longopts with --quiet for -q and --force for -F where the program has
 * those letters and not the names, so that every program takes the same
 * long forms; made once (a program has one option table). */
static const struct option *with_common(const char *optstring, const struct option *lo)
{
	static const struct option *from;
	static struct option *made;
	static const struct { char c; const char *name; } common[] = { { 'q', "quiet" },
	                                                                { 'F', "force" } };
	size_t n = 0, k;

	if (lo == from)
		return made ? made : lo;
	from = lo;
	while (lo && lo[n].name)
		n++;
	if (!(made = calloc(n + 3, sizeof *made)))
		return lo;
	if (n)
		memcpy(made, lo, n * sizeof *made);
	k = n;
	for (size_t i = 0; i < 2; i++) {
		int have = 0;
		for (size_t j = 0; j < n; j++)
			have |= !strcmp(lo[j].name, common[i].name);
		if (!have && strchr(optstring, common[i].c))
			made[k++] = (struct option){ common[i].name, no_argument, NULL, common[i].c };
	}
	return made;
}

static int operands_not_inputs;

void cli_operands_not_inputs(void)
{
	operands_not_inputs = 1;
}

int cli_getopt(int argc, char *const argv[], const char *optstring,
               const struct option *longopts)
{
	static char opts[256];
	const struct option *o;
	const char *arg;
	size_t k = optstring[0] == '+' || optstring[0] == '-';
	int c;

	longopts = with_common(optstring, longopts);
	/* a ':' first (after any '+' or '-'): ':' for a missing argument */
	if (strlen(optstring) + 2 > sizeof opts)
		cli_die(LC_EXIT_USAGE, "cli_getopt: option string too long");
	memcpy(opts, optstring, k);
	opts[k] = ':';
	strcpy(opts + k + 1, optstring + k + (optstring[k] == ':'));
	opterr = 0;
	c = getopt_long(argc, argv, opts, longopts, NULL);
	if (c == -1 && !operands_not_inputs) {
		lc_err err;
		for (int i = optind; i < argc; i++)
			if (lc_path_not_output(argv[i], &err) < 0)
				cli_die(LC_EXIT_DATA, "%s", err.msg);
	}
	if (c != '?' && c != ':')
		return c;
	/* glibc has moved optind past a long option in error, and past a short
	 * one that misses its argument; an unknown short option may sit in the
	 * middle of a group ("-qZ"), and only optopt names it then. */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (c == ':') {
		if (strncmp(arg, "--", 2) == 0 && long_matches(longopts, arg, optopt, &o) >= 1)
			cli_usage_error("option --%s needs an argument", o->name);
		cli_usage_error("option -%c needs an argument", optopt & 0x7f);
	}
	if (optopt == 0 && strncmp(arg, "--", 2) == 0) {
		int len = (int)strcspn(arg, "=");
		if (len > 2 && long_matches(longopts, arg, -1, &o) > 1) {
			char list[512];
			size_t n = 0;
			list[0] = 0;
			for (const char *name = arg + 2; o && o->name; o++)
				if (strncmp(o->name, name, (size_t)len - 2) == 0 && n < sizeof list)
					n += (size_t)snprintf(list + n, sizeof list - n, "%s--%s",
					                      n ? ", " : "", o->name);
			cli_usage_error("option '%.*s' is ambiguous: %s", len, arg, list);
		}
		cli_usage_error("unknown option '%.*s'", len, arg);
	}
	if (optopt != 0 && strncmp(arg, "--", 2) == 0 && strchr(arg, '=') &&
	    long_matches(longopts, arg, optopt, &o) >= 1 && o->has_arg == no_argument)
		cli_usage_error("option --%s takes no argument", o->name);
	if (optopt > 0 && optopt < 128 && isprint(optopt))
		cli_usage_error("unknown option '-%c'", optopt);
	cli_usage_error("unknown option (byte %d after '-')", optopt & 0xff);
}

void cli_version(void)
{
	printf("%s (lc) %s\n", prog, LC_VERSION);
	exit(cli_finish(0));
}

void cli_binary_stdout(int force)
{
	if (!force && isatty(STDOUT_FILENO))
		cli_die(LC_EXIT_USAGE, "refusing to write a binary stream to a terminal (use -F to force)");
}

const char *cli_label(const char *path)
{
	return !path || strcmp(path, "-") == 0 ? "stdin" : path;
}

FILE *cli_open(const char *path)
{
	FILE *f;
	lc_err err;

	if (!path || strcmp(path, "-") == 0) {
		if (lc_input_not_output(stdin, "stdin", &err) < 0)
			cli_die(LC_EXIT_DATA, "%s", err.msg);
		return stdin;
	}
	f = fopen(path, "rb");
	if (!f)
		cli_die(LC_EXIT_DATA, "%s: %s", path, strerror(errno));
	if (lc_input_not_output(f, path, &err) < 0)
		cli_die(LC_EXIT_DATA, "%s", err.msg);
	return f;
}

int cli_finish(int code)
{
	/* A write that failed earlier leaves the error flag set and may have
	 * dropped its buffer, so that fflush and fclose succeed: ask ferror.
	 * A reader that went away (EPIPE) is not an error of ours; with
	 * SIGPIPE at its default the signal ends the program quietly first. */
	int bad = ferror(stdout), e = 0;

	if (fflush(stdout) != 0) {
		e = errno;
		bad = e != EPIPE;
	}
	if (fclose(stdout) != 0 && !bad && errno != EPIPE) {
		e = errno;
		bad = 1;
	}
	if (bad) {
		if (e)
			fprintf(stderr, "%s: write error: %s\n", prog, strerror(e));
		else
			fprintf(stderr, "%s: write error\n", prog);
		return LC_EXIT_DATA;
	}
	return code;
}

long long cli_int(const char *opt, const char *s, long long lo, long long hi)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		cli_usage_error("%s: expected an integer in [%lld, %lld], got '%s'", opt, lo, hi, s);
	return v;
}

double cli_double(const char *opt, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		cli_usage_error("%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, s);
	return v;
}

uint64_t cli_bytes(const char *opt, const char *s)
{
	static const char units[] = "KMGT";
	char *end;
	const char *u;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!errno && end != s && *end && (u = strchr(units, *end)) && *u && !end[1]) {
		v *= (double)(1ull << (10 * (u - units + 1)));
		end++;
	}
	if (errno || end == s || *end || !(v >= 0 && v < 0x1p62))
		cli_usage_error("%s: expected a size in bytes, with K, M, G or T for KiB, MiB, GiB or "
		                "TiB, got '%s'", opt, s);
	return (uint64_t)v;
}

int cli_threads_arg(const char *jopt)
{
	return (int)cli_int("-j/--threads", jopt, 1, CLI_THREADS_MAX);
}

int cli_threads(const char *jopt, const char **from)
{
	const char *env = getenv("LC_THREADS"), *bound;
	long n;

	if (from)
		*from = jopt ? "-j/--threads" : env && *env ? "$LC_THREADS" : NULL;
	if (jopt)
		return cli_threads_arg(jopt);
	if (env && *env)
		return (int)cli_int("$LC_THREADS", env, 1, CLI_THREADS_MAX);
	n = machine_cpus(&bound);
	if (from)
		*from = bound;
	return n > CLI_THREADS_MAX ? CLI_THREADS_MAX : (int)n;
}

const char *cli_source(const char *val, const char *opt, const char *env, const char **from)
{
	const char *v;

	if (val && *val) {
		*from = opt;
		return val;
	}
	if (env && env[0] == '$' && (v = getenv(env + 1)) && *v) {
		*from = env;
		return v;
	}
	*from = NULL;
	return NULL;
}

void cli_check_path(const char *from, const char *path)
{
	struct stat sb;

	if (from && path && stat(path, &sb) < 0)
		cli_die(LC_EXIT_DATA, "%s %s: %s", from, path, strerror(errno));
}

void cli_die_source(const char *from, const char *path, const char *msg)
{
	size_t n;
	const char *p;

	if (!from || !path || !*path)
		cli_die(LC_EXIT_DATA, "%s", msg);
	n = strlen(path);
	if (strncmp(msg, path, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
		cli_die(LC_EXIT_DATA, "%s %s: %s", from, path, msg + n + 2);
	for (p = strstr(msg, ": "); p; p = strstr(p + 1, ": "))
		if (strncmp(p + 2, path, n) == 0 && strncmp(p + 2 + n, ": ", 2) == 0)
			cli_die(LC_EXIT_DATA, "%s %s: %s", from, path, p + 2 + n + 2);
	cli_die(LC_EXIT_DATA, "%s %s: %s", from, path, msg);
}

void cli_progress_init(lc_progress *p, int quiet)
{
	memset(p, 0, sizeof *p);
	p->on = !quiet && isatty(STDERR_FILENO);
	p->t0 = p->last = clock_now();
}

void cli_progress(lc_progress *p, const char *fmt, ...)
{
	va_list ap;
	double now;

	if (!p->on)
		return;
	now = clock_now();
	if (p->drawn && now - p->last < 0.25)
		return;
	p->last = now;
	fprintf(stderr, "\r%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " [%.1fs]\033[K", now - p->t0);
	p->drawn = 1;
}

void cli_progress_done(lc_progress *p)
{
	if (p->on && p->drawn)
		fprintf(stderr, "\r\033[K");
	p->drawn = 0;
}

void cli_warn_cb(void *ctx, const char *msg)
{
	(void)ctx;
	cli_warn("%s", msg);
}

void cli_progress_cb(void *ctx, const char *line)
{
	if (line)
		cli_progress(ctx, "%s", line);
	else
		cli_progress_done(ctx);
}
