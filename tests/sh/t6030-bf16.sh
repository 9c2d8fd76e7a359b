#!/bin/sh
# --compute bf16 is an option, never silent (issue 14). On a processor
# without AVX512-BF16 or AMX (or built without oneDNN, or on a GPU
# older than compute capability 8.0),
# lc-encode and lc-decode say so once and run fp32: the same bytes as
# --compute f32. Where bf16 runs (the hardware,
# or LC_BF16_EMULATE=1 on any processor: bf16-rounded operands, fp32
# sums) the encoder states are not the fp32 ones but within bf16's
# rounding of them: the largest difference under 2e-2 of the largest
# value (a bf16 operand is within 2^-9 = 2e-3 of its fp32 value; the
# errors of four layers add; bench/bf16.sh measured 6.4e-3 on the oracle
# model). Hardware and emulation agree product by product to fp32
# summation order (test_gemm), but not here: a last-bit difference in an
# activation can round it to the neighbouring bf16 value in the next
# product, so two bf16 runs differ at bf16's scale (3e-3 measured).
# --dtype bf16 states decode (LOCOST's decoder takes them as they are);
# --compute f16 is a usage error.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
M=$SHARE/models/demo
need od || skip_all "no od"

lc-cat -i text "$SHARE/samples/sample.txt" | lc-tokenize -q -m "$SHARE/spiece.model" |
	lc-chunk -q -n 300 >"$T/tok.lc"
ndoc=$(lc-cat -o info "$T/tok.lc" | grep -c '^doc')

lc-encode -q -m "$M" --compute f32 "$T/tok.lc" >"$T/f32.lc"
is "--compute f32: quiet" "$(lc-encode -q -m "$M" --compute f32 "$T/tok.lc" 2>&1 >/dev/null)" ""
fails 2 "--compute f16 is a usage error" lc-encode -m "$M" --compute f16 "$T/tok.lc"
ok "lc-encode --help names --compute" sh -c "lc-encode --help | grep -q -- '--compute'"
ok "lc-decode --help names --compute" sh -c "lc-decode --help | grep -q -- '--compute'"

# max |a - b| / max |a| of two state streams, by od (one float a line)
reldiff() {
	lc-cat -o raw "$1" | od -An -v -f -w4 >"$T/a.txt"
	lc-cat -o raw "$2" | od -An -v -f -w4 >"$T/b.txt"
	paste "$T/a.txt" "$T/b.txt" | awk '$1 !~ /^-?[0-9]/ || $2 !~ /^-?[0-9]/ { bad++ }
		{ d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1
		if (d > md) md = d; if (a > ma) ma = a; n++ }
		END { if (bad) print "non-finite"; else if (n == 0 || ma == 0) print "none"
		      else printf "%.3g\n", md / ma }'
}
# a < b, a a number (not "none", not "non-finite": a NaN compares false)
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a ~ /^[0-9]/ && a + 0 < b + 0) }'; }

lc-encode -q -m "$M" --compute bf16 "$T/tok.lc" >"$T/bf16.lc" 2>"$T/note"
LC_BF16_EMULATE=1 lc-encode -q -m "$M" --compute bf16 "$T/tok.lc" >"$T/emul.lc"
e=$(reldiff "$T/f32.lc" "$T/emul.lc")
ok "emulated bf16: states within 2e-2 of fp32 ($e)" lt "$e" 2e-2
ok "emulated bf16: not the fp32 states" lt 0 "$e"
# where bf16 cannot run (no AVX512-BF16 or AMX, a build without oneDNN,
# a GPU without bf16) the note ends "running fp32"
if grep -q "; running fp32" "$T/note"; then
	is "no bf16 here: said once" "$(wc -l <"$T/note")" 1
	same "no bf16 here: the fp32 states" "$T/f32.lc" "$T/bf16.lc"
	is "lc-decode says so too" \
		"$(lc-decode -q -m "$M" --compute bf16 -f ids --max-new 4 "$T/f32.lc" 2>&1 >/dev/null | grep -c 'running fp32')" 1
else
	is "bf16 hardware: nothing said" "$(cat "$T/note")" ""
	e=$(reldiff "$T/f32.lc" "$T/bf16.lc")
	ok "bf16: states within 2e-2 of fp32 ($e)" lt "$e" 2e-2
	ok "bf16: not the fp32 states" lt 0 "$e"
	# (--min-new 0: the model's 48 above --max-new 4 is said, as in transformers)
	is "lc-decode --compute bf16: nothing said" \
		"$(lc-decode -q -m "$M" --compute bf16 -f ids --max-new 4 --min-new 0 "$T/f32.lc" \
			2>&1 >/dev/null)" ""
fi

# bf16 states (--dtype bf16) with bf16 products, end to end
lc-encode -q -m "$M" --compute bf16 --dtype bf16 "$T/tok.lc" >"$T/b.lc" 2>/dev/null
ok "--dtype bf16 states" sh -c "lc-cat -o info '$T/b.lc' | grep -q bf16"
ok "lc-decode --compute bf16 decodes them" \
	sh -c "lc-decode -q -m '$M' --compute bf16 -f ids --max-new 8 '$T/b.lc' 2>/dev/null >'$T/ids' && [ \$(wc -l <'$T/ids') -eq $ndoc ]"
# taken as they are (no float32 copy), they are what the float32 states
# of the same run round to: the same summaries either way
lc-encode -q -m "$M" --compute bf16 "$T/tok.lc" 2>/dev/null |
	lc-decode -q -m "$M" --compute bf16 -f ids --max-new 8 >"$T/ids32" 2>/dev/null
same "bf16 states as read and rounded from float32: the same summaries" "$T/ids" "$T/ids32"

done_testing
