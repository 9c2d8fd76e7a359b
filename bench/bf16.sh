#!/bin/sh
# bench/bf16.sh: what --compute bf16 costs in accuracy (issue 14, item 4).
# Prints numbers, asserts nothing.
#
#  1. encoder states, bf16 compute against fp32 compute: the oracle LOCOST
#     model (tests/data/locost, its five oracle inputs, fp32 also against
#     the reference's own states) and the full-size random model
#     (bench/locost-base.json, BENCH_BF16_LEN random ids, default 8192);
#     and bf16 storage alone (lc-encode --dtype bf16, fp32 compute);
#  2. the demo model's greedy summaries (-b 1; the demo's other settings)
#     of 103 held-out documents, bf16 against fp32: identical summaries,
#     position-wise token agreement, ROUGE-L F1 of bf16 taking fp32 as
#     the reference. The documents: the 40 chapters of the bundled King
#     James Bible that the demo model never trained on (James 4 to
#     Revelation 22, lc-train --holdout 40), cut into pieces of 9
#     sentences by lc-chunk.
#
# On a processor without AVX512-BF16 or AMX, --compute bf16 runs fp32, so
# the figures are measured with LC_BF16_EMULATE=1: both operands of every
# product with weights rounded to bf16 and multiplied in fp32, the numbers
# of bf16 hardware with fp32 accumulation up to summation order.
set -eu
LEN=${BENCH_BF16_LEN:-8192}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-bf16.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
M=${LC_TESTDATA:-tests/data}/locost
for p in lc-encode lc-decode lc-tokenize lc-cat lc-chunk lc-rouge; do
	command -v $p >/dev/null || { echo "bench/bf16.sh: $p not found (run make bench)" >&2; exit 1; }
done
cc -O2 -o "$D/statediff" bench/statediff.c -lm

if ! lc-encode --help 2>&1 | grep -q -- '--compute'; then
	echo "bf16: skipped (lc-encode has no --compute)"
	exit 0
fi
# Does this processor run bf16 products? lc-encode says once when it does not.
printf '5 6 7 1\n' | lc-cat -i ids | lc-encode -q -m "$M" --compute bf16 2>"$D/probe" >/dev/null
if grep -q 'fp32' "$D/probe"; then
	export LC_BF16_EMULATE=1
	how="emulated: $(cat "$D/probe")"
else
	how="this processor's bf16 products"
fi
echo "bench/bf16.sh: bf16 compute against fp32 ($how), threads ${LC_THREADS:-all}"

# states MODEL IDSFILE OUT [lc-encode options]: raw f32 states
states() {
	m=$1 ids=$2 out=$3
	shift 3
	lc-cat -i ids <"$ids" | lc-encode -q -m "$m" "$@" | lc-cat -o raw >"$out"
}
report() { # LABEL A B
	l=$1
	shift
	"$D/statediff" "$@" | awk -v l="$l" '{
		printf "%-44s max|d|/max|a| %.2e  ||d||/||a|| %.2e  elementwise (|a| >= max/100) %.2e  (%d values)\n",
		    l, $4, $5, $6, $1 }'
}

# 1. the oracle model
: >"$D/o.ids"
: >"$D/gold.raw"
for c in L0001 L0007 L0064 L0300 L1000; do
	od -An -t d4 -v "$M/cases/$c/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ //; s/ $//' >>"$D/o.ids"
	echo >>"$D/o.ids"
	cat "$M/cases/$c/enc_out.f32" >>"$D/gold.raw"
done
states "$M" "$D/o.ids" "$D/o32.raw"
states "$M" "$D/o.ids" "$D/o16.raw" --compute bf16
report "oracle model, fp32 vs the reference" "$D/gold.raw" "$D/o32.raw"
report "oracle model, bf16 compute vs fp32" "$D/o32.raw" "$D/o16.raw"
report "oracle model, bf16 compute vs the reference" "$D/gold.raw" "$D/o16.raw"

# 2. the full-size random model
cp bench/locost-base.json "$D/config.json"
lc-encode -m "$D" --random-weights >/dev/null
awk -v n="$LEN" 'BEGIN { srand(11); for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32000); print 1 }' >"$D/r.ids"
states "$D" "$D/r.ids" "$D/r32.raw"
states "$D" "$D/r.ids" "$D/r16.raw" --compute bf16
report "full-size random model, $LEN tokens, bf16" "$D/r32.raw" "$D/r16.raw"
lc-cat -i ids <"$D/r.ids" | lc-encode -q -m "$D" --dtype bf16 | lc-cat -o raw >"$D/rs.raw"
report "full-size random model, --dtype bf16 storage" -b "$D/r32.raw" "$D/rs.raw"

# 3. the demo model's summaries of held-out chapters
S=${LC_SHARE:-share}
lc-chunk -q -p '^CHAPTER [0-9]+' "$S/samples/kjv.txt.xz" >"$D/ch.lc"
off=$(lc-cat -o info "$D/ch.lc" | awk -F'\t' '$1 == "doc" && $2 == 1150 {
	for (i = 4; i <= NF; i++) if ($i ~ /^offset=/) { sub(/offset=/, "", $i); print $i } }')
mkdir "$D/held"
xz -dc "$S/samples/kjv.txt.xz" | tail -c +$((off + 1)) >"$D/held.txt"
(cd "$D/held" && csplit -s -z -f ch -n 3 ../held.txt '/^CHAPTER [0-9]/' '{*}')
lc-chunk -q --sentences 9 "$D/held" | lc-tokenize -q -m "$S/models/demo" >"$D/held.lc"
ndoc=$(lc-cat -o info "$D/held.lc" | awk -F'\t' '$1 == "doc"' | wc -l)
for c in f32 bf16; do
	lc-encode -q -m "$S/models/demo" --compute $c <"$D/held.lc" >"$D/$c.lcs"
	lc-decode -q -m "$S/models/demo" --compute $c -b 1 -f stream "$D/$c.lcs" >"$D/$c.out"
	lc-cat -o ids "$D/$c.out" >"$D/$c.ids"
	lc-cat -o text "$D/$c.out" >"$D/$c.txt"
done
paste -d '|' "$D/f32.ids" "$D/bf16.ids" | awk -F'|' -v n="$ndoc" '{
	na = split($1, a, " "); nb = split($2, b, " "); m = na > nb ? na : nb
	same += ($1 == $2); for (i = 1; i <= m; i++) { tot++; agree += (i <= na && i <= nb && a[i] == b[i]) } }
	END { printf "demo model, %d held-out documents, greedy: %d summaries identical, token agreement %.4f (%d of %d positions)\n",
	    NR, same, agree / tot, agree, tot }'
lc-rouge -t rougeL -d line -b 0 -f tsv "$D/bf16.txt" "$D/f32.txt" >"$D/rouge.tsv"
awk -F'\t' '$2 == "rougeL" { s += $5; n++ } END { if (n) printf "demo model: ROUGE-L F1 of the bf16 summaries against the fp32 ones %.4f (mean over %d)\n", s / n, n }' "$D/rouge.tsv"
