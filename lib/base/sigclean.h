/*
 * sigclean: partial output removed when a signal kills the program.
 *
 * A program writing files it will rename into place (shards, a converted
 * model's directory) names them here first; if SIGINT, SIGTERM or SIGHUP
 * then kills it, the handler unlinks the files, removes the directory,
 * and the program dies of the signal as it would have. Only a signal
 * left at its default (death) is taken: one the caller ignores (nohup, a
 * shell's background job) or handles keeps its disposition. The handler
 * only calls unlink, rmdir and raise (async-signal-safe).
 */
#ifndef LC_SIGCLEAN_H
#define LC_SIGCLEAN_H

/* files[nfiles] (any not yet created, or already renamed away, is
 * skipped) and then dir (or NULL) are removed on such a signal until
 * sigclean_end. The arrays are kept, not copied: they must stay as they
 * are until then. One set at a time: called again before sigclean_end,
 * it takes the new set (a directory armed before its mkdir, then its
 * files). */
void sigclean_begin(const char *const *files, int nfiles, const char *dir);
/* The signals' dispositions as they were; nothing is removed any more. */
void sigclean_end(void);

#endif
