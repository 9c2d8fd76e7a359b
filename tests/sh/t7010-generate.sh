#!/bin/sh
# lc-decode's generate() options as a user runs them: where each setting
# comes from (--info), max_length against max_new_tokens, errors,
# num_return_sequences with beams against transformers' model.generate()
# (tests/data/sampling/bart_nbest.txt, tests/gen/nbest_ref.py), sampling
# reproducible by seed whatever the thread count and the other documents,
# the output formats with several sequences, and JSON Lines.
. tests/sh/lib.sh

M=$DATA/locost
H=$M/hidden.lcs          # 4 documents: L0001 L0007 L0064 L1000
B=$DATA/bart/tiny_bart
G=$DATA/bart/goldens
need lc-decode || skip_all "lc-decode not built"

ok "--help" lc-decode --help
for o in --max-length --sample --no-sample --temperature --top-k --top-p --seed \
	--num-return-sequences jsonl --cross-cache; do
	grep -q -- "$o" "$T/out" || { echo "# --help lacks $o"; false; }
	_res $? "--help names $o"
done

# --- settings and their sources
ok "--info, lc's defaults" lc-decode -m "$M" --info
grep -q '^do_sample	false	lc default$' "$T/out" &&
	grep -q '^temperature	1	lc default$' "$T/out" &&
	grep -q '^top_k	50	lc default$' "$T/out" &&
	grep -q '^top_p	1	lc default$' "$T/out" &&
	grep -q '^num_return_sequences	1	lc default$' "$T/out" &&
	grep -q '^seed	0	lc default$' "$T/out" &&
	grep -q '^max_new_tokens	256	lc default$' "$T/out" &&
	grep -q '^max_length	257	lc default$' "$T/out"
