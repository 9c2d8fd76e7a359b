#!/bin/sh
# lc-encode benchmark: the full-size LOCOST encoder (d_model 768, d_ff 2048,
# 256 complex modes, 12 layers; random weights written by
# `lc-encode --random-weights`) at 4K, 16K and 64K tokens and once at 600K.
# Prints wall time, peak RSS, and the ratio of the encode time to the time
# of the layers' GEMMs alone (lc-encode --gemm-only, same run); at 4K also
# the PyTorch float32 reference (bench/locost_torch.py, Debian python3-torch)
# on the same weights. Knobs: LC_THREADS (default: all cores),
# BENCH_LENGTHS (default "4096 16384 65536 600000"). Asserts nothing.
set -e
J=${LC_THREADS:-$(nproc)}
LENGTHS=${BENCH_LENGTHS:-"4096 16384 65536 600000"}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-encode.XXXXXX")
trap 'rm -rf "$D"' EXIT
cat >"$D/config.json" <<'JSON'
{"d_model": 768, "d_ff": 2048, "d_kv": 64, "d_state": 512, "num_layers": 12,
 "num_decoder_layers": 0, "num_heads": 12, "num_ssm_heads": 1, "vocab_size": 32100,
 "layer_norm_epsilon": 1e-06, "feed_forward_proj": "gated-gelu", "is_gated_act": true,
 "tie_word_embeddings": true, "bidirectional": true, "gating": true, "use_fast_fft_conv": false}
JSON
lc-encode -m "$D" --random-weights --seed 7
echo "lc-encode benchmark: full-size encoder, $J threads, $(nproc) cores"
printf '%8s %10s %10s %10s %8s %10s\n' tokens wall_s encode_s gemm_s ratio peak_MiB
for L in $LENGTHS; do
	awk -v n="$L" 'BEGIN { srand(n); for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32097); print 1 }' |
		lc-cat -i ids >"$D/in"
	g=$(lc-encode -q -j "$J" -m "$D" --gemm-only <"$D/in" | cut -f3)
	/usr/bin/time -f '%e %M' -o "$D/time" lc-encode -q -j "$J" --stats -m "$D" <"$D/in" \
		>/dev/null 2>"$D/stats"
	e=$(sed -n 's/.*encode \([0-9.]*\) s/\1/p' "$D/stats")
	set -- $(tail -1 "$D/time")
	awk -v L="$L" -v w="$1" -v e="$e" -v g="$g" -v m="$2" \
		'BEGIN { printf "%8d %10.2f %10.2f %10.2f %8.2f %10.0f\n", L, w, e, g, e / g, m / 1024 }'
	if [ "$L" = 4096 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
		/usr/bin/time -f '%e %M' -o "$D/ttime" /usr/bin/python3 "$(dirname "$0")/locost_torch.py" \
			"$D" "$L" "$J" >"$D/tsec" 2>"$D/terr" || { cat "$D/terr"; continue; }
		set -- $(tail -1 "$D/ttime")
		awk -v w="$1" -v e="$(cat "$D/tsec")" -v m="$2" \
			'BEGIN { printf "%8s %10.2f %10.2f %10s %8s %10.0f   (PyTorch fp32 reference)\n", "4096", w, e, "-", "-", m / 1024 }'
	fi
done
