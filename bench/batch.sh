#!/bin/sh
# bench/batch.sh: throughput over a corpus of short documents with a
# full-size random model (LOCOST-base dimensions, as bench/decode.sh):
# documents/s and generated tokens/s of lc-decode batched (--batch, its
# default) against one document at a time (--batch 1), in the same run;
# and lc-encode's tokens/s on short documents, together and one at a
# time, against one long one.
#
# BENCH_BATCH_DOCS documents (default 1000) of BENCH_BATCH_LEN tokens
# (default 2048), every summary forced to BENCH_BATCH_NEW tokens (default
# 32) with --min-new so that both runs do the same work; greedy, and
# BENCH_BATCH_BEAMS (default 1) beams. The hidden states of 8 distinct
# documents are encoded once and the stream repeated (streams
# concatenate) to the document count, so nothing of the size of the
# corpus is written to disk. Prints numbers, asserts nothing.
set -eu
N=${BENCH_BATCH_DOCS:-1000}
LEN=${BENCH_BATCH_LEN:-2048}
NEW=${BENCH_BATCH_NEW:-32}
BEAMS=${BENCH_BATCH_BEAMS:-1}
J=${LC_THREADS:-$(nproc)}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-batch.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
cp bench/locost-base.json "$D/config.json"
lc-encode -m "$D" --random-weights >/dev/null
awk -v n="$LEN" 'BEGIN { srand(11); for (d = 0; d < 8; d++) {
	for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32000); print 1 } }' |
	lc-cat -i ids >"$D/short.lcs"
awk -v n="$((LEN * 8))" 'BEGIN { srand(12); for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32000); print 1 }' |
	lc-cat -i ids >"$D/long.lcs"

echo "bench/batch.sh: full-size random model, $N documents of $LEN tokens, $NEW new tokens each, $BEAMS beam(s), $J threads"

# The encoder: 8 short documents several at a time (the default) and one
# at a time on all threads (--batch 1), against one document of the same
# total length; best of 3, alternating.
best() { # NAME ARGS...: the best wall time of 3 runs into $D/t.NAME
	n=$1; shift
	for k in 1 2 3; do
		/usr/bin/time -f '%e' -o "$D/t1" "$@" && cat "$D/t1"
	done | sort -n | head -1 >"$D/t.$n"
}
for k in 1 2 3; do
	/usr/bin/time -f '%e' -o "$D/a.$k" lc-encode -q -j "$J" -m "$D" "$D/short.lcs" >"$D/short.hid"
	/usr/bin/time -f '%e' -o "$D/b.$k" lc-encode -q -j "$J" --batch 1 -m "$D" "$D/short.lcs" >"$D/short1.hid"
done
cat "$D"/a.? | sort -n | head -1 >"$D/t.short"
cat "$D"/b.? | sort -n | head -1 >"$D/t.short1"
best long sh -c "lc-encode -q -j $J -m '$D' '$D/long.lcs' >/dev/null"
cmp -s "$D/short.hid" "$D/short1.hid" && esame=identical || esame=DIFFERENT
awk -v s="$(cat "$D/t.short")" -v s1="$(cat "$D/t.short1")" -v l="$(cat "$D/t.long")" \
    -v n="$((LEN * 8))" -v len="$LEN" -v same="$esame" 'BEGIN {
	printf "encode 8 documents of %d tokens: together %.0f tokens/s, one at a time %.0f tokens/s (%.2fx, states %s); one document of %d tokens %.0f tokens/s\n",
	    len, n / s, n / s1, s1 / s, same, n, n / l }'

# The decoder: the 8 hidden-state documents repeated to N (rounded up to
# a multiple of 8).
N=$(( (N + 7) / 8 * 8 ))
run() {
	/usr/bin/time -f '%e %M' -o "$D/t.$1" sh -c "$(printf '%s' "
		i=0; while [ \$i -lt $N ]; do cat '$D/short.hid'; i=\$((i + 8)); done |
		lc-decode -q -j $J -m '$D' -f ids -b $BEAMS --max-new $NEW --min-new $NEW $2 >'$D/out.$1'")"
}
run one "--batch 1"
run batched ""
set -- $(cat "$D/t.one") $(cat "$D/t.batched")
if cmp -s "$D/out.one" "$D/out.batched"; then same=identical; else same=DIFFERENT; fi
awk -v a="$1" -v am="$2" -v b="$3" -v bm="$4" -v n="$N" -v t="$NEW" -v same="$same" 'BEGIN {
	printf "decode one at a time: %.2f documents/s, %.1f tokens/s, peak RSS %.0f MiB\n", n / a, n * t / a, am / 1024
	printf "decode batched:       %.2f documents/s, %.1f tokens/s, peak RSS %.0f MiB\n", n / b, n * t / b, bm / 1024
	printf "batched / one at a time: %.2fx (outputs %s)\n", a / b, same }'
