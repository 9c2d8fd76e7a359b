#!/bin/sh
# The top-down transformer as a user runs it: lc-convert --to topdown turns
# the tests' tiny BART into a top-down directory (config.json keys, the
# tokenizer files), whose encoder runs through lc-tokenize | lc-encode |
# lc-decode, on 1 and 3 threads alike, with inputs shorter than the
# pooling kernel, AdaPool and --gemm-only; lc-train fine-tunes it a few
# steps (the loss falls; the checkpoint decodes); the conversion's and the
# encoder's refusals. (The parity with the authors' code and the mapping
# tensor by tensor are test_topdown.)
. tests/sh/lib.sh
B=$DATA/bart/tiny_bart
G=$DATA/bart/goldens
[ -f "$B/config.json" ] || skip_all "no tests/data/bart"

cd "$T" || exit 1
key() {   # the value of "$2" in config.json $1, as one line
	tr -d ' \n' <"$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"
}

ok "lc-convert --to topdown" lc-convert -q --to topdown -n 2048 --block-size 16 "$B" td
is "model_type" "$(key td/config.json model_type)" '"bart_topdown"'
is "architectures" "$(key td/config.json architectures)" '["BartTopDownForConditionalGeneration"]'
is "max_position_embeddings" "$(key td/config.json max_position_embeddings)" 2048
is "the decoder keeps BART's positions" \
	"$(key td/config.json max_decoder_position_embeddings)" 1024
is "window_size" "$(key td/config.json window_size)" 16
is "bottom_up_layers (two thirds of 2)" "$(key td/config.json bottom_up_layers)" 1
is "top_down_layers" "$(key td/config.json top_down_layers)" 1
is "segment_layers" "$(key td/config.json segment_layers)" 2
is "pool_kernel, pool_stride, pool_type" \
	"$(key td/config.json pool_kernel) $(key td/config.json pool_stride) $(key td/config.json pool_type)" \
	'32 24 "avg"'
is "tokenizer_config.json's model_max_length" \
	"$(key td/tokenizer_config.json model_max_length)" 2048
for f in vocab.json merges.txt special_tokens_map.json generation_config.json; do
	same "$f copied" "td/$f" "$B/$f"
done
# BartConfig's forced_eos_token_id, which a BART config.json may leave
# unsaid, written out (a top-down config.json is not read as a BartConfig)
mkdir implicit
cp "$B"/config.json "$B"/model.safetensors "$B"/vocab.json "$B"/merges.txt implicit/
sed -i '/"forced_eos_token_id"/d' implicit/config.json
ok "lc-convert a BART whose config.json leaves forced_eos_token_id to BartConfig" \
	lc-convert -q --to topdown -n 2048 --block-size 16 implicit tdi
is "forced_eos_token_id written out" "$(key tdi/config.json forced_eos_token_id)" 2
ok "lc-decode --info" lc-decode -m tdi --info
grep -q '^forced_eos_token_id	2	config.json$' out; _res $? "lc-decode forces it"
ok "lc-encode --info" lc-encode -m td --info
grep -q '^architecture	bart-topdown$' out && grep -q '^segment_layers	2$' out &&
	grep -q '^pool_type	avg$' out
_res $? "--info shows the top-down keys"

for L in len0001 len0100 len1000; do
	od -An -td4 -v "$G/$L/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//' >"$L.in"
	echo >>"$L.in"
	lc-cat -i ids "$L.in" >"$L.lc"
	ok "$L: encode, 1 thread" lc-encode -q -j 1 -m td "$L.lc"
	cp out "$L.h1"
	ok "$L: encode, 3 threads" lc-encode -q -j 3 -m td "$L.lc"
	same "$L: the same states on 1 and 3 threads" out "$L.h1"
	ok "$L: beam search" lc-decode -q -m td -f ids --max-new 8 -b 2 "$L.h1"
	is "$L: 8 new tokens or fewer" "$(wc -w <out | awk '$1 >= 1 && $1 <= 10 { print "ok" }')" ok
done
ok "text through the whole pipeline" sh -c \
	"printf 'The quick brown fox jumps over the lazy dog.\n' | lc-tokenize -m td -d line |
	 lc-encode -q -m td | lc-decode -q -m td --max-new 8 >sum.txt"
is "one summary" "$(wc -l <sum.txt)" 1
ok "--gemm-only" lc-encode -q -m td --gemm-only len1000.lc

ok "--pool-type adapool --bottom-up-layers 0 --segment-layers 1" \
	lc-convert -q --to topdown -n 1024 --block-size 16 --pool-type adapool \
	--bottom-up-layers 0 --segment-layers 1 "$B" tda
