#!/bin/sh
# Top-down transformer encoder benchmark: the paper's large configuration
# (Pang et al. 2022: bart-large, d_model 1024, 16 heads, ffn 4096, vocab
# 50265; 8 bottom-up layers with window 1024, AvgPool1d(32, 24) segments,
# 2 segment layers, 4 top-down layers; random weights written by
# `lc-encode --random-weights`) at 16K and 64K tokens. Prints wall time,
# peak RSS (and its growth per token between the lengths: linear in L
# when it stays put), and the ratio of the encode time to the time of the
# same layers' GEMMs alone (lc-encode --gemm-only, same run: the block
# attention's, the segment layers' and the cross-attention's projections
# included). Knobs: LC_THREADS (default: all cores), BENCH_LENGTHS.
# Asserts nothing.
set -e
J=${LC_THREADS:-$(nproc)}
LENGTHS=${BENCH_LENGTHS:-"16384 65536"}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-topdown.XXXXXX")
trap 'rm -rf "$D"' EXIT
cat >"$D/config.json" <<JSON
{"activation_function": "gelu", "architectures": ["BartTopDownForConditionalGeneration"],
 "bos_token_id": 0, "d_model": 1024, "decoder_attention_heads": 16, "decoder_ffn_dim": 4096,
 "decoder_layers": 12, "decoder_start_token_id": 2, "encoder_attention_heads": 16,
 "encoder_ffn_dim": 4096, "encoder_layers": 12, "eos_token_id": 2, "forced_bos_token_id": 0,
 "forced_eos_token_id": 2, "max_position_embeddings": 65536,
 "max_decoder_position_embeddings": 1024, "model_type": "bart_topdown", "pad_token_id": 1,
 "scale_embedding": false, "vocab_size": 50265, "window_size": 1024, "bottom_up_layers": 8,
 "top_down_layers": 4, "segment_layers": 2, "pool_kernel": 32, "pool_stride": 24,
 "pool_type": "avg"}
JSON
lc-encode -m "$D" --random-weights --seed 9
echo "bench/topdown.sh: top-down (8 + 2 + 4 layers, bart-large) encoder, $J threads, $(nproc) cores"
printf '%8s %10s %10s %10s %8s %10s %12s\n' tokens wall_s encode_s gemm_s ratio peak_MiB KiB/token
pl= pm=
for L in $LENGTHS; do
	awk -v n="$L" 'BEGIN { srand(n); printf "0"; for (i = 2; i < n; i++) printf " %d", 4 + int(rand() * 50000); print " 2" }' \
		>"$D/ids"
	lc-cat -i ids "$D/ids" >"$D/in"
	g=$(lc-encode -q -j "$J" -m "$D" --gemm-only <"$D/in" | cut -f3)
	/usr/bin/time -f '%e %M' -o "$D/time" lc-encode -q -j "$J" --stats -m "$D" <"$D/in" \
		>"$D/out" 2>"$D/stats"
	e=$(sed -n 's/.*encode \([0-9.]*\) s/\1/p' "$D/stats")
	set -- $(tail -1 "$D/time")
	awk -v L="$L" -v w="$1" -v e="$e" -v g="$g" -v m="$2" -v pl="$pl" -v pm="$pm" \
		'BEGIN { s = pl == "" ? "-" : sprintf("%.1f", (m - pm) / (L - pl));
		         printf "%8d %10.2f %10.2f %10.2f %8.2f %10.0f %12s\n", L, w, e, g, e / g, m / 1024, s }'
	pl=$L pm=$2
done
