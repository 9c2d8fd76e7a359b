#!/bin/sh
# BART-LS as a user runs it: lc-convert --to bart_ls turns the oracle's
# tiny BART into BART-LS directories (config.json keys, the pooled
# attention's seeded initialisation); with one block that covers the input
# and no pooled layer BART-LS is BART (the same greedy and beam ids through
# lc-encode | lc-decode); a model with block_size 16 and a pooled layer
# runs the pipeline at 1000 tokens, on 1 and 3 threads alike; and the
# conversion's and the encoder's refusals. (The parity with the authors'
# code is test_bartls.)
. tests/sh/lib.sh
B=$DATA/bart/tiny_bart
G=$DATA/bart/goldens
[ -f "$B/config.json" ] || skip_all "no tests/data/bart"

cd "$T" || exit 1
key() {   # the value of "$2" in config.json $1, as one line
	tr -d ' \n' <"$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"
}

ok "lc-convert --to bart_ls, one block, no pooled layer" \
	lc-convert -q --to bart_ls -n 2048 --pooling-layers 0 "$B" ls0
is "model_type" "$(key ls0/config.json model_type)" '"bart_ls"'
is "architectures" "$(key ls0/config.json architectures)" '["BartLSForConditionalGeneration"]'
is "max_position_embeddings" "$(key ls0/config.json max_position_embeddings)" 2048
is "the decoder keeps BART's positions" \
	"$(key ls0/config.json max_decoder_position_embeddings)" 1024
is "block_size (default)" "$(key ls0/config.json block_size)" 1024
is "pool_kernel" "$(key ls0/config.json pool_kernel)" 18
is "tokenizer_config.json's model_max_length" \
	"$(key ls0/tokenizer_config.json model_max_length)" 2048
for f in vocab.json merges.txt special_tokens_map.json generation_config.json; do
	same "$f copied" "ls0/$f" "$B/$f"
done
ok "lc-encode --info" lc-encode -m ls0 --info
grep -q '^pooling_layers	0$' out && grep -q '^max_decoder_position_embeddings	1024$' out
_res $? "--info shows the BART-LS keys"

for L in len0001 len0100 len1000; do
	od -An -td4 -v "$G/$L/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//' >"$L.in"
	echo >>"$L.in"
	lc-cat -i ids "$L.in" >"$L.lc"
	for m in "$B" ls0; do
		lc-encode -q -m "$m" "$L.lc" | lc-decode -q -m "$m" -f ids --max-new 16 -b 2 \
			>"$L.$(basename "$m").ids"
	done
	same "$L: one block, no pooling: BART-LS generates as BART" "$L.ls0.ids" "$L.tiny_bart.ids"
done

# BartConfig's generation defaults that a BART config.json leaves unsaid
# (forced_eos_token_id 2; force_bos_token_to_be_generated) are written out:
# a BART-LS config.json is not read as a BartConfig
mkdir implicit
cp "$B"/config.json "$B"/model.safetensors "$B"/vocab.json "$B"/merges.txt implicit/
sed -i -e '/"forced_eos_token_id"/d' \
	-e 's/"forced_bos_token_id": 0,/"force_bos_token_to_be_generated": true, "forced_bos_token_id": null,/' \
	implicit/config.json
ok "lc-convert a BART whose config.json leaves them to BartConfig" \
	lc-convert -q --to bart_ls -n 2048 --pooling-layers 0 implicit lsi
is "forced_eos_token_id written out" "$(key lsi/config.json forced_eos_token_id)" 2
is "forced_bos_token_id written out" "$(key lsi/config.json forced_bos_token_id)" 0
for m in implicit lsi; do
	lc-encode -q -m "$m" len0100.lc | lc-decode -q -m "$m" -f ids --max-new 8 -b 2 >"len0100.$m.ids"
done
same "and BART-LS generates as that BART (the forced first and last ids)" "len0100.lsi.ids" \
	"len0100.implicit.ids"

