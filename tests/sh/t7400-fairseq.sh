#!/bin/sh
# fairseq checkpoints (BART-LS's model_*.pt layout) as a user runs them:
# the GPT-2 BPE + dict.txt tokenizer against the authors' code (goldens
# made by tests/gen/fairseq_tok_ref.py), and lc-tokenize | lc-encode |
# lc-decode on a tiny fairseq BART checkpoint giving what the same weights
# give from a transformers-style directory (tests/gen/make_fairseq_ckpt.py).
. tests/sh/lib.sh
F=$DATA/fairseq
[ -f "$F/bart/model.pt" ] || skip_all "no tests/data/fairseq"

# --- the tokenizer: GPT-2's files under fairseq's names, and a dict.txt
K=$T/tok
mkdir "$K"
cp "$DATA/bart/tokenizer/gpt2/vocab.json" "$K/encoder.json"
cp "$DATA/bart/tokenizer/gpt2/merges.txt" "$K/vocab.bpe"
L=$DATA/bart/tokenizer/lines.txt
for d in "" _partial; do
	cp "$F/tok/dict$d.txt" "$K/dict.txt"
	ok "dict$d: 2,036 lines encoded" sh -c "lc-tokenize -m '$K' -d line -f ids <'$L' >'$T/ids$d'"
	same "dict$d: ids as fairseq's hub encode()" "$T/ids$d" "$F/tok/fairseq$d.ids.txt"
	ok "dict$d: decoded" sh -c "lc-detokenize -m '$K' <'$F/tok/fairseq$d.ids.txt' >'$T/dec$d'"
	same "dict$d: text as fairseq's hub decode()" "$T/dec$d" "$F/tok/fairseq$d.decoded.txt"
done
ok "-m dict.txt names the directory" sh -c "printf 'Hello world' | lc-tokenize -m '$K/dict.txt' -f ids >'$T/h'"
# GPT-2's "Hello" 15496, " world" 995; fairseq's id of dict.txt's line N is N + 3
is "<s> ... </s> as the hub interface" "$(cat "$T/h")" \
	"0 $(awk '$1 == 15496 { print NR + 3 }' "$K/dict.txt") $(awk '$1 == 995 { print NR + 3 }' "$K/dict.txt") 2"
is "<s> in text is text to fairseq (3 ids, no 0)" \
	"$(printf '<s>' | lc-tokenize -m "$K" -f ids --no-special | tr ' ' '\n' | grep -cvx 0)" 3

# --- the tiny BART checkpoint, and the same weights as transformers has them
M=$F/bart
H=$T/hf
mkdir "$H"
cp "$F/bart_hf/config.json" "$F/bart_hf/model.safetensors" "$H/"
for f in vocab.json merges.txt tokenizer_config.json special_tokens_map.json; do
	cp "$DATA/bart/tiny_bart/$f" "$H/"
done
ok "--info on the checkpoint's directory" lc-encode -m "$M" --info
grep -q "^config	$M/model.pt (fairseq cfg.model)$" "$T/out"; _res $? "--info: the config is the checkpoint's arguments"
grep -q "^architecture	bart$" "$T/out"; _res $? "--info: BART"
fp=$(awk '$1 == "fingerprint" { print $2 }' "$T/out")
for v in args dictconfig; do
	is "$v.pt: the same model" \
		"$(lc-encode -m "$F/variants/$v.pt" --info | awk '$1 == "fingerprint" { print $2 }')" "$fp"
done
ok "-m FILE.pt" lc-encode -m "$M/model.pt" --info

cat >"$T/in.txt" <<'TXT'
The quick brown fox jumps over the lazy dog.
Hello world, this is a test of fairseq checkpoints.
Short.

