#!/bin/sh
# bench/xkern.sh: one thread, GFLOP/s of the cross-attention kernels
# (compute/xkern.c) against OpenBLAS on the decoder's shapes
# (bench/xkern.c). Prints numbers, asserts nothing.
set -eu
. bench/cc.sh
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-xkern.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
bench_cc "$D/xk" bench/xkern.c
"$D/xk"