_res $? "transformers' defaults (top_k 50), 256 new tokens"
# threads and the cache: the processors and memory this process may use
# (base/machine.h: the affinity mask or a cgroup's quota; physical memory
# or a cgroup's limit), the cache a quarter of that memory
awk -F'\t' '$1 == "threads" && $2 >= 1 && ($3 == "the processors this process may run on" ||
	$3 == "the CPU quota of its cgroup") { t = 1 }
	$1 == "cross_cache" && match($3, /^a quarter of the memory this process may use \([0-9.]+ GiB: /) {
		x = $3; sub(/^[^(]*[(]/, "", x); d = $2 - x * 256; c = d >= -14 && d <= 14 }
	END { exit !(t && c) }' "$T/out"
_res $? "threads: the processors this process may use; cross_cache a quarter of its memory"
LC_THREADS=2 lc-decode -m "$M" --info -j 3 --cross-cache 64M >"$T/out" 2>&1
grep -q '^threads	3	-j/--threads$' "$T/out" && grep -q '^cross_cache	64M	--cross-cache$' "$T/out"
_res $? "-j over \$LC_THREADS, --cross-cache, and where they came from"
LC_THREADS=2 lc-decode -m "$M" --info >"$T/out" 2>&1
grep -q '^threads	2	\$LC_THREADS$' "$T/out"
_res $? "\$LC_THREADS"
one_cpu "under taskset -c 0: one thread" '^threads	1	the processors this process may run on$' \
	lc-decode -m "$M" --info

D=$T/model
mkdir "$D"
ln -s "$M/config.json" "$D/config.json"
ln -s "$M/model.safetensors" "$D/model.safetensors"
# (a generation_config.json gives its own decoder start and eos, as
# transformers reads it: without them generate() refuses, or never stops)
cat >"$D/generation_config.json" <<'JSON'
{"do_sample": true, "temperature": 0.7, "top_k": 20, "top_p": 0.9,
 "num_return_sequences": 2, "max_length": 9, "transformers_version": "4.36.2",
 "decoder_start_token_id": 0, "eos_token_id": 1}
JSON
ok "--info from generation_config.json" lc-decode -m "$D" --info
grep -q '^do_sample	true	generation_config.json$' "$T/out" &&
	grep -q '^temperature	0.7	generation_config.json$' "$T/out" &&
	grep -q '^top_k	20	generation_config.json$' "$T/out" &&
	grep -q '^top_p	0.9	generation_config.json$' "$T/out" &&
	grep -q '^num_return_sequences	2	generation_config.json$' "$T/out" &&
	grep -q '^max_new_tokens	8	generation_config.json$' "$T/out" &&
	grep -q '^max_length	9	generation_config.json$' "$T/out"
_res $? "the file's keys, max_length 9 = 8 new tokens"
ok "--info, the command line wins" lc-decode -m "$D" --info --no-sample --temperature 1.5 \
	--top-k 0 --top-p 0.5 --num-return-sequences 1 --seed 12 --max-length 20
grep -q '^do_sample	false	command line$' "$T/out" &&
	grep -q '^temperature	1.5	command line$' "$T/out" &&
	grep -q '^top_k	0	command line$' "$T/out" &&
	grep -q '^top_p	0.5	command line$' "$T/out" &&
	grep -q '^num_return_sequences	1	command line$' "$T/out" &&
	grep -q '^seed	12	command line$' "$T/out" &&
	grep -q '^max_new_tokens	19	command line$' "$T/out"
_res $? "and says so"
ok "--max-new and --max-length" lc-decode -m "$D" --info --max-length 20 --max-new 5
grep -q '^max_new_tokens	5	command line$' "$T/out" && grep -q 'max-new wins' "$T/err"
_res $? "--max-new wins, with a warning"
# one file with both: max_new_tokens wins (transformers)
printf '{"max_length": 9, "max_new_tokens": 4, "do_sample": false, %s}\n' \
	'"decoder_start_token_id": 0, "eos_token_id": 1' >"$D/generation_config.json"
ok "--info, max_length and max_new_tokens in one file" lc-decode -m "$D" --info
grep -q '^max_new_tokens	4	generation_config.json$' "$T/out" &&
	grep -q '^do_sample	false	generation_config.json$' "$T/out"
_res $? "max_new_tokens wins"
# no generation_config.json: config.json's keys
rm "$D/generation_config.json" "$D/config.json"
sed 's/^{/{"do_sample": true, "top_k": 7, "num_return_sequences": 3,/' "$M/config.json" >"$D/config.json"
ok "--info from config.json" lc-decode -m "$D" --info
grep -q '^top_k	7	config.json$' "$T/out" && grep -q '^do_sample	true	config.json$' "$T/out" &&
	grep -q '^num_return_sequences	3	config.json$' "$T/out"
_res $? "config.json's keys"
printf '{"top_k": null, "decoder_start_token_id": 0, "eos_token_id": 1}\n' \
	>"$D/generation_config.json"
ok "--info, top_k null" lc-decode -m "$D" --info
grep -q '^top_k	0	generation_config.json$' "$T/out"; _res $? "top_k null is off, as in transformers"
printf '{"do_sample": "yes"}\n' >"$D/generation_config.json"
fails 1 "a key of the wrong type" lc-decode -m "$D" --info
grep -q 'generation_config.json: "do_sample" must be true or false' "$T/err"; _res $? "names the file and key"
printf '{"top_p": 1.5}\n' >"$D/generation_config.json"
fails 1 "top_p out of range in the file" lc-decode -m "$D" --info

# --- usage errors, as transformers refuses them
fails 2 "greedy with 2 sequences" lc-decode -m "$M" -f ids --num-return-sequences 2 "$H"
grep -q 'greedy search returns one sequence' "$T/err"; _res $? "says why"
fails 2 "more sequences than beams" lc-decode -m "$M" -f ids -b 2 --num-return-sequences 3 "$H"
fails 2 "temperature 0" lc-decode -m "$M" -f ids --sample --temperature 0 "$H"
fails 2 "top-p above 1" lc-decode -m "$M" -f ids --sample --top-p 1.5 "$H"
fails 2 "negative top-k" lc-decode -m "$M" -f ids --sample --top-k -1 "$H"
fails 2 "max-length 1" lc-decode -m "$M" -f ids --max-length 1 "$H"
# (--min-new above the most stops at the most, as generate() does, which
# warns: the genfiles cases below)

# --- max_length is max_new_tokens + 1
ok "--max-length 9" sh -c "lc-decode -q -m '$M' -f ids --max-length 9 '$H' >'$T/ml'"
ok "--max-new 8" sh -c "lc-decode -q -m '$M' -f ids --max-new 8 '$H' >'$T/mn'"
same "the same ids" "$T/ml" "$T/mn"
printf '{"max_length": 9, "decoder_start_token_id": 0, "eos_token_id": 1}\n' \
	>"$D/generation_config.json"
ok "max_length 9 in generation_config.json" sh -c "lc-decode -q -m '$D' -f ids '$H' >'$T/mf'"
same "the same ids again" "$T/mf" "$T/mn"

# --- num_return_sequences with beam search = transformers' generate()
if [ -f "$DATA/sampling/bart_nbest.txt" ] && need lc-encode; then
	bad=0 n=0
	for L in len0001 len0007 len0100 len1000; do
		od -An -td4 -v "$G/$L/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//' >"$T/$L.in"
		echo >>"$T/$L.in"
		lc-cat -i ids "$T/$L.in" | lc-encode -q -m "$B" >"$T/$L.h"
	done
	# the beams' cross-attention cached (the default), then folded
	for xc in 1G 0; do
		bad=0 n=0
		while IFS= read -r line; do
			set -- $(echo "$line" | sed 's/ :.*//; s/[a-z]*=//g')
			L=$1 beams=$2 nret=$3 max=$4 lp=$5 ngram=$6 early=$7 forced=$8
			if [ "$forced" = 1 ]; then f=""; else f="--forced-bos none --forced-eos none"; fi
			echo "$line" | sed 's/^[^:]*: //; s/ : [^:]*$//' | tr '|' '\n' |
				sed 's/^ *//; s/ *$//' >"$T/want"
			lc-decode -q -m "$B" -f ids $f -b "$beams" --num-return-sequences "$nret" \
				--max-new "$max" --length-penalty "$lp" --no-repeat-ngram "$ngram" \
				--early-stopping "$early" --cross-cache $xc "$T/$L.h" >"$T/got"
			n=$((n + 1))
			cmp -s "$T/got" "$T/want" ||
				{ bad=$((bad + 1)); echo "# differs: $line" | cut -c1-100; }
		done <"$DATA/sampling/bart_nbest.txt"
		is "--cross-cache $xc: the N best beams of $n settings in generate()'s order" $bad 0
		is "... all 20 settings of the golden file" $n 20
	done
	lc-decode -q -m "$B" -f ids --forced-bos none --forced-eos none -b 4 --length-penalty 2 \
		--no-repeat-ngram 3 --early-stopping true --max-new 24 "$T/len0100.h" >"$T/one"
	lc-decode -q -m "$B" -f ids --forced-bos none --forced-eos none -b 4 --length-penalty 2 \
		--no-repeat-ngram 3 --early-stopping true --max-new 24 --num-return-sequences 3 \
		"$T/len0100.h" | head -1 >"$T/first"
	same "the first of 3 is the one of 1" "$T/first" "$T/one"
else
	skip "the N best beams" "no tests/data/sampling or lc-encode"
fi

# --- where the settings come from = generate() on edited model files
# (tests/data/sampling/genfiles.txt, tests/gen/genfiles_ref.py): min_length
# and min_new_tokens both apply (lc kept only the last one given, the
# command line's --min-new replacing the file's min_length), and a
# generation_config.json made from config.json ("_from_model_config")
# gives way to config.json's keys, as generate() rebuilds it from them
if [ -f "$DATA/sampling/genfiles.txt" ] && need lc-encode; then
	gen='"bos_token_id": 0, "decoder_start_token_id": 2, "forced_bos_token_id": 0,
	  "pad_token_id": 1, "max_new_tokens": 24, "transformers_version": "4.36.2"'
	for c in minboth minlen_cli minnew_big mincli_big frommodel frommodel_beams noeos \
		noeos_beams bosstart minmax_cli eoslist eoslist_min eoslist_beams; do
		GD=$T/gf/$c
		mkdir -p "$GD"
		cp "$B/config.json" "$B/model.safetensors" "$B/vocab.json" "$B/merges.txt" \
			"$B/generation_config.json" "$GD/"
		cli=""
		case $c in
		minboth) printf '{%s, "eos_token_id": 744, "min_length": 8, "min_new_tokens": 2}\n' \
			"$gen" >"$GD/generation_config.json" ;;
		minlen_cli) printf '{%s, "eos_token_id": 744, "min_length": 8}\n' "$gen" \
			>"$GD/generation_config.json"; cli="--min-new 2" ;;
		minnew_big) printf '{%s, "eos_token_id": 744, "min_length": 3, "min_new_tokens": 6}\n' \
			"$gen" >"$GD/generation_config.json" ;;
		mincli_big) printf '{%s, "eos_token_id": 744, "min_length": 8}\n' "$gen" \
			>"$GD/generation_config.json"; cli="--min-new 12" ;;
		frommodel) sed '0,/{/s//{"no_repeat_ngram_size": 2, "max_length": 17,/' \
			"$B/config.json" >"$GD/config.json" ;;
		frommodel_beams) sed '0,/{/s//{"max_length": 17,/' "$B/config.json" >"$GD/config.json"
			sed '0,/{/s//{"num_beams": 4,/' "$B/generation_config.json" \
				>"$GD/generation_config.json" ;;
		noeos) printf '{"decoder_start_token_id": 2, "max_new_tokens": 45}\n' \
			>"$GD/generation_config.json" ;;
		noeos_beams) printf '{"decoder_start_token_id": 2, "max_new_tokens": 45, "num_beams": 3}\n' \
			>"$GD/generation_config.json" ;;
		bosstart) printf '{"bos_token_id": 0, "eos_token_id": 2, "max_new_tokens": 12}\n' \
			>"$GD/generation_config.json" ;;
		minmax_cli) printf '{%s, "eos_token_id": 2}\n' "$gen" >"$GD/generation_config.json"
			cli="--max-new 5 --min-new 10" ;;
		eoslist) printf '{%s, "eos_token_id": [2, 846]}\n' "$gen" >"$GD/generation_config.json" ;;
		eoslist_min) printf '{%s, "eos_token_id": [744, 846], "min_new_tokens": 6}\n' "$gen" \
			>"$GD/generation_config.json" ;;
		eoslist_beams) printf '{%s, "eos_token_id": [2, 846], "num_beams": 3}\n' "$gen" \
			>"$GD/generation_config.json" ;;
		esac
		for L in len0007 len0100; do
			grep "^$c $L : " "$DATA/sampling/genfiles.txt" | sed 's/^[^:]*: //' >"$T/want"
			lc-decode -q -m "$GD" -f ids $cli "$T/$L.h" >"$T/got" 2>"$T/err"
			same "$c $L: generate()'s ids" "$T/got" "$T/want"
		done
	done
	lc-decode -m "$T/gf/minlen_cli" --min-new 2 --info >"$T/out"
	grep -q '^min_new_tokens	2	command line$' "$T/out" &&
		grep -q '^min_length	8	generation_config.json$' "$T/out"
	_res $? "--info shows both minimums and their sources"
	lc-decode -m "$T/gf/frommodel_beams" --info >"$T/out"
	grep -q '^num_beams	1	lc default$' "$T/out" &&
		grep -q '^max_new_tokens	16	config.json$' "$T/out"
	_res $? "--info: the settings are config.json's"
	# max_length 1 leaves no token after the start: refused, not ignored
	# (lc took its default of 256 then; generate() makes one, warning)
	printf '{"decoder_start_token_id": 2, "eos_token_id": 2, "max_length": 1}\n' \
		>"$T/gf/frommodel/generation_config.json"
	fails 1 "max_length 1 in generation_config.json" lc-decode -m "$T/gf/frommodel" --info
	grep -q 'generation_config.json: "max_length"' "$T/err"; _res $? "names the file and key"
	lc-decode -m "$T/gf/noeos" --info >"$T/out"
	grep -q '^eos_token_id	none	generation_config.json$' "$T/out"
	_res $? "--info: no eos, from generation_config.json"
	printf '{"eos_token_id": 2, "max_new_tokens": 12}\n' >"$T/gf/noeos/generation_config.json"
	fails 1 "generation_config.json without a decoder start or bos" lc-decode -m "$T/gf/noeos" \
		-f ids "$T/len0007.h"
	grep -q 'generation_config.json gives neither decoder_start_token_id nor bos_token_id' \
		"$T/err"; _res $? "says so (generate() refuses it too)"
	# BartConfig's own, with no generation_config.json (or one made from
	# config.json): forced_eos_token_id 2 when config.json has none (lc
	# forced none), the old "force_bos_token_to_be_generated", and keys
	# set to null (lc took them for absent: eos 2, decoder start 2)
	for c in cfg_noforcedeos cfg_noforcedeos_fm cfg_forcedeos_null cfg_nobos cfg_forcebos \
		cfg_nulleos cfg_nullstart; do
		GD=$T/gf/$c
		mkdir -p "$GD"
		cp "$B/model.safetensors" "$B/vocab.json" "$B/merges.txt" "$GD/"
		[ $c = cfg_noforcedeos_fm ] && cp "$B/generation_config.json" "$GD/"
		case $c in
		cfg_noforcedeos*) ed='/"forced_eos_token_id"/d' ;;
		cfg_forcedeos_null) ed='s/"forced_eos_token_id": 2,/"forced_eos_token_id": null,/' ;;
		cfg_nobos) ed='/"forced_bos_token_id"/d' ;;
		cfg_forcebos) ed='/"forced_bos_token_id"/d
			s/"bos_token_id": 0,/&\n  "force_bos_token_to_be_generated": true,/' ;;
		cfg_nulleos) ed='s/"eos_token_id": 2,/"eos_token_id": null,/' ;;
		cfg_nullstart) ed='s/"decoder_start_token_id": 2,/"decoder_start_token_id": null,/' ;;
		esac
		ml=12
		[ $c = cfg_nulleos ] && ml=60
		sed "$ed" "$B/config.json" | sed "0,/{/s//{\"max_length\": $ml,/" >"$GD/config.json"
		for L in len0007 len0100; do
			grep "^$c $L : " "$DATA/sampling/genfiles.txt" | sed 's/^[^:]*: //' >"$T/want"
			lc-decode -q -m "$GD" -f ids "$T/$L.h" >"$T/got" 2>"$T/err"
			same "$c $L: generate()'s ids" "$T/got" "$T/want"
		done
	done
	# BartConfig tests the old key for truth (kwargs.get(...)): 1 is true,
	# null false (transformers 4.36.2's BartConfig, run: forced_bos 0 and
	# None); lc refused both as not true or false
	for v in 1:0 null:none; do
		mkdir -p "$T/gf/fb"
		cp "$T/gf/cfg_forcebos/"* "$T/gf/fb/"
		sed "s/\"force_bos_token_to_be_generated\": true/\"force_bos_token_to_be_generated\": ${v%%:*}/" \
			"$T/gf/cfg_forcebos/config.json" >"$T/gf/fb/config.json"
		lc-decode -m "$T/gf/fb" --info >"$T/out" 2>"$T/err"
		grep -q "^forced_bos_token_id	${v#*:}	" "$T/out"
		_res $? "force_bos_token_to_be_generated ${v%%:*}: forced bos ${v#*:}"
	done
	lc-decode -m "$T/gf/cfg_noforcedeos" --info >"$T/out"
	grep -q "^forced_eos_token_id	2	config.json has none: BartConfig's default$" "$T/out"
	_res $? "--info: the forced eos is BartConfig's default"
	lc-decode -m "$T/gf/cfg_nulleos" --info >"$T/out"
	grep -q '^eos_token_id	none	config.json$' "$T/out"
	_res $? "--info: eos null in config.json, none"
	lc-decode -m "$T/gf/cfg_nulleos" -f ids "$T/len0007.h" >/dev/null 2>"$T/err"
	[ "$(grep -c 'config.json: "eos_token_id" is null: as in transformers, summaries end only' \
		"$T/err")" = 1 ]; _res $? "says so once, naming config.json"
	sed 's/"bos_token_id": 0,/"bos_token_id": null,/' "$T/gf/cfg_nullstart/config.json" \
		>"$T/gf/cfg_nullstart/c2" && mv "$T/gf/cfg_nullstart/c2" "$T/gf/cfg_nullstart/config.json"
	fails 1 "config.json with null decoder start and bos" lc-decode -m "$T/gf/cfg_nullstart" \
		-f ids "$T/len0007.h"
	grep -q 'config.json gives neither decoder_start_token_id nor bos_token_id' "$T/err"
	_res $? "says so, naming config.json"
