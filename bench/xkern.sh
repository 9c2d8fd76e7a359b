#!/bin/sh
# bench/xkern.sh: one thread, GFLOP/s of the cross-attention kernels
# (compute/xkern.c) against OpenBLAS on the decoder's shapes
# (bench/xkern.c). Prints numbers, asserts nothing.
set -eu
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-xkern.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM
cc -O2 -std=c11 -D_GNU_SOURCE -Ilib -o "$D/xk" bench/xkern.c build/liblc.a \
	$(pkg-config --libs fftw3f openblas libarchive libpcre2-8 jansson) -lm -lpthread
"$D/xk"
