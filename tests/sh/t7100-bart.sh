#!/bin/sh
# BART as a user runs it: the oracle's tiny model through lc-encode and
# lc-decode with the generation settings transformers used (and with those
# its generation_config.json gives), a model directory in bart-large-cnn's
# layout (its config.json and generation_config.json keys, vocab.json,
# merges.txt, tokenizer.json; random weights) through lc-tokenize |
# lc-encode | lc-decode | lc-rouge, and the errors.
. tests/sh/lib.sh
M=$DATA/bart/tiny_bart
G=$DATA/bart/goldens
[ -f "$M/config.json" ] || skip_all "no tests/data/bart"

ids() {   # the oracle's int32 ids file, without the leading decoder start token
	od -An -td4 -v "$1" | tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//' | cut -d' ' -f2-
}

for L in len0001 len0007 len0100 len1000; do
	od -An -td4 -v "$G/$L/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//' >"$T/$L.in"
	echo >>"$T/$L.in"
	lc-cat -i ids "$T/$L.in" | lc-encode -q -m "$M" >"$T/$L.h"
	is "$L: greedy as generate() (max_new_tokens 24, no forced ids)" \
		"$(lc-decode -q -m "$M" -f ids --max-new 24 --forced-bos none --forced-eos none <"$T/$L.h")" \
		"$(ids "$G/$L/greedy_ids.i32")"
	is "$L: beam search (4 beams, length_penalty 2, no_repeat_ngram 3, early stopping)" \
		"$(lc-decode -q -m "$M" -f ids --max-new 24 --forced-bos none --forced-eos none -b 4 \
			--length-penalty 2 --no-repeat-ngram 3 --early-stopping true <"$T/$L.h")" \
		"$(ids "$G/$L/beam_ids.i32")"
	is "$L: forced BOS/EOS from generation_config.json" \
		"$(lc-decode -q -m "$M" -f ids --max-new 24 -b 4 --length-penalty 2 --no-repeat-ngram 3 \
			--early-stopping true <"$T/$L.h")" \
		"$(ids "$G/$L/beam_forced_ids.i32")"
done
lc-cat -i ids "$T/len0100.in" | lc-encode -q -m "$M/pytorch_model.bin" >"$T/bin.h"
same "pytorch_model.bin gives the same states" "$T/bin.h" "$T/len0100.h"

# A directory in bart-large-cnn's layout, small
D=$T/cnn
mkdir "$D"
cat >"$D/config.json" <<'JSON'
{
  "_num_labels": 3, "activation_dropout": 0.0, "activation_function": "gelu",
  "add_final_layer_norm": false, "architectures": ["BartForConditionalGeneration"],
  "attention_dropout": 0.0, "bos_token_id": 0, "classif_dropout": 0.0, "classifier_dropout": 0.0,
  "d_model": 64, "decoder_attention_heads": 4, "decoder_ffn_dim": 128, "decoder_layerdrop": 0.0,
  "decoder_layers": 2, "decoder_start_token_id": 2, "dropout": 0.1, "early_stopping": true,
  "encoder_attention_heads": 4, "encoder_ffn_dim": 128, "encoder_layerdrop": 0.0,
  "encoder_layers": 2, "eos_token_id": 2, "force_bos_token_to_be_generated": true,
  "forced_bos_token_id": 0, "forced_eos_token_id": 2, "gradient_checkpointing": false,
  "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}, "init_std": 0.02,
  "is_encoder_decoder": true, "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
  "length_penalty": 2.0, "max_length": 142, "max_position_embeddings": 1024, "min_length": 56,
  "model_type": "bart", "no_repeat_ngram_size": 3, "normalize_before": false, "num_beams": 4,
  "num_hidden_layers": 2, "output_past": true, "pad_token_id": 1, "prefix": " ",
  "scale_embedding": false,
  "task_specific_params": {"summarization": {"early_stopping": true, "length_penalty": 2.0,
    "max_length": 142, "min_length": 56, "no_repeat_ngram_size": 3, "num_beams": 4}},
  "transformers_version": "4.7.0.dev0", "use_cache": true, "vocab_size": 1000
}
JSON
cat >"$D/generation_config.json" <<'JSON'
{"_from_model_config": true, "bos_token_id": 0, "decoder_start_token_id": 2,
 "early_stopping": true, "eos_token_id": 2, "forced_bos_token_id": 0, "forced_eos_token_id": 2,
 "length_penalty": 2.0, "max_length": 142, "min_length": 56, "no_repeat_ngram_size": 3,
 "num_beams": 4, "pad_token_id": 1, "transformers_version": "4.27.0.dev0"}