ok "lc-convert --block-size 16 --pooling-layers 1 --seed 3" \
	lc-convert -q --to bart_ls --max-length 2048 --block-size 16 --pooling-layers 1 --seed 3 \
	"$B" ls1
ok "the same seed again" lc-convert -q --to bart_ls -n 2048 --block-size 16 --pooling-layers 1 \
	--seed 3 "$B" ls1b
same "the same seed, the same weights" ls1/model.safetensors ls1b/model.safetensors
ok "another seed" lc-convert -q --to bart_ls -n 2048 --block-size 16 --pooling-layers 1 \
	--seed 4 "$B" ls1c
cmp -s ls1/model.safetensors ls1c/model.safetensors
_res $((! $?)) "another seed, other pooled weights"
ok "encode 1000 tokens, 1 thread" lc-encode -q -j 1 -m ls1 len1000.lc
cp out h1
ok "encode 1000 tokens, 3 threads" lc-encode -q -j 3 -m ls1 len1000.lc
same "the same states on 1 and 3 threads" out h1
ok "decode them" lc-decode -q -m ls1 -f ids --max-new 8 h1
is "8 new tokens or fewer" "$(wc -w <out | awk '$1 >= 1 && $1 <= 10 { print "ok" }')" ok
ok "--gemm-only" lc-encode -q -m ls1 --gemm-only len1000.lc

# refusals
fails 1 "a maximum length that is not a multiple of BART's" \
	lc-convert -q --to bart_ls -n 1500 "$B" x
grep -q 'not a multiple of the model.s 1024 positions' err; _res $? "... says so"
fails 1 "more pooled layers than encoder layers" \
	lc-convert -q --to bart_ls -n 2048 --pooling-layers 3 "$B" x
fails 1 "a smaller vocabulary" lc-convert -q --to bart_ls -n 2048 --vocab-size 10 "$B" x
fails 1 "DST exists" lc-convert -q --to bart_ls -n 2048 "$B" ls0
fails 1 "a BART-LS source" lc-convert -q --to bart_ls -n 4096 ls0 x
grep -q 'converts BART' err; _res $? "... says lc-convert --to bart_ls converts BART"
fails 2 "an unknown --to" lc-convert -q --to fancy "$B" x
fails 2 "an LSG option with --to bart_ls" lc-convert -q --to bart_ls --sparsity-type norm "$B" x
fails 2 "a BART-LS option without it" lc-convert -q --seed 3 "$B" x
is "no directories left" "$(ls -d x ./*.tmp-* 2>/dev/null)" ""
awk 'BEGIN { for (i = 0; i < 2049; i++) printf "%d ", 4 + i % 900; print "" }' >long.in
lc-cat -i ids long.in >long.lc
fails 1 "2049 tokens into 2048 positions" lc-encode -q -m ls1 long.lc
grep -q 'the 2048 the model takes' err; _res $? "... names the limit"
fails 1 "more new tokens than the decoder's 1024 positions" \
	lc-decode -q -m ls1 --max-new 1100 -f ids h1
grep -q '1024 positions (max_decoder_position_embeddings)' err; _res $? "... names its table"
# pad ids inside a document: masked as the authors' code masks them (their
# positions skipped, their rows zeroed, masked in every attention), and
# left out of the states, as their decoder masks them; greedy ids of the
# reference with its mask for 13 documents of 1 to 2268 tokens
# (tests/gen/pad_inside_ref.py)
P=$DATA/bartls/pad
if [ -f "$P/greedy.txt" ]; then
	lc-cat -i ids "$P/in.txt" | lc-encode -q -m "$P" >"$T/pad.lc"
	lc-decode -q -m "$P" -f ids -b 1 --max-new 12 "$T/pad.lc" >"$T/pad.ids"
	same "greedy ids as the authors' masked decoder's" "$T/pad.ids" "$P/greedy.txt"
fi
done_testing
