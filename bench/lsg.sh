#!/bin/sh
# LSG-BART encoder benchmark: an LSG-BART-base-sized model (d_model 768,
# 6 + 6 layers, 12 heads, ffn 3072, vocab 50265; block_size 128,
# sparse_block_size 128, sparsity_factor BENCH_LSG_SF (default 2),
# sparsity_type BENCH_LSG_TYPE (default norm), one global token; random
# weights written by `lc-encode --random-weights`) at 4K, 16K and 64K
# tokens. Prints wall time, peak RSS, and the ratio of the encode time to
# the time of the layers' GEMMs alone (lc-encode --gemm-only, same run).
# At 4K also the authors' PyTorch model on the same weights
# (bench/lsg_torch.py) when BENCH_LSG_MODELING names their
# modeling_lsg_bart.py and transformers 4.36 is importable (PYTHONPATH).
# Knobs: LC_THREADS (default: all cores), BENCH_LENGTHS. Asserts nothing.
set -e
J=${LC_THREADS:-$(nproc)}
LENGTHS=${BENCH_LENGTHS:-"4096 16384 65536"}
SF=${BENCH_LSG_SF:-2}
TYPE=${BENCH_LSG_TYPE:-norm}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-lsg.XXXXXX")
trap 'rm -rf "$D"' EXIT
cat >"$D/config.json" <<JSON
{"activation_function": "gelu", "architectures": ["LSGBartForConditionalGeneration"],
 "bos_token_id": 0, "d_model": 768, "decoder_attention_heads": 12, "decoder_ffn_dim": 3072,
 "decoder_layers": 6, "decoder_start_token_id": 2, "encoder_attention_heads": 12,
 "encoder_ffn_dim": 3072, "encoder_layers": 6, "eos_token_id": 2, "forced_bos_token_id": 0,
 "forced_eos_token_id": 2, "max_position_embeddings": 65536, "model_type": "bart",
 "pad_token_id": 1, "scale_embedding": false, "vocab_size": 50265,
 "block_size": 128, "sparse_block_size": 128, "sparsity_factor": $SF, "sparsity_type": "$TYPE",
 "num_global_tokens": 1, "adaptive": true, "mask_first_token": false,
 "pass_global_tokens_to_decoder": true, "pool_with_global": true, "lsh_num_pre_rounds": 1}
JSON
lc-encode -m "$D" --random-weights --seed 9
echo "bench/lsg.sh: LSG-BART-base encoder ($TYPE, sparsity_factor $SF), $J threads, $(nproc) cores"
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
	if [ "$L" = 4096 ] && [ -n "${BENCH_LSG_MODELING:-}" ] &&
		/usr/bin/python3 -c 'import torch, transformers' 2>/dev/null; then
		/usr/bin/time -f '%e %M' -o "$D/ttime" /usr/bin/python3 "$(dirname "$0")/lsg_torch.py" \
			--ids "$D/ids" --dump "$D/ref.f32" "$D" "$L" "$J" >"$D/tout" 2>"$D/terr" ||
			{ tail -3 "$D/terr"; continue; }
		set -- $(tail -1 "$D/ttime")
		awk -v w="$1" -v e="$(cut -f3 "$D/tout" | tail -1)" -v m="$2" \
			'BEGIN { printf "%8s %10.2f %10.2f %10s %8s %10.0f   (the authors'"'"' PyTorch code, fp32)\n", "4096", w, e, "-", "-", m / 1024 }'
		lc-cat -o raw "$D/out" >"$D/lc.f32"
		/usr/bin/python3 -c 'import sys, numpy as np
a, b = np.fromfile(sys.argv[1], "<f4"), np.fromfile(sys.argv[2], "<f4")
print("         lc-encode vs the authors'"'"' code on these weights: max |diff| %.3g, max |value| %.3g" % (np.abs(a - b).max(), np.abs(b).max()) if a.shape == b.shape else "         shapes differ")' "$D/lc.f32" "$D/ref.f32"
	fi
done