Numbers 1234 and symbols $%^ in a line with some more words to read.
TXT
lc-tokenize -m "$M" -d line -f ids <"$T/in.txt" >"$T/fs.ids"
lc-tokenize -m "$H" -d line -f ids <"$T/in.txt" >"$T/hf.ids"
same "the same ids as the transformers tokenizer of the same vocabulary" "$T/fs.ids" "$T/hf.ids"
for dir in "$M" "$H"; do
	nm=$(basename "$dir")
	ok "$nm: tokenize | encode" sh -c "lc-tokenize -m '$dir' -d line <'$T/in.txt' | lc-encode -q -m '$dir' >'$T/$nm.h'"
	ok "$nm: greedy" sh -c "lc-decode -q -m '$dir' -f ids --max-new 20 <'$T/$nm.h' >'$T/$nm.greedy'"
	ok "$nm: beam search" sh -c "lc-decode -q -m '$dir' --max-new 20 -b 3 --no-repeat-ngram 2 <'$T/$nm.h' >'$T/$nm.beam'"
done
same "greedy ids as from the transformers directory" "$T/bart.greedy" "$T/hf.greedy"
same "beam summaries as from the transformers directory" "$T/bart.beam" "$T/hf.beam"
is "one summary per document" "$(wc -l <"$T/bart.beam")" 5

# --- refusals
mkdir "$T/two"
cp "$F/variants/args.pt" "$F/variants/prenorm.pt" "$T/two/"
fails 1 "two checkpoints in a directory" lc-encode -m "$T/two" --info
grep -q "2 fairseq checkpoints (args.pt, prenorm.pt)" "$T/err"; _res $? "the message lists them"
fails 1 "os.system in the pickle" lc-encode -m "$F/variants/evil_system.pt" --info
grep -q "refusing global posix.system" "$T/err"; _res $? "the message names the global"
fails 1 "builtins.eval in the pickle" lc-encode -m "$F/variants/evil_eval.pt" --info
fails 1 "pre-norm arguments" lc-encode -m "$F/variants/prenorm.pt" --info
grep -q "cfg.model.encoder_normalize_before is true" "$T/err"; _res $? "the message names the argument"
fails 1 "another block attention" lc-encode -m "$F/variants/bs_local.pt" --info
grep -q 'attention_name "bs_local"' "$T/err"; _res $? "the message names attention_name"
head -c 20000 "$M/model.pt" >"$T/cut.pt"
fails 1 "a truncated checkpoint" lc-encode -m "$T/cut.pt" --info

# --- BART-LS: the arguments say bart_ls (pooling_layers > 0)
B=$F/bartls
ok "BART-LS: --info" sh -c "lc-encode -m '$B' --info >'$T/ls.info'"
grep -q "^architecture	bart-ls$" "$T/ls.info"; _res $? "BART-LS: the architecture"
grep -q "^pooling_layers	1$" "$T/ls.info" && grep -q "^block_size	16$" "$T/ls.info"
_res $? "BART-LS: pooling_layers and block_size from the arguments"
ok "BART-LS: tokenize | encode | decode" sh -c "lc-tokenize -m '$B' -d line <'$T/in.txt' | lc-encode -q -m '$B' | lc-decode -q -m '$B' --max-new 10 >'$T/ls.sum'"
is "BART-LS: one summary per document" "$(wc -l <"$T/ls.sum")" 5
# -m FILE.pt in every program: lc-tokenize reads the tokenizer beside it
ok "BART-LS: -m model.pt throughout" sh -c "lc-tokenize -m '$B/model.pt' -d line <'$T/in.txt' | lc-encode -q -m '$B/model.pt' | lc-decode -q -m '$B/model.pt' --max-new 10 >'$T/ls.pt.sum'"
same "BART-LS: -m model.pt = -m its directory" "$T/ls.sum" "$T/ls.pt.sum"
# --info names where the decoder start and eos came from: the checkpoint
ok "lc-decode --info on a checkpoint" lc-decode -m "$DATA/fairseq/bart/model.pt" --info
grep -q '^eos_token_id	2	model.pt (fairseq ' "$T/out"; _res $? "eos from model.pt, not a config.json"

done_testing
