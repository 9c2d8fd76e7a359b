#!/bin/sh
# BART-LS encoder benchmark: a bart-large-sized BART-LS (d_model 1024,
# 12 + 12 layers, 16 heads, ffn 4096, vocab 50265; block_size 1024, the top
# 4 encoder layers pooled with AvgPool1d(18, 12, 9), as the released
# model; random weights written by `lc-encode --random-weights`) at 16K
# and 64K tokens. Prints wall time, peak RSS, and the ratio of the encode
# time to the time of the layers' GEMMs alone (lc-encode --gemm-only, same
# run: the block attention's and pooled attention's projections included).
# Knobs: LC_THREADS (default: all cores), BENCH_LENGTHS. Asserts nothing.
set -e
J=${LC_THREADS:-$(nproc)}
LENGTHS=${BENCH_LENGTHS:-"16384 65536"}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-bartls.XXXXXX")
trap 'rm -rf "$D"' EXIT
cat >"$D/config.json" <<JSON
{"activation_function": "gelu", "architectures": ["BartLSForConditionalGeneration"],
 "bos_token_id": 0, "d_model": 1024, "decoder_attention_heads": 16, "decoder_ffn_dim": 4096,
 "decoder_layers": 12, "decoder_start_token_id": 2, "encoder_attention_heads": 16,
 "encoder_ffn_dim": 4096, "encoder_layers": 12, "eos_token_id": 2, "forced_bos_token_id": 0,
 "forced_eos_token_id": 2, "max_position_embeddings": 65536,
 "max_decoder_position_embeddings": 1024, "model_type": "bart_ls", "pad_token_id": 1,
 "scale_embedding": false, "vocab_size": 50265, "block_size": 1024, "pooling_layers": 4,
 "pool_kernel": 18, "pool_stride": 12, "pool_padding": 9}
JSON
lc-encode -m "$D" --random-weights --seed 9
echo "bench/bartls.sh: BART-LS (bart-large) encoder, $J threads, $(nproc) cores"
printf '%8s %10s %10s %10s %8s %10s\n' tokens wall_s encode_s gemm_s ratio peak_MiB
for L in $LENGTHS; do
	awk -v n="$L" 'BEGIN { srand(n); printf "0"; for (i = 2; i < n; i++) printf " %d", 4 + int(rand() * 50000); print " 2" }' \
		>"$D/ids"
	lc-cat -i ids "$D/ids" >"$D/in"
	g=$(lc-encode -q -j "$J" -m "$D" --gemm-only <"$D/in" | cut -f3)
	/usr/bin/time -f '%e %M' -o "$D/time" lc-encode -q -j "$J" --stats -m "$D" <"$D/in" \
		>"$D/out" 2>"$D/stats"
	e=$(sed -n 's/.*encode \([0-9.]*\) s/\1/p' "$D/stats")
	set -- $(tail -1 "$D/time")
	awk -v L="$L" -v w="$1" -v e="$e" -v g="$g" -v m="$2" \
		'BEGIN { printf "%8d %10.2f %10.2f %10.2f %8.2f %10.0f\n", L, w, e, g, e / g, m / 1024 }'
done
