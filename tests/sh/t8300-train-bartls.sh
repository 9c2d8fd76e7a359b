#!/bin/sh
# lc-train on BART-LS: fine-tuning a BART-LS converted from the oracle's
# tiny BART (lc-convert --to bart_ls) and a fairseq BART-LS checkpoint
# (-m FILE.pt, or its directory); the loss goes down, checkpoints are lc
# BART-LS directories (config.json with model_type bart_ls, transformers'
# tensor names, the tokenizer's files: fairseq's dict.txt, encoder.json,
# vocab.bpe for a fairseq model) that lc-encode, lc-tokenize and lc-decode
# load, a resumed run ends with the bytes of an uninterrupted one, and the
# span-corruption flow (lc-tokenize | lc-noise | lc-train) runs when the
# model has rows for the sentinels and is refused clearly when not.
. tests/sh/lib.sh
need lc-train || skip_all "lc-train is not built"
BART=$DATA/bart/tiny_bart
FS=$DATA/fairseq/bartls
[ -f "$BART/model.safetensors" ] || skip_all "no tests/data/bart/tiny_bart"
[ -f "$FS/model.pt" ] || skip_all "no tests/data/fairseq/bartls"

# BART-LS from the tiny BART: block 16, the top layer pooled
ok "lc-convert --to bart_ls" lc-convert -q --to bart_ls -n 1024 --block-size 16 \
	--pooling-layers 1 "$BART" "$T/ls"
# pairs: the verses of Ruth, ten per document, GSG-split with its tokenizer
awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
	"${LC_SHARE:-share}/samples/sample.txt" >"$T/ruth.txt"
ok "pairs from lc-gsg-split -m BART-LS" sh -c "lc-cat -i text -d blank '$T/ruth.txt' |
	lc-gsg-split -r 0.3 -m '$T/ls' >'$T/pairs.lc'"

ok "fine-tunes the converted BART-LS 3 steps" lc-train -m "$T/ls" -o "$T/m" --steps 3 \
	--batch-tokens 800 --holdout 2 --holdout-out "$T/held" -j 2 -q "$T/pairs.lc"
for f in config.json model.safetensors vocab.json merges.txt trainer_state.json loss.tsv; do
	[ -s "$T/m/$f" ]; _res $? "the checkpoint has $f"
done
ok "lc-encode loads the checkpoint" lc-encode -m "$T/m" --info
grep -q '^architecture.bart-ls$' "$T/out"; _res $? "as BART-LS"
grep -q '^pooling_layers.1$' "$T/out"; _res $? "with its pooled layer"
ok "lc-encode | lc-decode with the checkpoint" sh -c "lc-encode -q -m '$T/m' '$T/held.src.lc' |
	lc-decode -q -m '$T/m' -f ids --max-new 6 >'$T/ids'"
is "a summary per held-out document" "$(wc -l <"$T/ids" | tr -d ' ')" 2

# the loss goes down on a small set seen whole at every step
ok "20 steps, the whole set per step" lc-train -m "$T/ls" -o "$T/d" --steps 20 --lr 1e-2 \
	--schedule constant --batch-tokens 100000 --no-rouge -j 2 -q "$T/pairs.lc"
is "the loss falls by more than a third" "$(awk -F'\t' 'NR == 2 { a = $4 } NR == 21 { b = $4 }
	END { print (b < a * 2 / 3) ? "yes" : a " -> " b }' "$T/d/loss.tsv")" yes

# resuming gives the bytes of an uninterrupted run (dropout on: the masks too)
train() {   # train MODEL OUTDIR STEPS
	lc-train -m "$1" -o "$2" --steps "$3" --save-every 2 --batch-tokens 800 --dropout 0.1 \
		--max-src 250 --max-tgt 120 --no-rouge -j 2 -q "$T/pairs.lc"
}
ok "4 steps" train "$T/ls" "$T/ref" 4
ok "2 steps" train "$T/ls" "$T/re" 2
ok "resumed to 4" train "$T/ls" "$T/re" 4
grep -q '"step": 4' "$T/re/trainer_state.json"; _res $? "trainer_state.json says step 4"
same "resumed weights are the uninterrupted run's" "$T/re/model.safetensors" "$T/ref/model.safetensors"
same "and so is the optimizer state" "$T/re/optimizer.safetensors" "$T/ref/optimizer.safetensors"
if cmp -s "$T/ref/model.safetensors" "$T/ls/model.safetensors"; then r=1; else r=0; fi
_res $r "the weights moved"