is "pool_type adapool" "$(key tda/config.json pool_type)" '"adapool"'
is "two top-down layers" "$(key tda/config.json top_down_layers)" 2
ok "AdaPool encodes" lc-encode -q -m tda len1000.lc
ok "--max-segments 3" lc-convert -q --to topdown -n 1024 --block-size 16 --max-segments 3 "$B" tds
ok "100 tokens: 3 segments" lc-encode -q -m tds len0100.lc
fails 1 "1000 tokens: more than 3 segments" lc-encode -q -m tds len1000.lc
grep -q 'more than the 103 the model takes' err; _res $? "... names the limit (3 segments: 103 tokens)"

# fine-tuning: pairs from the verses of Ruth (GSG), with its tokenizer
awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
	"${LC_SHARE:-share}/samples/sample.txt" >ruth.txt
ok "pairs from lc-gsg-split -m the top-down model" sh -c "lc-cat -i text -d blank ruth.txt |
	lc-gsg-split -r 0.3 -m td >pairs.lc"
ok "fine-tunes the converted model 3 steps" lc-train -m td -o m --steps 3 \
	--batch-tokens 800 --holdout 2 --holdout-out held -j 2 -q pairs.lc
for f in config.json model.safetensors vocab.json merges.txt trainer_state.json loss.tsv; do
	[ -s "m/$f" ]; _res $? "the checkpoint has $f"
done
ok "lc-encode loads the checkpoint" lc-encode -m m --info
grep -q '^architecture.bart-topdown$' out; _res $? "as the top-down transformer"
ok "lc-encode | lc-decode with the checkpoint" sh -c "lc-encode -q -m m held.src.lc |
	lc-decode -q -m m -f ids --max-new 6 >ids"
is "a summary per held-out document" "$(wc -l <ids | tr -d ' ')" 2
ok "15 steps, the whole set per step (AdaPool)" lc-train -m tda -o d --steps 15 --lr 1e-2 \
	--schedule constant --batch-tokens 100000 --no-rouge -j 2 -q pairs.lc
is "the loss falls by more than a third" "$(awk -F'\t' 'NR == 2 { a = $4 } NR == 16 { b = $4 }
	END { print (b < a * 2 / 3) ? "yes" : a " -> " b }' d/loss.tsv)" yes

# refusals
fails 1 "a maximum length that is not a multiple of BART's" \
	lc-convert -q --to topdown -n 1500 "$B" x
grep -q 'not a multiple of the model.s 1024 positions' err; _res $? "... says so"
fails 1 "more bottom-up layers than encoder layers" \
	lc-convert -q --to topdown --bottom-up-layers 3 "$B" x
fails 1 "more segment layers than BART has" \
	lc-convert -q --to topdown --segment-layers 3 "$B" x
fails 1 "DST exists" lc-convert -q --to topdown "$B" td
fails 1 "a top-down source" lc-convert -q --to topdown td x
grep -q 'converts BART' err; _res $? "... says lc-convert --to topdown converts BART"
fails 2 "an unknown --pool-type" lc-convert -q --to topdown --pool-type max "$B" x
fails 2 "a top-down option without --to topdown" lc-convert -q --segment-layers 1 "$B" x
fails 2 "a BART-LS option with --to topdown" lc-convert -q --to topdown --seed 1 "$B" x
fails 2 "an LSG option with --to topdown" lc-convert -q --to topdown --sparsity-type norm "$B" x
is "no directories left" "$(ls -d x ./*.tmp-* 2>/dev/null)" ""
awk 'BEGIN { for (i = 0; i < 2049; i++) printf "%d ", 4 + i % 900; print "" }' >long.in
lc-cat -i ids long.in >long.lc
fails 1 "2049 tokens into 2048 positions" lc-encode -q -m td long.lc
# pad ids inside a document: the authors' decoder masks their rows, so
# lc-encode leaves them out of the states it writes (the stream carries no
# mask); greedy ids of the reference with its mask (tests/gen/pad_inside_ref.py)
P=$DATA/topdown/pad
if [ -f "$P/greedy.txt" ]; then
	lc-cat -i ids "$P/in.txt" | lc-encode -q -m "$P" >"$T/pad.lc"
	is "the states: the 21 rows of the 40 that are not pads" \
		"$(lc-cat -o info "$T/pad.lc" | awk -F'\t' '$1 == "tensor" { print $6 }')" 21x32
	lc-decode -q -m "$P" -f ids -b 1 --max-new 12 "$T/pad.lc" >"$T/pad.ids"
	same "greedy ids as the authors' masked decoder's" "$T/pad.ids" "$P/greedy.txt"
fi
done_testing
