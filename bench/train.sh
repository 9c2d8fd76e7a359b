#!/bin/sh
# bench/train.sh: lc-train throughput (source + target tokens per second)
# for the demo model's configuration (share/models/demo-config.json) on
# GSG pairs of the bundled Bible (its chapters), a few steps of
# 4096 tokens, at 1 thread and at $LC_THREADS (default: all cores).
# Prints numbers, asserts nothing.
set -eu
SHARE=${LC_SHARE:-share}
STEPS=${BENCH_TRAIN_STEPS:-4}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-train.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
lc-chunk -q -p "^CHAPTER [0-9]+" "$SHARE/samples/kjv.txt.xz" |
	lc-gsg-split -q -m "$SHARE/spiece.model" >"$D/all.lc" 2>/dev/null
for j in 1 ${LC_THREADS:-$(nproc)}; do
	rm -rf "$D/m"
	lc-train --config "$SHARE/models/demo-config.json" -o "$D/m" --steps "$STEPS" \
		--batch-tokens 4096 --max-src 512 --max-tgt 128 -t "$SHARE/spiece.model" \
		-j "$j" -q "$D/all.lc"
	awk -F'\t' -v j="$j" 'NR > 1 { last = $6 } END {
		printf "lc-train demo config (5.2M parameters): %d thread(s): %.0f tokens/s\n", j, last }' \
		"$D/m/loss.tsv"
done
