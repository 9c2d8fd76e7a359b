#!/bin/sh
# bench/decode.sh: lc-decode seconds per generated token and peak memory
# with a full-size random model (LOCOST-base dimensions: d_model 768,
# 12 + 12 layers, 12 heads, d_kv 64, d_ff 2048, vocab 32128), greedy, at
# 16K encoder tokens and at a book length (BENCH_DECODE_LONG, default
# 524288 tokens). Prints numbers, asserts nothing.
#
# The 16K hidden states come from lc-encode on random ids. The long input
# repeats them (the decoder's cost does not depend on the values), packed
# by tests/gen/hidden_stream.c, so that the benchmark does not spend its
# time in the encoder. Seconds per token: the steps after the first,
# timed inside lc-decode (--stats) over N + 1 tokens forced with --min-new;
# the first (it reads the states) apart.
set -eu
. bench/cc.sh
SHORT=${BENCH_DECODE_SHORT:-16384}
LONG=${BENCH_DECODE_LONG:-524288}
N=${BENCH_DECODE_TOKENS:-8}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-decode.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
cp bench/locost-base.json "$D/config.json"
lc-encode -m "$D" --random-weights >/dev/null
awk -v n="$SHORT" 'BEGIN { srand(7); for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32000); print 1 }' >"$D/ids"
lc-cat -i ids <"$D/ids" | lc-encode -q -m "$D" >"$D/short.lcs"

report() { # FILE L
	/usr/bin/time -f '%M' -o "$D/time" lc-decode -q -m "$D" -f ids --stats \
		--max-new $((N + 1)) --min-new $((N + 1)) "$1" >/dev/null 2>"$D/stats"
	echo "$2 $(bench_stats "$D/stats") $(tail -1 "$D/time")" | awk '{
		printf "decode L=%-8d greedy: %.3f s/token, first token %.2f s, peak RSS %.0f MiB (hidden states %.0f MiB)\n",
		    $1, $2, $3, $5 / 1024, $1 * 768 * 4 / 1048576 }'
}

echo "bench/decode.sh: full-size random model, $N tokens, threads ${LC_THREADS:-all}"
report "$D/short.lcs" "$SHORT"

# The long input: the 16K hidden states repeated.
if command -v cc >/dev/null 2>&1 && [ -f tests/gen/hidden_stream.c ]; then
	bench_cc "$D/hs" tests/gen/hidden_stream.c
	lc-cat -o raw "$D/short.lcs" >"$D/short.raw"
	r=$(( (LONG + SHORT - 1) / SHORT ))
	i=0
	: >"$D/long.raw"
	while [ $i -lt $r ]; do cat "$D/short.raw" >>"$D/long.raw"; i=$((i + 1)); done
	rm -f "$D/short.raw"
	"$D/hs" 768 "long=$D/long.raw" >"$D/long.lcs"
	rm -f "$D/long.raw"
	report "$D/long.lcs" $((r * SHORT))
else
	echo "decode long: skipped (needs cc and tests/gen/hidden_stream.c)"
fi