else
	skip "the settings' files" "no tests/data/sampling or lc-encode"
fi

# --- sampling: a seed reproduces, whatever -j and the other documents
S="-q -m $M -f ids --max-new 24 --sample --top-k 0"
ok "sampling, -j 1" sh -c "lc-decode $S --seed 5 -j 1 '$H' >'$T/j1'"
ok "sampling, -j 2" sh -c "lc-decode $S --seed 5 -j 2 '$H' >'$T/j2'"
ok "sampling, -j 3" sh -c "lc-decode $S --seed 5 -j 3 '$H' >'$T/j3'"
same "-j 2 draws as -j 1" "$T/j2" "$T/j1"
same "-j 3 draws as -j 1" "$T/j3" "$T/j1"
ok "sampling, another seed" sh -c "lc-decode $S --seed 6 '$H' >'$T/s6'"
! cmp -s "$T/s6" "$T/j1"; _res $? "another seed, other samples"
ok "sampling, no seed" sh -c "lc-decode $S '$H' >'$T/s0a' && lc-decode $S --seed 0 '$H' >'$T/s0b'"
same "the default seed is 0" "$T/s0a" "$T/s0b"
# each document on its own (lc-cat --shard 4: one per shard), and in
# another order: its samples do not change
ok "shard the documents" lc-cat --shard 4 -O "$T/sh" "$H"
ok "the third document alone" sh -c "lc-decode $S --seed 5 '$T/sh.2.lc' >'$T/third'"
sed -n 3p "$T/j1" >"$T/want3"
same "its samples as in the whole stream" "$T/third" "$T/want3"
ok "documents in another order" sh -c "cat '$T/sh.3.lc' '$T/sh.0.lc' | lc-decode $S --seed 5 >'$T/rev'"
{ sed -n 4p "$T/j1"; sed -n 1p "$T/j1"; } >"$T/want41"
same "the same samples per document" "$T/rev" "$T/want41"
# several samples per document: N lines each, independent rows
ok "3 samples each" sh -c "lc-decode $S --seed 5 --num-return-sequences 3 '$H' >'$T/n3'"
is "3 lines per document" "$(wc -l <"$T/n3" | tr -d ' ')" 12
awk 'NR % 3 == 1' "$T/n3" >"$T/n3first"
same "the first of 3 samples is the 1 sample" "$T/n3first" "$T/j1"
[ "$(sort -u "$T/n3" | wc -l)" -gt 4 ]; _res $? "the samples differ"
ok "3 samples, -j 3" sh -c "lc-decode $S --seed 5 --num-return-sequences 3 -j 3 '$H' >'$T/n3j'"
same "the same with -j 3" "$T/n3j" "$T/n3"
# top-k 1 is greedy; beam sampling runs and reproduces
ok "top-k 1" sh -c "lc-decode -q -m '$M' -f ids --max-new 24 --sample --top-k 1 --seed 9 '$H' >'$T/k1'"
ok "greedy" sh -c "lc-decode -q -m '$M' -f ids --max-new 24 '$H' >'$T/g'"
same "top-k 1 sampling is greedy search" "$T/k1" "$T/g"
ok "beam sampling" sh -c "lc-decode $S -b 3 --num-return-sequences 2 --seed 4 '$H' >'$T/bs1' &&
	lc-decode $S -b 3 --num-return-sequences 2 --seed 4 -j 2 '$H' >'$T/bs2'"
