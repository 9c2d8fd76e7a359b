#include "base/sigclean.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static const char *const *files;
static const char *dir;
static volatile sig_atomic_t nfiles = -1;      /* -1: nothing to remove */
static const int caught[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction saved[3];
static int taken[3];

static void on_signal(int sig)
{
	int n = nfiles;

	for (int i = 0; i < n; i++)
		unlink(files[i]);
	if (n >= 0 && dir)
		rmdir(dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

void sigclean_begin(const char *const *f, int n, const char *d)
{
	struct sigaction sa;

	if (nfiles >= 0) {
		/* armed already: the new set, the dispositions as taken (for
		 * the moment of the change, the directory alone) */
		nfiles = 0;
		files = f;
		dir = d;
		nfiles = n;
		return;
	}
	files = f;
	dir = d;
	nfiles = n;                     /* set last: the handler reads it first */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		taken[i] = sigaction(caught[i], NULL, &saved[i]) == 0 &&
		           !(saved[i].sa_flags & SA_SIGINFO) && saved[i].sa_handler == SIG_DFL &&
		           sigaction(caught[i], &sa, NULL) == 0;
}

void sigclean_end(void)
{
	for (int i = 0; i < 3; i++)
		if (taken[i])
			sigaction(caught[i], &saved[i], NULL);
	nfiles = -1;
}
