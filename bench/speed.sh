#!/bin/sh
# bench/speed.sh: the machine's speed limit for LOCOST at book length, in
# one run (issue 14): the measured rates, encode and decode against their
# floors, and the headline, a 600,000-token document encoded and 512 tokens
# decoded by `lc-encode | lc-decode` running at once. Full-size random
# model (bench/locost-base.json: d_model 768, d_ff 2048 gated, 12 + 12
# layers, 12 heads), random ids. Prints numbers, asserts nothing.
#
# Floors, from the best rates bench/rates.c measures in this run on the
# same threads (through lc's compute seam: OpenBLAS, oneDNN):
#   encode  the encoder's matrix products, 2 x 12 layers x (3 d^2 +
#           3 d d_ff) FLOPs per token (the k, q and output projections of
#           the gated S4D block, the gated feed-forward), at the best rate
#           of the precision (fp32 or bf16);
#   decode  per generated token, max(the folded cross-attention's
#           4 x layers x heads x L x d FLOPs at the best fp32 rate, the
#           fp32 states it reads, layers x L x d x 4 bytes, at the read
#           bandwidth). Goals: encode and greedy decode <= 1.3x the floor,
#           4 beams <= 1.6x greedy per step; headline fp32 <= 12 min,
#           bf16 <= 6 min, peak RSS of the pipeline <= 8 GB.
#   4 beams the layers lc-decode caches (--cross-cache, its default
#           budget: a quarter of memory) read their keys and values,
#           2 x L x heads x d_kv numbers, at the read bandwidth; the
#           others fold 4 rows: 4 times the greedy arithmetic.
#           lc-decode computes the cache at the first step (its time is
#           printed apart). A second fp32 4-beam row gives the cache half
#           of memory (--cross-cache): what a user buys with more of it.
#   and a greedy row over the same states as a bf16 stream (lc-encode
#           --dtype bf16) in fp32 arithmetic, against the float32 states.
#
# Decode is timed inside lc-decode (--stats: the steps after the first,
# the model, the states and the first step apart) over N + 1 tokens:
# N = 4 Mi / L, from 12 to 32 (32 at 16K and 131K, 12 at 600K). The
# difference of two runs (1 and N + 1 tokens) varied by half between runs
# on a shared machine, and more at 600K, where reading the states is most
# of a run; 6 steps at 600K gave a bf16 greedy step of 0.60 s in one run
# where 20 gave 0.46 in others the same hour.
#
# Knobs: LC_THREADS (default all cores), BENCH_ENCODE_LEN (65536),
# BENCH_DECODE_LENS ("16384 131072 600000"), BENCH_DECODE_TOKENS (N for
# every length),
# BENCH_HEADLINE (1; 0 skips it: it takes about half an hour on 2 cores),
# BENCH_HEADLINE_LEN (600000), BENCH_HEADLINE_NEW (512). bf16 rows print
# n/a, with the reason, where the processor has no bf16 products.
set -eu
. bench/cc.sh
J=${LC_THREADS:-$(nproc)}
ELEN=${BENCH_ENCODE_LEN:-65536}
DLENS=${BENCH_DECODE_LENS:-"16384 131072 600000"}
NTOK=${BENCH_DECODE_TOKENS:-}
HEAD=${BENCH_HEADLINE:-1}
HLEN=${BENCH_HEADLINE_LEN:-600000}
HNEW=${BENCH_HEADLINE_NEW:-512}
for p in lc-encode lc-decode lc-cat; do
	command -v $p >/dev/null || { echo "bench/speed.sh: $p not found (run make bench)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "bench/speed.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-speed.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
bench_cc "$D/rates" bench/rates.c
bench_cc "$D/hs" tests/gen/hidden_stream.c

echo "bench/speed.sh: full-size random LOCOST, $J threads, $(nproc) cores, $(date -u +%FT%TZ)"
lc-encode --info -m share/models/demo 2>/dev/null | grep -E '^(gemm|compute)' | sed 's/^/  /' || true

# 1. rates
"$D/rates" "$J" openblas >"$D/r.blas"
if lc-encode --info -m share/models/demo 2>/dev/null | grep -q oneDNN; then
	"$D/rates" "$J" onednn >"$D/r.dnnl"
else
	echo "best n/a (built without oneDNN)" >"$D/r.dnnl"
fi
"$D/rates" "$J" bf16 >"$D/r.bf16"
"$D/rates" "$J" read >"$D/r.read"
for l in blas:OpenBLAS dnnl:"oneDNN fp32" bf16:"bf16 (fp32 accumulation)"; do
	echo "rates, ${l#*:}:"
	sed 's/^/  /' "$D/r.${l%%:*}"
done
sed 's/^/rates, /' "$D/r.read"
F32=$(cat "$D/r.blas" "$D/r.dnnl" | awk '$1 == "best" && $3 + 0 > m { m = $3 } END { print m }')
BF16=$(awk '$1 == "best" { print ($2 == "n/a") ? 0 : $3 }' "$D/r.bf16")
BW=$(awk '{ print $3 }' "$D/r.read")
echo "floors from: best fp32 $F32 GFLOP/s, best bf16 $BF16 GFLOP/s (0: none), read $BW GB/s"
BFWHY=$(awk '$1 == "best" && $2 == "n/a" { sub(/^best n\/a /, ""); print }' "$D/r.bf16")

cp bench/locost-base.json "$D/config.json"
lc-encode -m "$D" --random-weights >/dev/null
# model dimensions, from the config the benchmark runs
eval "$(awk -F'[:,]' '{ for (i = 1; i < NF; i++) { k = $i; gsub(/[ "{]/, "", k); v = $(i + 1); gsub(/[ "}]/, "", v)
	if (k == "d_model") print "DM=" v; if (k == "d_ff") print "DFF=" v; if (k == "num_layers") print "NL=" v
	if (k == "num_decoder_layers") print "NDL=" v; if (k == "num_heads") print "NH=" v
	if (k == "d_kv") print "DKV=" v } }' "$D/config.json")"

