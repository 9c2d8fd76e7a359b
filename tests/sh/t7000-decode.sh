#!/bin/sh
# lc-decode as a user runs it: goldens through the program (greedy and
# beam search from the reference encoder outputs), output formats,
# errors, and the whole pipeline when lc-encode is there.
. tests/sh/lib.sh

M=$DATA/locost
H=$M/hidden.lcs          # enc_out of cases L0001 L0007 L0064 L1000 as "hidden" documents
need lc-decode || skip_all "lc-decode not built"

ok "--help" lc-decode --help
grep -q '^usage: lc-decode' "$T/out"; is "--help prints the usage on stdout" $? 0
ok "--version" lc-decode --version
fails 2 "unknown format" lc-decode -m "$M" -f xml "$H"
fails 2 "unknown option" lc-decode -m "$M" --frobnicate "$H"
fails 1 "no model anywhere" env -u LC_MODEL LC_SHARE="$T" lc-decode -f ids "$H"
# min-new above max-new: generate() warns and stops at the most (it was a
# usage error here)
ok "min-new above max-new" lc-decode -m "$M" --min-new 9 --max-new 8 -f ids "$H"
grep -q 'at least 9 new tokens (min_new_tokens 9, min_length 0) exceeds the most, 8: the summaries end at 8 tokens' "$T/err"
_res $? "with a warning"
# the most from the model's file: the same warning (it was given only
# when both came from the command line)
ok "min-new above the model's most" lc-decode -m "${LC_SHARE:-share}/models/demo" --min-new 200 --info
grep -q 'exceeds the most, 128' "$T/err"; _res $? "with a warning"
fails 2 "zero beams" lc-decode -m "$M" -b 0 -f ids "$H"
fails 2 "bad early stopping" lc-decode -m "$M" -b 2 --early-stopping sometimes -f ids "$H"
fails 1 "missing model" lc-decode -m "$T/nowhere" -f ids "$H"

# Greedy ids identical to the oracle's goldens (int32 files, one per case).
: >"$T/want"
for c in L0001 L0007 L0064 L1000; do
	od -An -td4 -v "$M/cases/$c/greedy_ids.i32" | tr -s ' \n' '  ' |
		sed 's/^ *//; s/ *$//' >>"$T/want"
	echo >>"$T/want"
done
ok "greedy ids" sh -c "lc-decode -q -m '$M' -f ids --max-new 32 <'$H' >'$T/ids'"
same "greedy ids equal the goldens (eos included when produced)" "$T/ids" "$T/want"
ok "files as arguments" sh -c "lc-decode -q -m '$M' -f ids --max-new 32 '$H' - <'$H' >'$T/ids2'"
cat "$T/want" "$T/want" >"$T/want2"
same "two inputs, documents in order" "$T/ids2" "$T/want2"

# Search options against decode_search.txt (tests/gen/decode_ref.py: HF
# generate() semantics over the float64 reference decoder).
bad=0 n=0
while IFS= read -r line; do
	set -- $(echo "$line" | sed 's/ :.*//; s/[a-z]*=//g')
	case=$1 beams=$2 max=$3 min=$4 lp=$5 ngram=$6 rep=$7 early=$8
	want=$(echo "$line" | sed 's/.* : //')
	case $case in
	L0001) k=1 ;; L0007) k=2 ;; L0064) k=3 ;; L1000) k=4 ;;
	*) continue ;;   # not in hidden.lcs (test_decoder covers it)
	esac
	got=$(lc-decode -q -m "$M" -f ids -b "$beams" --max-new "$max" --min-new "$min" \
		--length-penalty "$lp" --no-repeat-ngram "$ngram" --repetition-penalty "$rep" \
		--early-stopping "$early" <"$H" | sed -n "${k}p")
	n=$((n + 1))
	if [ "$got" != "$want" ]; then
		bad=$((bad + 1)); echo "# $line"; echo "#   got: $got"
	fi
done <"$M/decode_search.txt"
is "search options reproduce $n golden runs" $bad 0
is "... all 37 of the four cases' runs were run" $n 37

# -f stream: "tokens" (and "text" with a tokenizer) per document, names kept.
# (no tokenizer anywhere: the stream still gets "tokens", with a warning)
ok "stream output" sh -c "env -u LC_TOKENIZER LC_SHARE='$T' lc-decode -q -m '$M' -f stream --max-new 32 <'$H' >'$T/s'"
ok "stream validates" lc-cat -o ids "$T/s"
same "stream tokens equal the goldens" "$T/out" "$T/want"
lc-cat -o info "$T/s" | awk -F'\t' '$1 == "doc" { print $3 }' >"$T/names"
printf 'L0001\nL0007\nL0064\nL1000\n' >"$T/wnames"
same "document names kept" "$T/names" "$T/wnames"
fails 2 "-z is for text output only" lc-decode -m "$M" -f stream -z "$H"

# -f text needs a tokenizer; a missing one is a clear error.
fails 1 "text with a missing tokenizer" lc-decode -m "$M" -t "$T/none.model" "$H"
grep -q 'lc-decode: ' "$T/err"; is "error message format" $? 0

