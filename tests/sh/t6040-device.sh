#!/bin/sh
# -d/--device (issue 17): cpu, or cuda where lc was built with CUDA=1
# and a GPU answers (then the default). Asked for and absent, cuda is a
# usage error saying why (a build without CUDA, or no GPU), never a
# silent run on the CPU; a bad name, from -d or $LC_DEVICE, is one too.
# -d cpu is the CPU's bytes. make check-cuda says it skips without a GPU.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
M=$SHARE/models/demo
for p in lc-encode lc-decode lc-train; do
	ok "$p --help names -d/--device" sh -c "$p --help | grep -q -- '-d, --device'"
done

lc-cat -i text "$SHARE/samples/sample.txt" | lc-tokenize -q -m "$SHARE/spiece.model" |
	lc-chunk -q -n 200 >"$T/tok.lc"
LC_DEVICE=cpu lc-encode -q -m "$M" "$T/tok.lc" >"$T/cpu.lc"
ok "-d cpu" lc-encode -q -d cpu -m "$M" "$T/tok.lc"
same "-d cpu: the CPU's states" "$T/out" "$T/cpu.lc"
ok "--info names the device" sh -c "lc-encode -d cpu -m '$M' --info | grep -q '^device	cpu$'"

fails 2 "-d gpu is a usage error" lc-encode -d gpu -m "$M" "$T/tok.lc"
grep -q "^lc-encode: -d/--device: 'gpu' is not cpu or cuda$" "$T/err"
_res $? "... naming the option and the value"
fails 2 "LC_DEVICE=gpu is one too" env LC_DEVICE=gpu lc-decode -m "$M" --info
grep -q "^lc-decode: \$LC_DEVICE: 'gpu' is not cpu or cuda$" "$T/err"
_res $? "... naming the variable"
fails 2 "lc-train -d gpu" lc-train -d gpu -m "$M" -o "$T/m" "$T/tok.lc"

if lc-encode -m "$M" --info | grep -q '^device	cuda'; then
	ok "a GPU: -d cuda runs" lc-encode -q -d cuda -m "$M" "$T/tok.lc"
	skip "-d cuda without a GPU" "this machine has one"
else
	fails 2 "no GPU: -d cuda is a usage error" lc-encode -d cuda -m "$M" "$T/tok.lc"
	grep -qE "^lc-encode: -d/--device cuda: (this lc was built without CUDA \(make CUDA=1\)|no GPU .*)$" \
		"$T/err"
	_res $? "... saying why"
	fails 2 "... from \$LC_DEVICE too" env LC_DEVICE=cuda lc-decode -m "$M" --info
	grep -q '^lc-decode: $LC_DEVICE=cuda: ' "$T/err"
	_res $? "... naming it"
fi

# make check-cuda where no GPU answers: it says so and passes
if need make && ! nvidia-smi -L >/dev/null 2>&1; then
	is "make check-cuda without a GPU" \
		"$(env -u MFLAGS -u MAKELEVEL -u MAKEFLAGS make -s --no-print-directory check-cuda 2>&1)" \
		"check-cuda: skipped: no GPU"
else
	skip "make check-cuda without a GPU" "no make, or a GPU answers"
fi
done_testing