# 2. encode
bench_ids "$ELEN" 7 >"$D/enc.in"
encode() { # PRECISION
	/usr/bin/time -f '%e %M' -o "$D/time" lc-encode -q -j "$J" --stats --compute "$1" -m "$D" \
		<"$D/enc.in" >/dev/null 2>"$D/stats"
	e=$(sed -n 's/.*encode \([0-9.]*\) s.*/\1/p' "$D/stats" | tail -1)
	set -- "$1" $(tail -1 "$D/time")
	rate=$F32
	[ "$1" = bf16 ] && rate=$BF16
	awk -v p="$1" -v L="$ELEN" -v e="${e:-$2}" -v m="$3" -v r="$rate" -v d="$DM" -v f="$DFF" -v nl="$NL" 'BEGIN {
		fl = 2 * nl * (3 * d * d + 3 * d * f) * L; fl_s = fl / (r * 1e9)
		printf "encode L=%d %-4s: %.1f s, floor %.1f s (%.2f TFLOP at %.1f GFLOP/s), ratio %.2f (goal <= 1.3), peak RSS %.0f MiB\n",
		    L, p, e, fl_s, fl / 1e12, r, e / fl_s, m / 1024 }'
}
encode f32
if [ "$BF16" = 0 ]; then echo "encode L=$ELEN bf16: n/a $BFWHY"; else encode bf16; fi