JSON
cp "$M/vocab.json" "$M/merges.txt" "$M/tokenizer_config.json" "$M/special_tokens_map.json" "$D/"
# tokenizer.json as the fast tokenizer writes it (vocab.json + merges.txt still win)
{
	printf '{"version": "1.0", "added_tokens": ['
	printf '{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "<pad>", "special": true},'
	printf '{"id": 2, "content": "</s>", "special": true}, {"id": 3, "content": "<unk>", "special": true},'
	printf '{"id": 999, "content": "<mask>", "lstrip": true, "special": true}],'
	printf '"normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},'
	printf '"post_processor": {"type": "RobertaProcessing"}, "decoder": {"type": "ByteLevel"},'
	printf '"model": {"type": "BPE", "vocab": '
	cat "$M/vocab.json"
	printf ', "merges": ['
	tail -n +2 "$M/merges.txt" | sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/"&"/' | paste -sd, -
	printf ']}}'
} >"$D/tokenizer.json"
ok "random weights for the config" lc-encode -m "$D" --random-weights --seed 3
cksum "$D/model.safetensors" >"$T/rw.sum"
fails 1 "random weights over a model" lc-encode -m "$D" --random-weights --seed 4
grep -q 'model.safetensors exists: --random-weights writes a new model, never over one' "$T/err"
_res $? "refused, saying so"
cksum "$D/model.safetensors" | cmp -s - "$T/rw.sum"; _res $? "the model untouched"
# its generation_config.json was made from config.json ("_from_model_config"):
# generate() rebuilds the settings from config.json, and so does lc
ok "--info" lc-decode -m "$D" --info
grep -q '^num_beams	4	config.json$' "$T/out" &&
	grep -q '^max_new_tokens	141	config.json$' "$T/out" &&
	grep -q '^min_length	56	config.json$' "$T/out" &&
	grep -q '^length_penalty	2	config.json$' "$T/out" &&
	grep -q '^no_repeat_ngram_size	3	config.json$' "$T/out" &&
	grep -q '^forced_bos_token_id	0	config.json$' "$T/out"
_res $? "--info: bart-large-cnn's settings, from config.json"
ok "--info: the command line wins" lc-decode -m "$D" --info -b 2 --max-new 20
grep -q '^num_beams	2	command line$' "$T/out" && grep -q '^max_new_tokens	20	command line$' "$T/out"
_res $? "and says so"
rm "$D/generation_config.json"
ok "--info from config.json alone" lc-decode -m "$D" --info
grep -q '^num_beams	4	config.json$' "$T/out"; _res $? "config.json's settings"
printf 'The cat sat on the mat. It was a sunny day, and the cat was happy.\n' >"$T/doc.txt"
printf 'A cat sat on a mat.\n' >"$T/ref.txt"
ok "tokenize | encode | decode" sh -c "lc-tokenize -m '$D' '$T/doc.txt' | lc-encode -q -m '$D' |
	lc-decode -q -m '$D' -f stream >'$T/sum.lc'"
ok "lc-rouge reads the summaries" sh -c "lc-rouge -q -b 0 -f tsv '$T/sum.lc' '$T/ref.txt' >'$T/rouge'"
is "one score line per type" "$(grep -vc '^#' "$T/rouge")" 3
is "the summary starts with the forced <s> and runs to min_length at least" \
	"$(lc-cat -o ids "$T/sum.lc" | awk '{ print $1, (NF >= 55) }')" "0 1"
