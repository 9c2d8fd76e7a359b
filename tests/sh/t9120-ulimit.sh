#!/bin/sh
# Under an address-space limit (ulimit -v, as batch systems set it) the
# compute programs end with a message about memory, or succeed: never a
# signal or a hang. lc's own allocations fail with a message; the
# libraries that crash or hang where their own fail (oneDNN's primitive
# creation, FFTW's planner, OpenBLAS's buffers) are called only with room
# for them (base/machine.h machine_room; compute/cpu.c, dnnl.c). A sweep
# of limits from too small to enough (lc-encode, lc-decode, lc-train), and
# lc-decode's default cache within the limit.
. tests/sh/lib.sh

M=$DATA/locost
need lc-encode && need lc-decode || skip_all "lc-encode or lc-decode not built"
need timeout || skip_all "no timeout(1)"
(ulimit -v 4000000) 2>/dev/null || skip_all "this shell has no ulimit -v"
# AddressSanitizer's shadow memory alone is terabytes of address space
(ulimit -v 4000000; lc-cat --version >/dev/null 2>&1; r=$?; exit $r) 2>/dev/null ||
	skip_all "the programs cannot start under ulimit -v (AddressSanitizer?)"

# one document of 30,000 tokens for the test model (vocabulary 512)
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "%d%s", 2 + (i * 7919) % 500,
	(i < 29999 ? " " : "\n") }' | lc-cat -i ids >"$T/in"

# outcome NAME RC: 0, or 1/2 with a line about memory (lc's, or the
# dynamic loader's below the libraries' own size) and nothing else
outcome() {
	case $2 in
	0) _res 0 "$1: runs" ;;
	1 | 2) grep -q -i -e "out of memory" -e "cannot allocate memory" "$T/err" ||
		echo "# exit $2: $(head -c 300 "$T/err")"
		_res $? "$1: a message about memory" ;;
	127) grep -q "error while loading shared libraries" "$T/err"
		_res $? "$1: the loader's message" ;;
	*) echo "# exit $2: $(head -c 300 "$T/err")"; _res 1 "$1: neither runs nor says why" ;;
	esac
}
for v in 300000 450000 500000 525000 550000 575000 600000 750000 1200000 2400000; do
	(ulimit -v $v; exec timeout 120 lc-encode -q -m "$M" "$T/in") >"$T/enc" 2>"$T/err"
	outcome "lc-encode, ulimit -v $v" $?
done
lc-encode -q -m "$M" "$T/in" >"$T/states" || skip_all "the states"
for v in 300000 450000 500000 550000 600000 750000 1200000; do
	(ulimit -v $v; exec timeout 120 lc-decode -q -m "$M" -f ids -b 4 --max-new 3 "$T/states") \
		>"$T/out" 2>"$T/err"
	outcome "lc-decode, 4 beams, ulimit -v $v" $?
done

# lc-train: a step of a small model from GSG pairs (as t8000)
SPM=${LC_SHARE:-share}/spiece.model
if need lc-train && need lc-gsg-split && [ -f "$SPM" ]; then
	awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
		"${LC_SHARE:-share}/samples/sample.txt" | lc-cat -i text -d blank |
		lc-gsg-split -r 0.3 -m "$SPM" >"$T/pairs.lc" 2>/dev/null
	echo '{"d_model": 64, "d_ff": 128, "d_kv": 16, "d_state": 16, "num_layers": 2,
	 "num_decoder_layers": 2, "num_heads": 4, "vocab_size": 32000,
	 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}' >"$T/config.json"
	for v in 450000 550000 600000 650000 900000; do
		rm -rf "$T/m"
		(ulimit -v $v; exec timeout 120 lc-train --config "$T/config.json" -o "$T/m" \
			--steps 1 --batch-tokens 2000 -t "$SPM" -q "$T/pairs.lc") >"$T/out" 2>"$T/err"
		outcome "lc-train, ulimit -v $v" $?
	done
else
	skip "lc-train under ulimit -v" "lc-train, lc-gsg-split or the tokenizer missing"
fi

# lc-detokenize out of memory on an ids line: an error, not the end of
# the input (glibc's getline sets no error flag: the lines after it were
# dropped and the exit status 0)
if need lc-detokenize; then
	# a line of 150 MB under a limit of 100 MB (the program needs some 50)
	{ printf '100 200\n'; head -c 150000000 /dev/zero | tr '\0' ' '; printf '5\n300 400\n'; } |
		(ulimit -v 100000; exec timeout 120 lc-detokenize -f ids) >"$T/out" 2>"$T/err"
	is "lc-detokenize: a line over the memory is an error" $? 1
	grep -q '^lc-detokenize: stdin: line 2: read error: Cannot allocate memory$' "$T/err"
	_res $? "naming the input and the line"
fi

# the default cache: a quarter of the limit, where nothing bounds the
# memory more (a machine or a cgroup under 3 GB)
mem=$(lc-decode -m "$M" --info | awk -F'\t' '$1 == "cross_cache" { print $2 + 0 }')
if [ "${mem:-0}" -gt 768 ]; then
	(ulimit -v 3000000; exec lc-decode -m "$M" --info) >"$T/out" 2>&1
	grep -q '^cross_cache	7[0-9][0-9]M	a quarter of the memory this process may use (2.9 GiB: its address-space limit (ulimit -v or -d))$' "$T/out"
	_res $? "lc-decode --info: the cache a quarter of ulimit -v"
else
	skip "lc-decode --info: the cache a quarter of ulimit -v" "less than 3 GB here anyway"
fi

done_testing
