/*
 * fileio: whole-file operations that must not lose data.
 */
#ifndef LC_FILEIO_H
#define LC_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

/* Copies from to to (created or truncated); every read and write checked,
 * including the close. */
int lc_copy_file(const char *from, const char *to, lc_err *err);
/* Writes n bytes of s to path (created or truncated), every write and the
 * close checked. */
int lc_write_file(const char *path, const char *s, size_t n, lc_err *err);
/* fsync of the file or directory at path (a directory's entries: a
 * rename made durable); -1 and "PATH: strerror" if it fails. A directory
 * that may be written but not read (mode 333) cannot be opened to sync:
 * 0, the renames in it left to the file system. */
int lc_fsync_path(const char *path, lc_err *err);
/* The directory that holds path: its part before the last '/' ("/" for a
 * file at the root, "." without one), into dir[n]. */
void lc_parent_dir(const char *path, char *dir, size_t n);
/* Whether a and b name one file or directory (links and ".." resolved);
 * 0 when either is missing. A copy onto itself would truncate it. */
int lc_same_file(const char *a, const char *b);
/* Whether path names the file open on fd (standard input given as "-"). */
int lc_path_is_fd(const char *path, int fd);
/* The first of inputs[0..n) that is the file at path ("-": the one open
 * on standard input; n 0: "-" alone, as a program with no operand
 * reads), or NULL: an output about to be written over an input. */
const char *lc_input_at(const char *path, int n, char *const *inputs);
/* lc_input_not_output for an input given by path ("-": standard input; a
 * directory: each file in it but hidden ones, the documents textin reads
 * from it), before it is opened. */
int lc_path_not_output(const char *path, lc_err *err);
/* An input that is the regular file standard output writes to (`lc-cat
 * f.lc >>f.lc` would read its own output until the disk is full):
 * -1 and "LABEL: the input is the output file", else 0. Refusing, it
 * drops what standard output holds unwritten (a stream's start record,
 * which the exit would append to the user's file). */
int lc_input_not_output(FILE *in, const char *label, lc_err *err);

/* What is at path, following links: nothing (or a directory: no file),
 * a regular file, or something else (a device, a FIFO, a socket), which
 * a reader must refuse by name without opening it: a FIFO's open waits
 * for a writer forever, /dev/zero never ends. One rule for every file a
 * model or tokenizer directory holds. */
enum lc_file_kind { LC_FILE_NONE, LC_FILE_REG, LC_FILE_OTHER };
enum lc_file_kind lc_file_kind(const char *path);
/* 0 for a regular file; else -1 with "PATH: strerror" or "PATH: not a
 * regular file". */
int lc_regular_file(const char *path, lc_err *err);

/* The most a JSON settings file (config.json, generation_config.json, a
 * trainer's state) may hold: real ones are a few KB, and a JSON parser
 * takes some 20 times a file's size in memory. */
#define LC_MAX_JSON_FILE ((uint64_t)16 << 20)
/* 0 if path is a regular file of at most max bytes; else -1 with "PATH:
 * strerror", "PATH: not a regular file" or "PATH: N bytes, more than a
 * WHAT may hold (MAX)". */
int lc_small_file(const char *path, uint64_t max, const char *what, lc_err *err);

#endif
