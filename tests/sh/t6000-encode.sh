#!/bin/sh
# lc-encode as a user runs it: the output contract against the oracle
# goldens, both weight files, threads, bf16, errors naming the document.
. tests/sh/lib.sh

M=$DATA/locost
ids() { od -An -t d4 -v "$M/cases/$1/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ //; s/ $//'; }
for c in L0001 L0007 L0064 L0300 L1000; do ids $c; echo; done >"$T/ids.txt"
for c in L0001 L0007 L0064 L0300 L1000; do cat "$M/cases/$c/enc_out.f32"; done >"$T/gold.raw"

ok "ids to a stream" sh -c "lc-cat -i ids <'$T/ids.txt' >'$T/in'"
ok "encode (safetensors)" sh -c "lc-encode -q -m '$M' <'$T/in' >'$T/enc'"
ok "raw states" sh -c "lc-cat -o raw <'$T/enc' >'$T/enc.raw'"
# max |out - gold| <= 2e-5 x max |gold| (measured 5.6e-7), every value finite (od prints
# nan and inf as words, and a NaN compares false: it would pass unseen)
cmpf() {
	od -An -t f4 -v "$1" | tr -s ' ' '\n' | sed '/^$/d' >"$T/a"
	od -An -t f4 -v "$2" | tr -s ' ' '\n' | sed '/^$/d' >"$T/b"
	paste "$T/a" "$T/b" | awk '
		function abs(x) { return x < 0 ? -x : x }
		$1 !~ /^-?[0-9]/ || $2 !~ /^-?[0-9]/ { bad++ }
		{ n++; d = abs($1 - $2); if (d > e) e = d; if (abs($2) > m) m = abs($2) }
		END { if (n == 0 || bad || e > 2e-5 * m) {
			printf "# n %d err %g max %g non-finite %d\n", n, e, m, bad; exit 1 } }'
}
is "as many values as the goldens" "$(wc -c <"$T/enc.raw")" "$(wc -c <"$T/gold.raw")"
ok "final states match the oracle (2e-5 relative)" cmpf "$T/enc.raw" "$T/gold.raw"
printf '\000\000\300\177' >"$T/nan.raw"   # a float32 NaN
head -c 4 "$T/gold.raw" >"$T/gold1.raw"
fails 1 "... a NaN is not a match (the check itself)" cmpf "$T/nan.raw" "$T/gold1.raw"

mkdir "$T/bin"
cp "$M/config.json" "$M/pytorch_model.bin" "$T/bin/"
ok "encode (pytorch_model.bin only)" sh -c "lc-encode -q -m '$T/bin' <'$T/in' >'$T/enc2'"
same "both weight files give the same stream" "$T/enc" "$T/enc2"
ok "one thread" sh -c "lc-encode -q -j 1 -m '$M' <'$T/in' >'$T/enc3'"
same "thread count does not change the output" "$T/enc" "$T/enc3"

lc-cat -o info <"$T/enc" | head -2 | cut -f1,3,4,5,6 >"$T/info"
printf 'doc\tstdin:1\tmodel=%s\td_model=64\ntensor\tstdin:1\thidden\tf32\t1x64\n' \
	"$(lc-encode -m "$M" --info | awk '$1 == "fingerprint" { print $2 }')" >"$T/want"
same "documents carry the model fingerprint; tokens become hidden" "$T/info" "$T/want"

ok "bf16 output" sh -c "lc-encode -q --dtype bf16 -m '$M' <'$T/in' | lc-cat -o info >'$T/bf'"
is "bf16 tensors" "$(grep -c 'hidden	bf16' "$T/bf")" 5

# a document alone or in a stream: same states
sed -n 4p "$T/ids.txt" | lc-cat -i ids | lc-encode -q -m "$M" | lc-cat -o raw >"$T/alone"
lc-cat -o raw <"$T/enc" | tail -c +$((4 * 64 * (1 + 7 + 64) + 1)) | head -c $((4 * 64 * 300)) >"$T/instream"
same "a document's states do not depend on its neighbours" "$T/alone" "$T/instream"

ok "--info" lc-encode -m "$M" --info
grep -q "^parameters	239104$" "$T/out"; _res $? "--info counts the parameters"
one_cpu "--info: one thread under taskset -c 0" \
	"^threads	1 (the processors this process may run on)$" lc-encode -m "$M" --info
ok "--help" lc-encode --help
fails 2 "bad option" lc-encode --bogus
fails 2 "bad dtype" lc-encode --dtype f16 -m "$M"
fails 1 "no such model" sh -c "lc-encode -m '$T/nope' <'$T/in'"
grep -q "^lc-encode: -m/--model .*nope: No such file or directory$" "$T/err"; _res $? "message names the option and the model"

printf '5 6 7\n5 512 1\n' | lc-cat -i ids >"$T/oov"
fails 1 "id >= vocab_size" sh -c "lc-encode -q -m '$M' <'$T/oov' >'$T/o'"
grep -q 'document "stdin:2": token 1 is 512, outside' "$T/err"; _res $? "error names the document and token"
printf '5 6 7\n\n' | lc-cat -i ids >"$T/empty"
fails 1 "empty document" sh -c "lc-encode -q -m '$M' <'$T/empty' >'$T/o'"
grep -q 'document "stdin:2": no tokens' "$T/err"; _res $? "error names the empty document"
head -c 100 "$T/in" >"$T/cut"
fails 1 "truncated input stream" sh -c "lc-encode -q -m '$M' <'$T/cut' >'$T/o'"

# broken model directories
mkdir "$T/m2"
cp "$M/config.json" "$T/m2/"
head -c 5000 "$M/pytorch_model.bin" >"$T/m2/pytorch_model.bin"
fails 1 "truncated pytorch_model.bin" sh -c "lc-encode -m '$T/m2' <'$T/in' >'$T/o'"
head -c 5000 "$M/model.safetensors" >"$T/m2/model.safetensors"
fails 1 "truncated model.safetensors" sh -c "lc-encode -m '$T/m2' <'$T/in' >'$T/o'"
grep -q 'truncated' "$T/err"; _res $? "says truncated"
done_testing