# With a tokenizer: text lines are the detokenized ids, -z separates by NUL,
# and the stream's "text" is the same text.
SPM=${LC_SHARE:-share}/spiece.model
if [ -f "$SPM" ] && need lc-detokenize; then
	ok "text output" sh -c "lc-decode -q -m '$M' -t '$SPM' --max-new 32 <'$H' >'$T/text'"
	grep -q "tokenizer .*spiece.model: the tokenizer's ids go to 31999 but the model's vocab_size is 512" \
		"$T/err"; _res $? "a tokenizer of another model (T5's, for this 512-id one) is said"
	is "one line per document" "$(wc -l <"$T/text" | tr -d ' ')" 4
	lc-cat -i ids <"$T/want" | lc-detokenize -m "$SPM" >"$T/detok" 2>"$T/detok.err"
	same "text equals lc-detokenize of the ids" "$T/text" "$T/detok"
	ok "NUL-separated text" sh -c "lc-decode -q -z -m '$M' -t '$SPM' --max-new 32 <'$H' | tr '\\000' '\\n' >'$T/ztext'"
	same "-z gives the same records" "$T/ztext" "$T/text"
	ok "stream with text" sh -c "lc-decode -q -m '$M' -t '$SPM' -f stream --max-new 32 <'$H' | lc-cat -o text >'$T/stext'"
	same "stream text equals the text output" "$T/stext" "$T/text"
else
	skip "text output" "no tokenizer or lc-detokenize"
fi

# Errors name the document; truncated input is an error.
printf '5 6 7\n' | lc-cat -i ids >"$T/tok"
fails 1 "a document without hidden states" lc-decode -m "$M" -f ids "$T/tok"
grep -q 'lc-decode: .*/tok: document "stdin:1": no "hidden" tensor' "$T/err"; is "error names the document" $? 0
head -c 5000 "$H" >"$T/cut"
fails 1 "truncated stream" lc-decode -m "$M" -f ids "$T/cut"

# The whole pipeline: token ids -> lc-encode -> lc-decode reproduces the goldens.
if need lc-encode; then
	: >"$T/in"
	for c in L0001 L0007 L0064 L1000; do
		od -An -td4 -v "$M/cases/$c/input_ids.i32" | tr -s ' \n' '  ' |
			sed 's/^ *//; s/ *$//' >>"$T/in"
		echo >>"$T/in"
	done
	ok "pipeline" sh -c "lc-cat -i ids <'$T/in' | lc-encode -q -m '$M' | lc-decode -q -m '$M' -f ids --max-new 32 >'$T/pipe'"
	same "lc-cat | lc-encode | lc-decode reproduces the goldens" "$T/pipe" "$T/want"
	# --stats: one line per document decoded alone, then wall and memory;
	# the summaries unchanged
	lc-cat -i ids <"$T/in" | lc-encode -q -m "$M" |
		lc-decode -q -m "$M" -f ids --max-new 32 --batch 1 --stats >"$T/st" 2>"$T/sterr"
	same "--stats: the same summaries" "$T/st" "$T/want"
	is "--stats: a line per document" \
		"$(grep -cE '^lc-decode: stats: .*: [0-9]+ states, [0-9]+ steps: first [0-9.]+ s, then [0-9.]+ s a step; cross cache 0 of [0-9]+ layers$' "$T/sterr")" 4
	ok "--stats: wall time and peak memory last" \
		sh -c "tail -1 '$T/sterr' | grep -qE '^lc-decode: stats: wall [0-9.]+ s, peak RSS [0-9.]+ MiB$'"
	# --cross-cache: 4 beams read each layer's cached keys and values
	# (64M holds every layer of the tiny model, 700K the first of L1000's
	# only) or fold them into the queries (0): the same summaries
	for xc in 0 700K 64M; do
		lc-cat -i ids <"$T/in" | lc-encode -q -m "$M" | lc-decode -q -m "$M" -f ids -b 4 \
			--max-new 32 --batch 1 --stats --cross-cache $xc >"$T/xc$xc" 2>"$T/xcerr$xc"
	done
	same "--cross-cache 700K: the beams of 0" "$T/xc700K" "$T/xc0"
	same "--cross-cache 64M: the beams of 0" "$T/xc64M" "$T/xc0"
	is "--cross-cache 0: no layer cached" "$(grep -c 'cross cache 0 of 2 layers$' "$T/xcerr0")" 4
	# on a GPU the states are read there, and no layer is cached
	all=2 one=1
	if lc-decode -m "$M" --info | grep -q '^device.cuda'; then all=0 one=0; fi
	is "--cross-cache 64M: every layer cached" \
		"$(grep -c "cross cache $all of 2 layers\$" "$T/xcerr64M")" 4
	is "--cross-cache 700K: L1000 has one layer cached" \
		"$(grep -c "1000 states.*cross cache $one of 2 layers\$" "$T/xcerr700K")" 1
else
	skip "pipeline" "lc-encode not built"
fi
for bad in x -1 1X 2GB 1024T; do
	fails 2 "--cross-cache '$bad' is a usage error" lc-decode -m "$M" --cross-cache "$bad" "$H"
done
grep -q "more than the memory this process may use" "$T/err"
_res $? "--cross-cache 1024T: more than the memory this process may use, it says"

# a length the memory cannot hold (a model file may ask 2^24 new tokens
# of LOCOST, whose relative positions set no limit): said at once
fails 1 "64 beams x 2^24 new tokens" lc-decode -m "$M" -f ids -b 64 --max-new 16777216 "$H"
grep -q 'decoder: 64 rows x 16777216 steps need [0-9.]* GiB for the self-attention cache, more than the memory' "$T/err"
_res $? "says what it needs"

done_testing