is "the tokenizer is the directory's BPE" \
	"$(lc-tokenize -m "$D" -f ids "$T/doc.txt" | cut -d' ' -f1)" 0
# longer than the positions: token windows that keep <s> ... </s>
i=0; while [ $i -lt 60 ]; do cat "$T/doc.txt"; i=$((i + 1)); done >"$T/long.txt"
ok "a long document in windows: tokenize | chunk --ends 1,1 | encode | decode" sh -c "
	lc-tokenize -m '$D' '$T/long.txt' | lc-chunk -n 1024 --ends 1,1 >'$T/wins.lc' &&
	lc-encode -q -m '$D' '$T/wins.lc' | lc-decode -q -m '$D' -f ids --max-new 8 >'$T/wsum'"
is "each window is <s> ... </s>, 1024 tokens at most" \
	"$(lc-cat -o ids "$T/wins.lc" | awk '{ print $1, $NF, NF <= 1024 }' | sort -u)" "0 2 1"
is "one summary per window" "$(wc -l <"$T/wsum")" "$(lc-cat -o info "$T/wins.lc" | grep -c '^doc')"
ok "the windows' summaries joined into the document's" sh -c "
	lc-encode -q -m '$D' '$T/wins.lc' | lc-decode -q -m '$D' -f stream --max-new 8 |
	lc-chunk --join | lc-cat -o text >'$T/joined'"
is "one line per window" "$(wc -l <"$T/joined")" "$(wc -l <"$T/wsum")"
rm "$D/vocab.json" "$D/merges.txt"
is "tokenizer.json alone gives the same ids" "$(lc-tokenize -m "$D" -f ids "$T/doc.txt")" \
	"$(lc-tokenize -m "$M" -f ids "$T/doc.txt")"
# RobertaProcessing puts its own cls and sep ([token, id] each) around a
# text (the tokenizers library's documented fields; bart-large-cnn's
# tokenizer.json names <s> 0 and </s> 2)
cp "$D/tokenizer.json" "$T/tj.json"
sed 's/"post_processor": {"type": "RobertaProcessing"}/"post_processor": {"type": "RobertaProcessing", "sep": ["<\/s>", 2], "cls": ["<s>", 0]}/' \
	"$T/tj.json" >"$D/tokenizer.json"
is "RobertaProcessing's cls and sep as bart-large-cnn's: the same ids" \
	"$(lc-tokenize -m "$D" -f ids "$T/doc.txt")" "$(lc-tokenize -m "$M" -f ids "$T/doc.txt")"
sed 's/"post_processor": {"type": "RobertaProcessing"}/"post_processor": {"type": "RobertaProcessing", "sep": ["<unk>", 3], "cls": ["<pad>", 1]}/' \
	"$T/tj.json" >"$D/tokenizer.json"
is "other cls and sep: the text between them" "$(lc-tokenize -m "$D" -f ids "$T/doc.txt")" \
	"$(lc-tokenize -m "$M" -f ids "$T/doc.txt" | sed 's/^0 /1 /; s/ 2$/ 3/')"
sed 's/"post_processor": {"type": "RobertaProcessing"}/"post_processor": {"type": "RobertaProcessing", "sep": ["<\/s>"]}/' \
	"$T/tj.json" >"$D/tokenizer.json"
fails 1 "a sep without its id" lc-tokenize -m "$D" -f ids "$T/doc.txt"
grep -q "tokenizer.json: the post_processor's \"sep\" is not \[token, id\]" "$T/err"
_res $? "is refused, naming it"
cp "$T/tj.json" "$D/tokenizer.json"

# errors
awk 'BEGIN { printf "0"; for (i = 0; i < 1100; i++) printf " %d", 4 + i % 900; print " 2" }' |
	lc-cat -i ids >"$T/long"
