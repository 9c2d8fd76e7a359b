#!/bin/sh
# make demo: summarizes a book-length public-domain text (the Book of
# Revelation from the bundled King James Bible, a book the demo model never
# saw in training: make demo-model holds the last chapters of the Bible
# out) through lc-tokenize | lc-encode | lc-decode with the bundled demo
# model, timing each stage. DEMO_TEXT=FILE summarizes another text.
set -eu
SHARE=${LC_SHARE:-$(dirname "$0")}
MODEL=${DEMO_MODEL:-$SHARE/models/demo}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lc-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
TEXT=${DEMO_TEXT:-}
if [ -z "$TEXT" ]; then
	TEXT=$tmp/revelation.txt
	if command -v lc-cat >/dev/null 2>&1 && [ -f "$SHARE/samples/kjv.txt.xz" ]; then
		lc-cat -i text "$SHARE/samples/kjv.txt.xz" -o text |
			awk '/^BOOK REVELATION/ { p = 1 } p' >"$TEXT"
		echo "The Book of Revelation, King James Version (public domain)" >"$tmp/title"
	fi
	[ -s "$TEXT" ] || { TEXT=$SHARE/samples/sample.txt; head -1 "$SHARE/samples/README" >"$tmp/title"; }
else
	echo "$TEXT" >"$tmp/title"
fi
have() { command -v "$1" >/dev/null 2>&1; }
stage() {  # stage NAME CMD...: runs CMD, prints its time
	n=$1
	shift
	t0=$(date +%s.%N)
	"$@"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "  %-14s %6.2f s\n", n, b - a }' >&2
}

echo "lc demo: $(wc -c <"$TEXT" | tr -d ' ') bytes of $(cat "$tmp/title")"
if ! have lc-tokenize; then
	echo "lc-tokenize is not built yet; showing the stream plumbing instead:"
	lc-cat -i text "$TEXT" | lc-cat -o info
	exit 0
fi
stage lc-tokenize sh -c "lc-tokenize '$TEXT' >'$tmp/tok'"
lc-cat -o info "$tmp/tok" | awk -F'\t' '$1=="tensor"{print "  " $3 ": " $6 " tokens"}'
if have lc-encode && have lc-decode && [ -f "$MODEL/config.json" ]; then
	stage lc-encode sh -c "lc-encode -m '$MODEL' '$tmp/tok' >'$tmp/enc'"
	stage lc-decode sh -c "lc-decode -m '$MODEL' '$tmp/enc' >'$tmp/sum'"
	echo "summary (demo model: a 5M-parameter model GSG-pretrained for about 40 minutes on"
	echo "the Bible; expect Bible-like sentences, not a faithful summary; see"
	echo "share/models/demo/README for the published LOCOST checkpoint):"
	fold -s -w 78 "$tmp/sum"
else
	echo "The summarizer is coming: the encoder (lc-encode), the decoder (lc-decode)"
	echo "and a bundled demo model (share/models/demo, built by lc-train) are not all"
	echo "here yet. Today's pipeline stops after tokenization:"
	lc-detokenize "$tmp/tok" | head -c 300; echo " ..."
fi
