#!/bin/sh
# bench/gpu.sh: lc with its products on an NVIDIA GPU (a CUDA=1 build:
# `make bench O=build-cuda CUDA=1 BENCH=gpu`). Full-size random LOCOST
# (bench/locost-base.json), random ids, every thread of the machine:
#   encode 16K and 64K tokens on the GPU and on the same machine's CPU,
#     and $BENCH_GPU_LONG (default 600,000) on the GPU (wall, peak RSS,
#     peak GPU memory in use as nvidia-smi reads it every 0.2 s);
#   greedy decode of that long encoding (lc-decode --stats: the first
#     step, then a step after it), GPU and CPU;
#   bench/train.sh (lc-train on the demo configuration, 1 thread and
#     all), GPU and CPU;
#   PyTorch's float32 LOCOST encoder (bench/locost_torch.py) on the same
#     GPU at 16K, where python3 has torch with CUDA: first run and second;
#   --compute bf16 on the GPU: encode 16K (and the states' largest
#     difference from fp32's, where python3 has numpy), 64K and the long
#     input, and the long input's greedy decode.
# BENCH_GPU_ONLY=1 leaves out the CPU's runs and PyTorch; BENCH_GPU_TRAIN=0
# lc-train. Prints numbers, asserts nothing; says "skipped" without a GPU.
set -eu
. bench/cc.sh
SHARE=${LC_SHARE:-share}
J=${LC_THREADS:-$(nproc)}
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench-gpu.XXXXXX")
MON=
trap '[ -z "$MON" ] || kill $MON 2>/dev/null; rm -rf "$D"' EXIT INT TERM
cp bench/locost-base.json "$D/config.json"
lc-encode -d cpu -m "$D" --random-weights >/dev/null
if ! lc-encode -d cuda --info -m "$D" >/dev/null 2>&1; then
	echo "gpu: skipped: $(lc-encode -d cuda --info -m "$D" 2>&1 | head -1)"
	exit 0
fi
lc-encode -d cuda --info -m "$D" | grep '^device' | sed 's/^/  /'
echo "  threads: $J; $(nproc) processors"

# the peak of nvidia-smi's memory.used (MiB) while a command runs
mon_start() {
	nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$D/mem" 2>/dev/null &
	MON=$!
}
mon_stop() {
	kill $MON 2>/dev/null || true
	wait $MON 2>/dev/null || true
	MON=
	sort -n "$D/mem" | tail -1
}
stats() { # FILE -> "WALL RSS" from --stats
	sed -n 's/.*stats: wall \([0-9.]*\) s, peak RSS \([0-9.]*\) MiB.*/\1 \2/p' "$1" | tail -1
}

# encode LEN DEVICE [OUT [COMPUTE]]
enc() {
	[ "$2" = cpu ] && [ "${BENCH_GPU_ONLY:-0}" = 1 ] && return
	bench_ids "$1" 7 >"$D/in"
	mon_start
	lc-encode -q -j "$J" -d "$2" --compute "${4:-f32}" --stats -m "$D" <"$D/in" \
		>"${3:-/dev/null}" 2>"$D/err"
	mem=$(mon_stop)
	set -- "$1" "$2" "${4:-f32}" $(stats "$D/err")
	printf "encode %7d tokens, %-4s %-4s: %7.1f s, peak RSS %6.0f MiB, GPU memory %s MiB\n" \
		"$1" "$2" "$3" "$4" "$5" "$mem"
}
LONG=${BENCH_GPU_LONG:-600000}
# BENCH_GPU_SHORT=0: only the long encoding and its decode
if [ "${BENCH_GPU_SHORT:-1}" != 0 ]; then
enc 16384 cuda
enc 16384 cpu

if [ "${BENCH_GPU_ONLY:-0}" = 1 ]; then
	:
elif python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	printf "PyTorch float32 LOCOST encoder, 16384 tokens, cuda: %s\n" \
		"$(python3 bench/locost_torch.py "$D" 16384 "$J" cuda | tr '\n' ' ')"
else
	echo "PyTorch with CUDA: absent"
fi

if [ "${BENCH_GPU_TRAIN:-1}" != 0 ]; then
for dev in cuda cpu; do
	[ "$dev" = cpu ] && [ "${BENCH_GPU_ONLY:-0}" = 1 ] && continue
	LC_DEVICE=$dev sh bench/train.sh | sed "s/^/$dev: /"
done
fi

enc 65536 cuda
enc 65536 cpu

enc 16384 cuda "$D/s32"
enc 16384 cuda "$D/s16" bf16
if python3 -c 'import numpy' 2>/dev/null; then
	lc-cat -o raw "$D/s32" >"$D/a.raw"; lc-cat -o raw "$D/s16" >"$D/b.raw"
	python3 -c "
import numpy as np
a = np.fromfile('$D/a.raw', '<f4').astype(np.float64); b = np.fromfile('$D/b.raw', '<f4').astype(np.float64)
print('bf16 on the GPU, 16384 tokens: states from fp32 max |diff| / max |fp32| %.3g' % (np.abs(a - b).max() / np.abs(a).max()))"
	rm -f "$D/a.raw" "$D/b.raw"
fi
rm -f "$D/s32" "$D/s16"
enc 65536 cuda "" bf16
fi

enc "$LONG" cuda "$D/long"
enc "$LONG" cuda "" bf16

# decode the long encoding: --stats prints the first step's time and a step's
for run in "cuda f32" "cuda bf16" "cpu f32"; do
	set -- $run
	[ "$1" = cpu ] && [ "${BENCH_GPU_ONLY:-0}" = 1 ] && continue
	lc-decode -q -j "$J" -d "$1" --compute "$2" -m "$D" -f ids --max-new 4 --min-new 4 \
		--stats <"$D/long" >/dev/null 2>"$D/err"
	printf "decode %d tokens, %-4s %-4s, greedy: %s\n" "$LONG" "$1" "$2" \
		"$(grep -v 'stats: wall' "$D/err" | sed 's/^lc-decode: //' | tail -1)"
done
rm -f "$D/long"
