/*
 * cli: what every program in cmd/ shares, so that they all behave alike
 * (DESIGN.md section 1): the "lc-NAME: what: why" message format, exit
 * statuses, the terminal guard for binary output, checked closing of
 * standard output, opening "-" as standard input, thread counts and a
 * progress line on standard error.
 *
 * This is the only module with process-wide state: the program name,
 * set once by cli_init() at the top of main().
 */
#ifndef LC_CLI_H
#define LC_CLI_H

#include <stdint.h>
#include <stdio.h>

struct option;   /* <getopt.h> */

enum { LC_EXIT_OK = 0, LC_EXIT_DATA = 1, LC_EXIT_USAGE = 2 };

void cli_init(const char *name);          /* "lc-cat" */
const char *cli_name(void);

/* "lc-NAME: message" on stderr, then exit(code). */
_Noreturn void cli_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* --stats' last line: "stats: wall S s, peak RSS M MiB", wall from t0
 * (clock_now). */
void cli_stats(double t0);
/* Prints the message, then "Try 'lc-NAME --help'.", exits 2. */
_Noreturn void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* getopt_long() for every program: the same arguments and results, except
 * that getopt's own messages are off and a bad option (unknown, ambiguous,
 * missing its argument, or given one it does not take) is one usage error
 * naming it, e.g. "option -m needs an argument"; it never returns '?' or ':'.
 * At the end of the options it refuses (exit 1) an operand that is the
 * regular file standard output writes to ("-": standard input; a
 * directory: one of the documents in it), before anything is read or
 * written (lc_path_not_output: `lc-cat a.lc f.lc >>f.lc` had appended
 * a.lc to f.lc first). Standard input read for want of operands is
 * checked where it is read (lc_input_not_output, cli_open), so that
 * modes reading nothing (--info) are not refused. */
int cli_getopt(int argc, char *const argv[], const char *optstring,
               const struct option *longopts);
/* Before cli_getopt: this program's operands are not inputs whose
 * documents it reads (lc-convert's SRC and DST model directories). */
void cli_operands_not_inputs(void);
/* Prints "lc-NAME (lc) VERSION" on stdout and exits 0. */
_Noreturn void cli_version(void);

/* Refuses (exit 2) to write a binary stream to a terminal unless force. */
void cli_binary_stdout(int force);

/* Opens path for reading; "-" or NULL is stdin. Dies (exit 1) on failure. */
FILE *cli_open(const char *path);
/* The name to show for a path in messages: "stdin" for "-". */
const char *cli_label(const char *path);

/* Flushes and closes stdout; a write error exits 1 with a message. Call
 * last in main; returns code so that `return cli_finish(code);` works. */
int cli_finish(int code);

/* Threads to use: the -j/--threads value if given, else $LC_THREADS when
 * set and not empty, else the processors this process may use
 * (base/machine.h: its affinity mask, a cgroup's CPU quota). A value is an
 * integer in [1, CLI_THREADS_MAX]; a bad one is a usage error naming where
 * it came from: "-j/--threads: expected an integer in [1, 1024], got 'x'",
 * or "$LC_THREADS: ..." (every program takes -j/--threads; the ones that
 * run on one thread check its value with cli_threads_arg and read no
 * $LC_THREADS). cli_threads_arg checks an option's value alone; call it
 * where -j is parsed, so that a bad value is refused before any work. */
#define CLI_THREADS_MAX 1024
/* *from (may be NULL) says where the count came from: "-j/--threads",
 * "$LC_THREADS", or what bounds the processors (machine_cpus). */
int cli_threads(const char *jopt, const char **from);
int cli_threads_arg(const char *jopt);

/* Parses a decimal integer in [lo, hi] for option `opt` (named as the
 * messages should name it, both forms where it has two: "-n/--max-len");
 * usage error "OPT: expected an integer in [LO, HI], got 'S'" otherwise. */
long long cli_int(const char *opt, const char *s, long long lo, long long hi);
double cli_double(const char *opt, const char *s, double lo, double hi);
/* A size in bytes, "1.5G" (suffixes K, M, G, T: powers of 1024), or the
 * usage error naming opt. */
uint64_t cli_bytes(const char *opt, const char *s);

/* Paths to models and tokenizers, and the messages about them. A path
 * comes from an option ("-m/--model"), else from an environment variable
 * ($LC_MODEL, $LC_TOKENIZER), else from the library's default. Messages
 * about it name where it came from, "lc-NAME: FROM PATH: why":
 *
 *   lc-tokenize: -m/--model foo: No such file or directory
 *   lc-encode: $LC_MODEL /tmp: no config.json
 *
 * and about a default the library's message says which and why.
 *
 * cli_source returns val when given and not empty, with *from = opt;
 * else, env being a variable's name after a '$' ("$LC_MODEL") or NULL,
 * the variable's value when it is set and not empty, with *from = env;
 * else NULL, with *from = NULL. */
const char *cli_source(const char *val, const char *opt, const char *env, const char **from);
/* With from non-NULL, dies (exit 1) with "FROM PATH: strerror" unless
 * path names a file or directory that exists. Nothing with from NULL. */
void cli_check_path(const char *from, const char *path);
/* Dies (exit 1) with a library's message msg about path: with from NULL,
 * msg alone; else "FROM PATH: WHY", WHY being msg less the text that
 * names the path at its start: a leading "PATH: ", or everything up to
 * the first ": PATH: " in it (the library's own account of where the
 * path came from, which FROM replaces); msg whole when neither. */
_Noreturn void cli_die_source(const char *from, const char *path, const char *msg);

/* Progress on stderr: on by default only when stderr is a terminal, off
 * with quiet. cli_progress() redraws at most a few times a second. */
typedef struct lc_progress {
	int on;
	double t0, last;
	int drawn;
} lc_progress;
void cli_progress_init(lc_progress *p, int quiet);
void cli_progress(lc_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_progress_done(lc_progress *p);  /* clears the line */
/* The library's callbacks, for the programs to pass on: a warning line
 * (ctx unused), and a progress line on the lc_progress ctx (NULL: the
 * line is done). */
void cli_warn_cb(void *ctx, const char *msg);
void cli_progress_cb(void *ctx, const char *line);

#endif