# a fairseq checkpoint (256 source positions): -m FILE.pt
ok "fine-tunes the fairseq BART-LS 4 steps (-m model.pt)" train "$FS/model.pt" "$T/fref" 4
for f in config.json model.safetensors dict.txt encoder.json vocab.bpe; do
	[ -s "$T/fref/$f" ]; _res $? "the checkpoint has $f"
done
for f in dict.txt encoder.json vocab.bpe; do
	same "the checkpoint's $f is the model's" "$T/fref/$f" "$FS/$f"
done
grep -q '"model_type": "bart_ls"' "$T/fref/config.json"; _res $? "config.json says bart_ls"
ok "lc-encode loads it" lc-encode -m "$T/fref" --info
grep -q '^architecture.bart-ls$' "$T/out"; _res $? "as BART-LS"
grep -q '^max_decoder_position_embeddings.128$' "$T/out"; _res $? "with the decoder's own positions"
printf 'Ruth said, Intreat me not to leave thee.\n' >"$T/line.txt"
ok "lc-tokenize with the fairseq directory" sh -c "lc-cat -i text '$T/line.txt' |
	lc-tokenize -m '$FS' | lc-cat -o ids >'$T/ids.fs'"
ok "lc-tokenize with the checkpoint" sh -c "lc-cat -i text '$T/line.txt' |
	lc-tokenize -m '$T/fref' | lc-cat -o ids >'$T/ids.ck'"
same "the same ids" "$T/ids.ck" "$T/ids.fs"
ok "2 steps from the directory of the .pt" train "$FS" "$T/fre" 2
ok "resumed to 4" train "$FS/model.pt" "$T/fre" 4
same "resumed weights are the uninterrupted run's" "$T/fre/model.safetensors" "$T/fref/model.safetensors"
ok "lc-decode runs the fairseq-born checkpoint" sh -c "lc-encode -q --truncate -m '$T/fref' '$T/held.src.lc' |
	lc-decode -q -m '$T/fref' -f ids --max-new 6 >'$T/ids'"
is "a summary per held-out document" "$(wc -l <"$T/ids" | tr -d ' ')" 2

# span corruption: sentinels after <mask> need rows of their own
ok "lc-convert --to bart_ls --vocab-size 1100 (room for sentinels)" lc-convert -q --to bart_ls \
	-n 1024 --block-size 16 --pooling-layers 1 --vocab-size 1100 "$BART" "$T/lsv"
ok "lc-tokenize | lc-noise -m" sh -c "lc-cat -i text -d blank '$T/ruth.txt' |
	lc-tokenize -m '$T/lsv' | lc-noise -m '$T/lsv' >'$T/noised.lc'"
ok "lc-train on the noised pairs" lc-train -m "$T/lsv" -o "$T/pt" --steps 3 --batch-tokens 2000 \
	--no-rouge -j 2 -q "$T/noised.lc"
[ -s "$T/pt/model.safetensors" ]; _res $? "a checkpoint"
ok "the same pairs from a model without the room" sh -c "lc-cat -i text -d blank '$T/ruth.txt' |
	lc-tokenize -m '$T/ls' | lc-noise -m '$T/ls' >'$T/noised1.lc'"
fails 1 "are refused by lc-train" lc-train -m "$T/ls" -o "$T/pt1" --steps 1 -q "$T/noised1.lc"
grep -q 'ruth.txt:1: source token [0-9]* (id 1000) is outside the model.s vocabulary of 1000 (pairs of another model.s tokenizer? span-corruption sentinels need rows of their own: lc-convert --vocab-size)' "$T/err"
_res $? "naming the pair, the id and the cure"
[ ! -e "$T/pt1/loss.tsv" ]; _res $? "(no step was taken)"
# fine-tuning a fairseq directory in place that fails before training
# leaves it a fairseq directory (no config.json of lc's beside model.pt)
cp -r "$FS" "$T/fsd"
head -c 100 "$T/noised1.lc" >"$T/cut.lc"
fails 1 "in place, failing" lc-train -m "$T/fsd" -o "$T/fsd" --steps 1 -q "$T/cut.lc"
ok "still loads" lc-encode -m "$T/fsd" --info
fails 1 "its model.pt, --restart, failing" lc-train -m "$T/fsd/model.pt" -o "$T/fsd" --restart \
	--steps 1 -q "$T/cut.lc"
ok "still loads" lc-encode -m "$T/fsd/model.pt" --info
done_testing
