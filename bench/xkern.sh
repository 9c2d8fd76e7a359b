#!/bin/sh
# bench/xkern.sh: one thread, GFLOP/s of the cross-attention kernels
# (compute/xkern.c) against OpenBLAS on the decoder's shapes
# (bench/xkern.c), and the whole forward against its floor at the best
# fp32 rate one thread reaches in this run. Prints numbers, asserts
# nothing.
set -eu
. bench/cc.sh
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-xkern.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
bench_cc "$D/xk" bench/xkern.c
bench_cc "$D/rates" bench/rates.c
# the floor's rate: the best fp32 product of one thread, measured now
# (OpenBLAS, and oneDNN where the build has it)
F=$(for g in openblas onednn; do "$D/rates" 1 "$g" 2>/dev/null; done |
	awk '$1 == "best" && $3 + 0 > m { m = $3 } END { print m + 0 }')
echo "best fp32 rate, one thread: $F GFLOP/s (bench/rates.c)"
"$D/xk" 1 "$F"