# 3. decode: states of 16,384 tokens repeated to each length; fp32, then
# (where it runs) bf16, timed against fp32 alone: its cross-attention
# mixes bf16 dot products and fp32 multiply-adds, no one rate is its floor
bench_ids 16384 9 | lc-encode -q -j "$J" -m "$D" | lc-cat -o raw >"$D/base.raw"
decode_len() { # L: prints s/token greedy and 4 beams
	L=$1
	r=$(( (L + 16383) / 16384 ))
	: >"$D/long.raw"
	i=0
	while [ $i -lt $r ]; do cat "$D/base.raw" >>"$D/long.raw"; i=$((i + 1)); done
	head -c $((L * DM * 4)) "$D/long.raw" >"$D/states.raw"
	rm -f "$D/long.raw"
	"$D/hs" "$DM" "L$L=$D/states.raw" >"$D/states.lcs"
	"$D/hs" -b "$DM" "L$L=$D/states.raw" >"$D/states16.lcs"
	rm -f "$D/states.raw"
	N=${NTOK:-$((4194304 / L))}
	[ "$N" -lt 12 ] && N=12
	[ "$N" -gt 32 ] && N=32
	for p in $PRECS; do
		for b in 1 4; do
			echo "$L $b $(tdec "$b" $((N + 1)) "$p") $p"
		done
	done
	# 4 beams again with half of memory for the cache (the default is a
	# quarter): the speed a user buys with --cross-cache
	echo "$L 4h $(tdec 4 $((N + 1)) f32 --cross-cache "$HALF") f32"
	# greedy over the same states as a bf16 stream (lc-encode --dtype
	# bf16) in fp32 arithmetic: read as they are where the kernels widen
	# them (AVX2), else copied to float32 first
	S=$D/states16.lcs
	echo "$L 1s16 $(tdec 1 $((N + 1)) f32) f32"
	S=
	rm -f "$D/states.lcs" "$D/states16.lcs"
}
HALF=$(awk '/^MemTotal:/ { printf "%.0fM", $2 / 2048 }' /proc/meminfo)
tdec() { # BEAMS TOKENS PRECISION [FLAGS...] -> "SECONDS_A_STEP PEAK_KB LAYERS_CACHED FIRST_STEP"
	b=$1 n=$2 p=$3
	shift 3
	/usr/bin/time -f '%M' -o "$D/time" lc-decode -q -j "$J" -m "$D" -f ids -b "$b" \
		--compute "$p" --stats --max-new "$n" --min-new "$n" "$@" "${S:-$D/states.lcs}" \
		>/dev/null 2>"$D/dstats"
	set -- $(bench_stats "$D/dstats")
	echo "$1 $(tail -1 "$D/time") $3 $2"
}
PRECS=f32
[ "$BF16" = 0 ] || PRECS="f32 bf16"
for L in $DLENS; do decode_len "$L"; done >"$D/dec"
awk -v r="$F32" -v bw="$BW" -v d="$DM" -v nl="$NDL" -v nh="$NH" -v dk="$DKV" -v half="$HALF" '
	# fields: L beams s/step peakKB layers-cached first-step precision
	{ L = $1; b = $2; s = $3; c = $5; p = $7
	  fa = 4 * nl * nh * L * d / (r * 1e9); fb = nl * L * d * 4 / (bw * 1e9); fl = fa > fb ? fa : fb
	  # 4 beams: the cached layers read their keys and values (float32, or
	  # bf16), the others fold 4 rows each
	  kvb = 2 * L * nh * dk * (p == "bf16" ? 2 : 4) / (bw * 1e9)
	  f4 = c * kvb + (nl - c) * (4 * fa / nl > fb / nl ? 4 * fa / nl : fb / nl)
	  cache = sprintf("%d of %d layers cached (first step %.1f s)", c, nl, $6)
	  if (p == "bf16") {
	      if (b == 1) printf "decode L=%-7d bf16 greedy : %.3f s/token, %.2f x fp32\n", L, s, s / g[L]
	      else printf "decode L=%-7d bf16 4 beams: %.3f s/step, %.2f x fp32, %.2f x bf16 greedy (goal <= 1.6); %s\n",
	          L, s, s / g4[L], s / gb[L], cache
	      if (b == 1) gb[L] = s
	      next }
	  if (b == "1s16") {
	      printf "decode L=%-7d greedy, bf16 states in fp32 arithmetic: %.3f s/token, %.2f x float32 states, peak RSS %.0f MiB\n",
	          L, s, s / g[L], $4 / 1024
	      next }
	  if (b == "4h") {
	      printf "decode L=%-7d 4 beams, --cross-cache %s (half of memory): %.3f s/step, %.2f x greedy (goal <= 1.6), floor %.3f s, ratio %.2f; %s, peak RSS %.0f MiB\n",
	          L, half, s, s / g[L], f4, s / f4, cache, $4 / 1024
	      next }
	  if (b > 1) g4[L] = s
	  if (b == 1) { g[L] = s
	      printf "decode L=%-7d greedy : %.3f s/token, floor %.3f s (%s), ratio %.2f (goal <= 1.3), peak RSS %.0f MiB\n",
	          L, s, fl, (fa > fb ? "arithmetic" : "bandwidth"), s / fl, $4 / 1024 }
	  else printf "decode L=%-7d 4 beams: %.3f s/step, %.2f x greedy (goal <= 1.6), floor %.3f s, ratio %.2f; %s, peak RSS %.0f MiB\n",
	          L, s, s / g[L], f4, s / f4, cache, $4 / 1024 }' "$D/dec"

# 4. the headline
headline() { # PRECISION
	p=$1
	dt=f32
	[ "$p" = bf16 ] && dt=bf16
	t0=$(date +%s.%N)
	/usr/bin/time -f '%e %M' -o "$D/t.enc" lc-encode -q -j "$J" -m "$D" --compute "$p" --dtype "$dt" \
		<"$D/head.in" |
		/usr/bin/time -f '%e %M' -o "$D/t.dec" lc-decode -q -j "$J" -m "$D" --compute "$p" -f ids \
			--max-new "$HNEW" --min-new "$HNEW" >"$D/head.out"
	t1=$(date +%s.%N)
	ntok=$(awk '{ print NF }' "$D/head.out")
	awk -v p="$p" -v L="$HLEN" -v n="$ntok" -v w="$(echo "$t0 $t1" | awk '{ print $2 - $1 }')" \
		-v e="$(tail -1 "$D/t.enc")" -v dd="$(tail -1 "$D/t.dec")" -v goal="$2" 'BEGIN {
		split(e, E, " "); split(dd, DD, " ")
		printf "headline %-4s: %d tokens encoded, %d decoded: %.1f min (goal <= %d min); lc-encode %.0f s, lc-decode %.0f s after it; peak RSS %.0f + %.0f = %.0f MiB (goal <= 8 GB)\n",
		    p, L, n, w / 60, goal, E[1], DD[1] - E[1], E[2] / 1024, DD[2] / 1024, (E[2] + DD[2]) / 1024 }'
}
if [ "$HEAD" = 1 ]; then
	bench_ids "$HLEN" 13 >"$D/head.in"
	headline f32 12
	if [ "$BF16" = 0 ]; then echo "headline bf16: n/a $BFWHY"; else headline bf16 6; fi
else
	echo "headline: skipped (BENCH_HEADLINE=0)"
fi