same "beam sampling reproduces" "$T/bs1" "$T/bs2"
is "2 lines per document" "$(wc -l <"$T/bs1" | tr -d ' ')" 8
# the model's do_sample, and --no-sample over it
printf '{"do_sample": true, "top_k": 0, "decoder_start_token_id": 0, "eos_token_id": 1}\n' \
	>"$D/generation_config.json"
ok "do_sample from the model" sh -c "lc-decode -q -m '$D' -f ids --max-new 24 --seed 5 '$H' >'$T/fs'"
same "as --sample" "$T/fs" "$T/j1"
ok "--no-sample" sh -c "lc-decode -q -m '$D' -f ids --max-new 24 --no-sample '$H' >'$T/ns'"
same "greedy again" "$T/ns" "$T/g"

# --- output formats with several sequences, JSON Lines
SPM=${LC_SHARE:-share}/spiece.model
if [ -f "$SPM" ]; then
	ok "stream with 3 samples" sh -c "lc-decode $S -t '$SPM' -f stream --seed 5 \
		--num-return-sequences 3 '$H' >'$T/s3.lc'"
	lc-cat -o info "$T/s3.lc" | awk -F'\t' '$1 == "tensor" && $2 == 1 { print $4 }' |
		paste -sd' ' - >"$T/names"
	is "tokens, text, tokens.2, text.2, tokens.3, text.3" "$(cat "$T/names")" \
		"tokens text tokens.2 text.2 tokens.3 text.3"
	lc-cat -o ids "$T/s3.lc" >"$T/s3ids"
	ok "ids with 3 samples" sh -c "lc-decode $S -f ids --seed 5 --num-return-sequences 3 \
		'$H' >'$T/i3'"
	same "lc-cat -o ids: every sample, as lc-decode -f ids prints them" "$T/s3ids" "$T/i3"
	awk 'NR % 3 == 1' "$T/s3ids" >"$T/s3first"
	same "tokens: the first samples" "$T/s3first" "$T/j1"
	lc-cat -o text "$T/s3.lc" >"$T/s3text"
	ok "text with 3 samples, lc-decode" sh -c "lc-decode $S -t '$SPM' -f text --seed 5 \
		--num-return-sequences 3 '$H' >'$T/t3'"
	same "lc-cat -o text: every sample" "$T/s3text" "$T/t3"
	lc-cat -o jsonl "$T/s3.lc" >"$T/s3jsonl"
	ok "jsonl with 3 samples, lc-decode" sh -c "lc-decode $S -t '$SPM' -f jsonl --seed 5 \
		--num-return-sequences 3 '$H' >'$T/j3ref'"
	same "lc-cat -o jsonl = lc-decode -f jsonl" "$T/s3jsonl" "$T/j3ref"
	ok "text with 3 samples" sh -c "lc-decode $S -t '$SPM' -f text --seed 5 \
		--num-return-sequences 3 '$H' >'$T/t3'"
	is "3 lines per document" "$(wc -l <"$T/t3" | tr -d ' ')" 12
	ok "jsonl" sh -c "lc-decode $S -t '$SPM' -f jsonl --seed 5 '$H' >'$T/j.jsonl'"
	is "one line per document" "$(wc -l <"$T/j.jsonl" | tr -d ' ')" 4
	grep -q '^{"id": "L0001", "summary": ' "$T/j.jsonl"; _res $? "id first, then summary"
	ok "jsonl with 3" sh -c "lc-decode $S -t '$SPM' -f jsonl --seed 5 --num-return-sequences 3 \
		'$H' >'$T/j3.jsonl'"
	grep -c '"summaries": \[' "$T/j3.jsonl" | grep -qx 4; _res $? "\"summaries\" in every line"
	if need lc-rouge; then
		ok "lc-rouge reads the JSON Lines" lc-rouge -q -b 0 --jsonl "$T/j.jsonl" "$T/j.jsonl"
	fi
	if command -v python3 >/dev/null 2>&1; then
		ok "python3 parses it" python3 -c '
