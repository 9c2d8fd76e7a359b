#!/bin/sh
# train-tokenizer.sh OUT.model: retrains lc's default tokenizer (share/spiece.model)
# with Debian's spm_train on freely licensed English text installed by Debian
# packages (see share/README for the sources and their licences):
#   bible-kjv-text  the King James Bible (public domain), read with `bible`
#   wordnet-base    the WordNet 3.0 glosses (WordNet 3.0 licence)
#   python3.11-doc  the reStructuredText sources of the Python documentation (PSF licence)
# The layout is T5's: a 32000-piece unigram model, nmt_nfkc normalization,
# pad 0, eos 1, unk 2, no bos; the 100 <extra_id_N> ids come after the
# pieces and are handled by lc-tokenize. Same text, same model.
set -eu
out=${1:-share/spiece.model}
PYDOC=${PYDOC:-/usr/share/doc/python3.11/html/_sources}
WORDNET=${WORDNET:-/usr/share/wordnet}
for c in spm_train bible; do
	command -v $c >/dev/null 2>&1 || {
		echo "train-tokenizer: $c not found; apt-get install sentencepiece bible-kjv bible-kjv-text wordnet-base python3.11-doc" >&2
		exit 1; }
done
[ -d "$PYDOC" ] || { echo "train-tokenizer: $PYDOC: missing (apt-get install python3.11-doc)" >&2; exit 1; }
[ -f "$WORDNET/data.noun" ] || { echo "train-tokenizer: $WORDNET/data.noun: missing (apt-get install wordnet-base)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lc-tok.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export LC_ALL=C

# one verse per line, without the "Ge1:1 " reference
bible -f 'gen1:1-rev22:21' | sed 's/^[^ ]*[0-9]:[0-9]* //' >"$tmp/corpus.txt"
# WordNet: the gloss of every synset (after " | "), licence header skipped
for pos in noun verb adj adv; do
	awk -F ' [|] ' '!/^  / && NF > 1 { print $2 }' "$WORDNET/data.$pos"
done >>"$tmp/corpus.txt"
# Python documentation: paragraphs of the reST sources, one per line
find "$PYDOC" -name '*.txt' | sort | while read -r f; do cat "$f"; echo; done |
	awk 'function flush() { if (p != "" && length(p) < 4000) print p; p = "" }
	     /^[ \t]*$/ { flush(); next }
	     { sub(/^[ \t]+/, ""); sub(/[ \t\r]+$/, ""); p = p == "" ? $0 : p " " $0 }
	     END { flush() }' >>"$tmp/corpus.txt"
echo "train-tokenizer: $(wc -l <"$tmp/corpus.txt") lines, $(wc -c <"$tmp/corpus.txt") bytes" >&2

# relative names: the trainer records them in the model, which then
# comes out byte-identical from one run to the next
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
cd "$tmp"
spm_train --input=corpus.txt --model_prefix=spiece \
	--model_type=unigram --vocab_size=32000 --character_coverage=0.9995 \
	--normalization_rule_name=nmt_nfkc \
	--pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1 \
	--input_sentence_size=0 --num_threads="${LC_THREADS:-2}" \
	>train.log 2>&1 || { tail -20 train.log >&2; exit 1; }
cp spiece.model "$out"
echo "train-tokenizer: wrote $out" >&2
