#!/bin/sh
# bench/bart.sh: BART at bart-large-cnn's dimensions (d_model 1024, 12 + 12
# layers, 16 heads, ffn 4096, vocab 50264; random weights written by
# `lc-encode --random-weights`). Encoder: seconds for a full 1024-token
# input next to the seconds of its GEMMs alone (lc-encode --gemm-only,
# same shapes and threads, same run): the ratio is the distance to what
# this machine's BLAS allows. Decoder: seconds per step with
# bart-large-cnn's beam settings (4 beams, no_repeat_ngram 3, min_length
# 56), timed inside lc-decode (--stats: the steps after the first; the
# first, which computes the cross-attention cache, apart) over N tokens
# forced by --min-new, against its floor: the decoder's float32 weights
# (but the cross-attention's key and value projections, which the cache
# replaces) and the 4 beams' cached keys and values read once a step at the read
# bandwidth measured in this run (bench/rates.c); the step's arithmetic,
# 2 x 4 rows x the weights, takes less time than that on the machines
# measured. Knobs: LC_THREADS, BENCH_BART_TOKENS (N, default 64: more
# than min_length, so that it is in force as in bart-large-cnn).
# Asserts nothing.
set -eu
. bench/cc.sh
J=${LC_THREADS:-$(nproc)}
N=${BENCH_BART_TOKENS:-64}
L=1024
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-bart.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
cat >"$D/config.json" <<'JSON'
{"activation_function": "gelu", "architectures": ["BartForConditionalGeneration"],
 "bos_token_id": 0, "d_model": 1024, "decoder_attention_heads": 16, "decoder_ffn_dim": 4096,
 "decoder_layers": 12, "decoder_start_token_id": 2, "encoder_attention_heads": 16,
 "encoder_ffn_dim": 4096, "encoder_layers": 12, "eos_token_id": 2, "forced_bos_token_id": 0,
 "forced_eos_token_id": 2, "max_position_embeddings": 1024, "model_type": "bart",
 "pad_token_id": 1, "scale_embedding": false, "vocab_size": 50264}
JSON
cat >"$D/generation_config.json" <<'JSON'
{"bos_token_id": 0, "decoder_start_token_id": 2, "early_stopping": true, "eos_token_id": 2,
 "forced_bos_token_id": 0, "forced_eos_token_id": 2, "length_penalty": 2.0, "max_length": 142,
 "min_length": 56, "no_repeat_ngram_size": 3, "num_beams": 4, "pad_token_id": 1}
JSON
lc-encode -m "$D" --random-weights --seed 5 >/dev/null
awk -v n="$L" 'BEGIN { srand(11); printf "0"; for (i = 2; i < n; i++) printf " %d", 4 + int(rand() * 50000); print " 2" }' |
	lc-cat -i ids >"$D/in"
echo "bench/bart.sh: bart-large-cnn dimensions, random weights, $J threads, $(nproc) cores"
best_enc= best_gemm=
for r in 1 2 3; do
	lc-encode -q -j "$J" --stats -m "$D" <"$D/in" >"$D/hidden" 2>"$D/stats"
	e=$(sed -n 's/.*encode \([0-9.]*\) s/\1/p' "$D/stats")
	g=$(lc-encode -q -j "$J" -m "$D" --gemm-only <"$D/in" | cut -f3)
	best_enc=$(echo "$e ${best_enc:-$e}" | awk '{ print ($1 < $2) ? $1 : $2 }')
	best_gemm=$(echo "$g ${best_gemm:-$g}" | awk '{ print ($1 < $2) ? $1 : $2 }')
done
awk -v L="$L" -v e="$best_enc" -v g="$best_gemm" 'BEGIN {
	f = 12 * L * (4 * 1024 * 1024 + 2 * 1024 * 4096) * 2
	printf "encode L=%d: %.2f s, its GEMMs alone %.2f s (%.0f GFLOP/s), ratio %.2f (best of 3)\n",
	    L, e, g, f / g / 1e9, e / g }'

# the decoder's step against reading its weights and the beams' cache
bench_cc "$D/rates" bench/rates.c
BW=$(LC_THREADS=$J "$D/rates" "$J" read | awk '{ print $3 }')
/usr/bin/time -f '%M' -o "$D/time" lc-decode -q -j "$J" -m "$D" -f ids --stats \
	--max-new "$N" --min-new "$N" --forced-eos none "$D/hidden" >/dev/null 2>"$D/dstats"
set -- $(bench_stats "$D/dstats")
awk -v L="$L" -v s="$1" -v f="$2" -v m="$(tail -1 "$D/time")" -v bw="$BW" -v n="$N" 'BEGIN {
	d = 1024; ff = 4096; V = 50264; nl = 12
	# per layer: self-attention 4 d^2 + 4 d; the cross-attention query and
	# output 2 d^2 + 2 d (its keys and values come from the cache, made at
	# the first step); feed-forward 2 d ff + ff + d; three norms 6 d; then
	# the output embedding V d and the final bias V
	w = nl * (6 * d * d + 6 * d + 2 * d * ff + ff + d + 6 * d) + V * d + V
	kv = nl * 2 * L * d                      # cached keys and values, shared by the beams
	fl = (w + kv) * 4 / (bw * 1e9)
	printf "decode L=%d, 4 beams: %.3f s a step (%d steps), floor %.3f s (%.2f GB of weights and cache at %.1f GB/s), ratio %.2f; first step %.2f s, peak RSS %.0f MiB\n",
	    L, s, n, fl, (w + kv) * 4 / 1e9, bw, s / fl, f, m / 1024 }'