fails 1 "input longer than the positions" lc-encode -m "$M" "$T/long"
grep -q 'document "stdin:1": 1102 tokens, more than the 1024 the model takes' "$T/err"
_res $? "names the document and both lengths"
ok "--truncate" lc-encode -m "$M" --truncate "$T/long"
grep -q 'stdin:1: 1102 tokens cut to the 1024' "$T/err"; _res $? "warns, naming the document"
awk 'BEGIN { printf "0"; for (i = 0; i < 1000; i++) printf " %d", 4 + i % 900; print " 2" }' |
	lc-cat -i ids >"$T/full"
ok "--gemm-only (the benchmark's floor) runs for BART" lc-encode -m "$M" --gemm-only "$T/full"
is "and prints name, length and seconds" "$(cut -f1,2 "$T/out")" "stdin:1	1002"
fails 1 "--gemm-only: too long" lc-encode -m "$M" --gemm-only "$T/long"
fails 1 "more new tokens than positions" sh -c "lc-decode -m '$M' -f ids --max-new 2000 <'$T/len0007.h'"
grep -q '1024 positions' "$T/err"; _res $? "says so"
mkdir "$T/mbart"
sed 's/"model_type": "bart",/"model_type": "bart", "normalize_before": true,/' "$M/config.json" >"$T/mbart/config.json"
cp "$M/model.safetensors" "$T/mbart/"
fails 1 "an mBART-style config" lc-encode -m "$T/mbart" --info
grep -q 'normalize_before' "$T/err"; _res $? "is refused, naming the key"
# generation_config.json's eos and decoder start are the ones transformers
# generates with; keys lc does not apply are said
mkdir "$T/gen"
cp "$M"/* "$T/gen/" 2>/dev/null
printf '{"eos_token_id": 5, "decoder_start_token_id": 0, "forced_eos_token_id": 5}' >"$T/gen/generation_config.json"
ok "eos from generation_config.json" lc-decode -m "$T/gen" --info
grep -q '^eos_token_id	5	generation_config.json$' "$T/out" &&
	grep -q '^decoder_start_token_id	0	generation_config.json$' "$T/out"
_res $? "--info: eos 5 and start 0, from generation_config.json"
ok "... a decode with them runs" sh -c "lc-decode -m '$T/gen' -f ids --max-new 8 <'$T/len0007.h' >'$T/g5'"
printf '{"eos_token_id": [2, 7], "decoder_start_token_id": 2}' >"$T/gen/generation_config.json"
ok "a list of eos ids" lc-decode -m "$T/gen" --info
grep -q '^eos_token_id	2 7	generation_config.json$' "$T/out"
_res $? "--info: all of them (a summary ends at any: t7010)"
printf '{"eos_token_id": [%s], "decoder_start_token_id": 2}' "$(seq -s, 1 17)" \
	>"$T/gen/generation_config.json"
fails 1 "a list of 17 eos ids" lc-decode -m "$T/gen" --info
grep -q 'generation_config.json: "eos_token_id" lists 17 ids: lc takes 16 at most' "$T/err"
_res $? "is refused, saying so"
printf '{"bad_words_ids": [[5]], "suppress_tokens": [], "decoder_start_token_id": 2, %s}' \
	'"eos_token_id": 2' >"$T/gen/generation_config.json"
ok "bad_words_ids" lc-decode -m "$T/gen" --info
grep -q 'generation_config.json: "bad_words_ids" is not applied by lc' "$T/err"; _res $? "is said"
printf '{"suppress_tokens": [], "num_beam_groups": 1, "typical_p": 1.0, %s}' \
	'"decoder_start_token_id": 2, "eos_token_id": 2' >"$T/gen/generation_config.json"
ok "neutral values" lc-decode -m "$T/gen" --info
is "... are not" "$(grep -c 'not applied' "$T/err")" 0
printf '{"eos_token_id": "x"}' >"$T/gen/generation_config.json"
fails 1 "eos_token_id not an id" lc-decode -m "$T/gen" --info
grep -q '"eos_token_id" must be an id or a list of ids' "$T/err"; _res $? "is refused"

# LSG pads to whole blocks with pad_token_id's embedding: a row that is
# not there (read past the table: a crash) is refused at load, for all
mkdir "$T/padout"
sed 's/"pad_token_id": *[0-9]*/"pad_token_id": 1000/' "$M/config.json" >"$T/padout/config.json"
cp "$M/model.safetensors" "$T/padout/"
grep -q '"pad_token_id": 1000' "$T/padout/config.json" && grep -q '"vocab_size": 1000' "$T/padout/config.json"
_res $? "(a config with pad_token_id = vocab_size)"
fails 1 "pad_token_id outside the vocabulary" lc-encode -m "$T/padout" --info
grep -q 'padout/config.json: pad_token_id 1000 is outside the vocabulary (vocab_size 1000)' "$T/err"
_res $? "is refused, naming the file and the key"
# a model file that is not a regular file (a link to a device) is refused
# as such, not taken for absent (a tokenizer_config.json was ignored), and
# never opened (a FIFO's open waits for a writer forever)
mkfifo "$T/fifo"
for f in config.json generation_config.json tokenizer_config.json vocab.json model.safetensors; do
	for to in /dev/null "$T/fifo"; do
		rm -rf "$T/nonreg"
		cp -R "$M" "$T/nonreg"
		rm -f "$T/nonreg/$f"
		ln -s "$to" "$T/nonreg/$f"
		fails 1 "$f a link to $to" timeout 60 sh -c "printf x | lc-tokenize -m '$T/nonreg' |
			lc-encode -m '$T/nonreg' | lc-decode -m '$T/nonreg' -f ids"
		grep -q "nonreg/$f: not a regular file" "$T/err"; _res $? "$f: not a regular file, it says"
	done
