#!/bin/sh
# book-summary.sh BOOK MODEL [PATTERN [CHAPTERS]]: a whole book summarized
# as Pang et al. (2022) summarize BookSum's books: the book cut into
# chapters before each match of PATTERN (a PCRE2 pattern, multiline;
# default '^CHAPTER [0-9]+'; the text before the first match is a piece
# too), each chapter summarized, the chapter summaries concatenated in
# chapter order (lc-chunk --join), and that text summarized again.
#
#   lc-chunk -p PATTERN BOOK | lc-tokenize | lc-encode | lc-decode -f stream
#     (= CHAPTERS: BOOK#1, BOOK#2, ... in order, each with parent= piece=)
#   | lc-chunk --join      (one document named BOOK: the summaries' text)
#   | lc-tokenize | lc-encode | lc-decode -f stream   (the book's summary)
#
# The book's summary is written to standard output as an lc stream (one
# document named BOOK; lc-cat -o text prints it), the chapters' summaries
# into CHAPTERS when given. LC_DECODE_FLAGS: lc-decode options for both
# stages (default none: the model's generation_config.json);
# LC_ENCODE_FLAGS: lc-encode options for both (--truncate: a chapter
# longer than the model takes is cut to it, as BART's 1024 positions need
# for most books' chapters; else such a chapter is an error naming it).
# Any model lc runs: a top-down transformer (lc-convert --to topdown) reads
# a long chapter whole.
set -eu
[ $# -ge 2 ] && [ $# -le 4 ] || {
	echo "usage: book-summary.sh BOOK MODEL [PATTERN [CHAPTERS]]" >&2
	exit 2
}
BOOK=$1
MODEL=$2
PATTERN=${3:-'^CHAPTER [0-9]+'}
CHAPTERS=${4:-/dev/null}
FLAGS=${LC_DECODE_FLAGS:-}
EFLAGS=${LC_ENCODE_FLAGS:-}
# shellcheck disable=SC2086 # FLAGS and EFLAGS are lists of options
lc-chunk -q -p "$PATTERN" "$BOOK" | lc-tokenize -q -m "$MODEL" | lc-encode -q -m "$MODEL" $EFLAGS |
	lc-decode -q -m "$MODEL" -f stream $FLAGS | tee "$CHAPTERS" | lc-chunk -q --join |
	lc-tokenize -q -m "$MODEL" | lc-encode -q -m "$MODEL" $EFLAGS |
	lc-decode -q -m "$MODEL" -f stream $FLAGS
