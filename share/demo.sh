#!/bin/sh
# make demo: runs the pipeline on the bundled sample text, as far as the
# toolkit goes today, timing each stage.
set -eu
SHARE=${LC_SHARE:-$(dirname "$0")}
TEXT=$SHARE/samples/sample.txt
MODEL=$SHARE/models/demo
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lc-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
have() { command -v "$1" >/dev/null 2>&1; }
stage() {  # stage NAME CMD...: runs CMD, prints its time
	t0=$(date +%s.%N)
	"$@"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v n="$1" 'BEGIN { printf "  %-14s %6.2f s\n", n, b - a }' >&2
}

echo "lc demo: $(wc -c <"$TEXT" | tr -d ' ') bytes of $(head -1 "$SHARE/samples/README" 2>/dev/null || echo text)"
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
	echo "summary:"
	cat "$tmp/sum"
else
	echo "The summarizer is coming: the encoder (lc-encode), the decoder (lc-decode)"
	echo "and a bundled demo model (share/models/demo, built by lc-train) are not all"
	echo "here yet. Today's pipeline stops after tokenization:"
	lc-detokenize "$tmp/tok" | head -c 300; echo " ..."
fi