import json, sys
texts = open(sys.argv[3], encoding="utf-8").read().split("\n")
for n, path in ((1, sys.argv[1]), (3, sys.argv[2])):
    for i, line in enumerate(open(path, encoding="utf-8")):
        o = json.loads(line)
        assert o["id"] == ["L0001", "L0007", "L0064", "L1000"][i], o["id"]
        assert o["summary"] == texts[3 * i], (o["summary"], texts[3 * i])
        if n > 1:
            assert o["summaries"] == texts[3 * i:3 * i + 3]
        else:
            assert "summaries" not in o
' "$T/j.jsonl" "$T/j3.jsonl" "$T/t3"
	else
		skip "python3 parses it" "no python3"
	fi
else
	skip "stream, text and jsonl with several sequences" "no $SPM"
fi

# names with quotes, backslashes and UTF-8 (and summaries of a byte-level
# BPE tokenizer, whose pieces may split UTF-8) survive the trip
if need lc-tokenize && need lc-encode; then
	cat >"$T/docs.jsonl" <<'JSON'
{"id": "say \"hi\"", "text": "The cat sat on the mat."}
{"id": "back\\slash/and 'single'", "text": "A dog ran in the park, fast."}
{"id": "ünïcödé — 文書 🐈", "text": "Ein Hund läuft schnell über die Wiese."}
JSON
	ok "named documents through the pipeline" sh -c "lc-tokenize -m '$B' --jsonl --id id '$T/docs.jsonl' |
		lc-encode -q -m '$B' >'$T/named.h'"
	ok "jsonl of them" sh -c "lc-decode -q -m '$B' --max-new 12 -f jsonl '$T/named.h' >'$T/named.jsonl'"
	ok "the JSON Lines parse back" sh -c "lc-tokenize -m '$B' --jsonl --id id --text summary \
		'$T/named.jsonl' | lc-cat -o info >'$T/back'"
	awk -F'\t' '$1 == "doc" { print $3 }' "$T/back" >"$T/backnames"
	# (lc-cat -o info writes a backslash as two)
	printf '%s\n' 'say "hi"' "back\\\\slash/and 'single'" 'ünïcödé — 文書 🐈' >"$T/wantnames"
	same "names round-trip" "$T/backnames" "$T/wantnames"
	if command -v python3 >/dev/null 2>&1; then
		ok "python3 reads the same names and texts" python3 -c '
import json, sys
got = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
want = [json.loads(l)["id"] for l in open(sys.argv[2], encoding="utf-8")]
assert [o["id"] for o in got] == want, got
assert all(isinstance(o["summary"], str) for o in got)
' "$T/named.jsonl" "$T/docs.jsonl"
	fi
else
	skip "names round-trip" "lc-tokenize or lc-encode not built"
fi
fails 1 "jsonl needs a tokenizer" lc-decode -m "$M" -t "$T/none.model" -f jsonl "$H"

# the model's own settings at fault: a data error naming the model
mkdir "$T/badgen"
cp "$M/config.json" "$M/model.safetensors" "$T/badgen/"
sed -i 's/"decoder_start_token_id": 0/"decoder_start_token_id": 99999/' "$T/badgen/config.json"
fails 1 "a start id outside the model's vocabulary" lc-decode -m "$T/badgen" --info
grep -q "badgen: the model's generation settings (config.json, generation_config.json): .*start 99999" \
	"$T/err"; _res $? "names the model and its files"
done_testing