done
rm -rf "$T/nonreg"
cp -R "${LC_SHARE:-share}/models/demo" "$T/nonreg"
rm "$T/nonreg/spiece.model"
ln -s "$T/fifo" "$T/nonreg/spiece.model"
fails 1 "spiece.model a FIFO" timeout 60 lc-tokenize -m "$T/nonreg" /dev/null
grep -q "nonreg/spiece.model: not a regular file" "$T/err"; _res $? "not a regular file, it says"
mkdir "$T/fsq"
cp "$DATA"/fairseq/bart/dict.txt "$DATA"/fairseq/bart/encoder.json "$DATA"/fairseq/bart/vocab.bpe "$T/fsq/"
ln -s "$T/fifo" "$T/fsq/model.pt"
fails 1 "a fairseq model.pt that is a FIFO" timeout 60 lc-encode -m "$T/fsq" --info
grep -q "fsq/model.pt: not a regular file" "$T/err"; _res $? "not a regular file, it says"
rm -rf "$T/nonreg" "$T/fsq"
# a config.json of 17 MiB (spaces: valid JSON) is refused before parsing
mkdir "$T/bigcfg"
{ cat "$M/config.json"; head -c 17825792 /dev/zero | tr '\0' ' '; } >"$T/bigcfg/config.json"
cp "$M/model.safetensors" "$T/bigcfg/"
fails 1 "a config.json of 17 MiB" lc-encode -m "$T/bigcfg" --info
grep -q 'bigcfg/config.json: 17826[0-9]* bytes, more than a config file may hold (16777216)' "$T/err"
_res $? "says so"
cp "$M/config.json" "$T/bigcfg/config.json"
{ printf '{"num_beams": 2}'; head -c 17825792 /dev/zero | tr '\0' ' '; } >"$T/bigcfg/generation_config.json"
fails 1 "a generation_config.json of 17 MiB" lc-decode -m "$T/bigcfg" --info
grep -q 'bigcfg/generation_config.json: .* more than a config file may hold' "$T/err"; _res $? "says so"
rm -r "$T/bigcfg"
if lc-convert -q -n 2048 --block-size 16 --sparse-block-size 16 --sparsity-factor 2 "$T/padout" "$T/lsgpad" 2>"$T/err"; then
	_res 1 "lc-convert refuses it too"
else
	grep -q 'pad_token_id 1000 is outside' "$T/err"; _res $? "lc-convert refuses it too"
fi
done_testing
