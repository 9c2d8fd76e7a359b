#!/bin/sh
# lc-tokenize on the inputs users have: archives and compressed files, empty
# documents, a 10 MB document, T5 extra ids, --max-len; bad models and bad
# usage give the documented exit statuses.
. tests/sh/lib.sh
S=$DATA/spm
[ -f "$S/lines.txt" ] || skip_all "no tests/data/spm"
M=$S/t5like.model
export LC_TOKENIZER=$M

# --- archives: each regular member is a document named by its path, in order
mkdir -p "$T/d"
printf 'The first document.\n' >"$T/d/one.txt"
printf 'A second, longer document about tokens.\n' >"$T/d/two.txt"
printf 'Third.\n' >"$T/d/three.txt"
(cd "$T" && tar cf - d/one.txt d/two.txt d/three.txt | gzip >three.tar.gz)
ok "a tar.gz" sh -c "lc-tokenize $T/three.tar.gz | lc-cat -o info >$T/info"
is "three documents, named and in archive order" \
	"$(awk -F '\t' '$1 == "doc" { printf "%s ", $3 }' "$T/info")" "d/one.txt d/two.txt d/three.txt "
for f in one two three; do lc-tokenize -f ids "$T/d/$f.txt"; done >"$T/plain.ids"
lc-tokenize -f ids "$T/three.tar.gz" >"$T/tgz.ids"
same "members encode as the files do" "$T/tgz.ids" "$T/plain.ids"
is "each tokens tensor names the tokenizer" \
	"$(awk -F '\t' '$1 == "tensor" { print $7 }' "$T/info" | sort -u)" \
	"$(lc-tokenize -f stream /dev/null | lc-cat -o info | awk -F '\t' '$1 == "tensor" { print $7 }')"
if need zip; then
	(cd "$T" && zip -q three.zip d/one.txt d/two.txt d/three.txt)
	lc-tokenize -f ids "$T/three.zip" >"$T/zip.ids"
	same "a zip archive" "$T/zip.ids" "$T/plain.ids"
else
	skip "a zip archive" "no zip"
fi
for c in gzip bzip2 xz zstd; do
	if need $c; then
		$c -c <"$S/lines.txt" >"$T/lines.$c"
		lc-tokenize -d line -f ids --no-eos "$T/lines.$c" >"$T/$c.ids"
		same "a $c-compressed file, split in lines" "$T/$c.ids" "$S/t5like.id.txt"
	else
		skip "$c" "no $c"
	fi
done

# --- empty documents
: >"$T/empty.txt"
ok "an empty file" sh -c "lc-tokenize -f ids $T/empty.txt >$T/e1"
is "an empty document is just </s>" "$(cat "$T/e1")" "1"
ok "an empty file, --no-eos" sh -c "lc-tokenize -f ids --no-eos $T/empty.txt >$T/e2"
is "an empty document without </s> is an empty line" "$(wc -l <"$T/e2" | tr -d ' '):$(cat "$T/e2")" "1:"
ok "empty stdin to a stream" sh -c "lc-tokenize --no-eos </dev/null | lc-cat -o info >$T/e3"
is "one document with zero tokens" "$(awk -F '\t' '$1 == "tensor" { print $6 }' "$T/e3")" "0"
printf '   \n\n\t\n' >"$T/blank.txt"
lc-tokenize -d line -f ids --no-eos "$T/blank.txt" >"$T/blank.ids"
is "whitespace lines give empty lines" "$(cat "$T/blank.ids" | tr '\n' '|')" "|||"

# --- one 10 MB document: lines.txt 40 times, encoded as a single sentence.
# The reference: SentencePiece's Python binding 0.1.97 (encode of the whole
# text, then 1), hashed; see tests/data/spm/README.
i=0; : >"$T/big.txt"
while [ $i -lt 40 ]; do cat "$S/lines.txt" >>"$T/big.txt"; i=$((i + 1)); done
ok "a 10 MB document" sh -c "lc-tokenize -q -f ids $T/big.txt >$T/big.ids"
is "one line of ids" "$(wc -l <"$T/big.ids" | tr -d ' ')" 1
is "identical to SentencePiece on the whole text (t5like)" "$(md5sum <"$T/big.ids" | cut -d' ' -f1)" "$(sed -n 's/^t5like //p' "$S/big40.md5")"
lc-tokenize -q -m $S/t5like_bytefb.model -f ids "$T/big.txt" >"$T/bigb.ids"
is "identical to SentencePiece on the whole text (t5like_bytefb)" "$(md5sum <"$T/bigb.ids" | cut -d' ' -f1)" "$(sed -n 's/^t5like_bytefb //p' "$S/big40.md5")"
ok "the 10 MB document as a stream" sh -c "lc-tokenize -q $T/big.txt | lc-cat -o ids >$T/big2.ids"
same "stream and ids agree" "$T/big2.ids" "$T/big.ids"
ok "-d line on the same text" sh -c "lc-tokenize -q -d line -f ids --no-eos $T/big.txt | head -2200 >$T/bigl.ids"
same "first lines as spm_encode" "$T/bigl.ids" "$S/t5like.id.txt"

# --- T5 extra ids (the model has no <extra_id_N> pieces: id npieces+99-N)
printf 'Fill <extra_id_0> and<extra_id_1>here <extra_id_99>\n' >"$T/x.txt"
lc-tokenize -f pieces "$T/x.txt" >"$T/x.pieces"
# the text between markers is encoded as separate sentences
printf 'Fill\nand\nhere\n' | lc-tokenize -d line -f pieces --no-eos >"$T/seg"
is "extra ids as pieces" "$(cat "$T/x.pieces")" \
	"$(sed -n 1p "$T/seg") <extra_id_0> $(sed -n 2p "$T/seg") <extra_id_1> $(sed -n 3p "$T/seg") <extra_id_99> </s>"
is "extra ids as ids" "$(lc-tokenize -f ids --no-eos "$T/x.txt" | tr ' ' '\n' | awk '$1 >= 8000' | tr '\n' ' ')" "8099 8098 8000 "
is "--no-extra-ids leaves them as text" "$(lc-tokenize -f ids --no-extra-ids "$T/x.txt" | tr ' ' '\n' | awk '$1 >= 8000' | wc -l | tr -d ' ')" 0
is "extra ids decode back to markers" "$(lc-tokenize -f ids "$T/x.txt" | lc-detokenize)" "Fill<extra_id_0> and<extra_id_1> here<extra_id_99>"
printf '<extra_id_100> <extra_id_01>\n' >"$T/nx.txt"
lc-tokenize -f ids --no-extra-ids "$T/nx.txt" >"$T/nx1"
lc-tokenize -f ids "$T/nx.txt" >"$T/nx2"
same "<extra_id_100> and <extra_id_01> are not markers" "$T/nx1" "$T/nx2"

# --- --max-len keeps the first N-1 tokens and </s>
lc-tokenize -f ids "$T/d/two.txt" >"$T/full"
lc-tokenize -f ids --max-len 4 "$T/d/two.txt" >"$T/cut"
is "--max-len 4" "$(cat "$T/cut")" "$(cut -d' ' -f1-3 "$T/full") 1"
is "--max-len 4 --no-eos" "$(lc-tokenize -f ids --no-eos --max-len 4 "$T/d/two.txt")" "$(cut -d' ' -f1-4 "$T/full")"
is "--max-len with pieces" "$(lc-tokenize -f pieces --max-len 3 "$T/d/two.txt" | wc -w | tr -d ' ')" 3
is "--max-len longer than the document" "$(lc-tokenize -f ids --max-len 1000 "$T/d/two.txt")" "$(cat "$T/full")"

# --- errors
printf 'garbage, not a model' >"$T/garbage.model"
fails 1 "a garbage model" lc-tokenize -m "$T/garbage.model" "$T/d/one.txt"
is "the message names the model" "$(grep -c "garbage.model" "$T/err")" 1
head -c 100000 $M >"$T/trunc.model"
fails 1 "a truncated model" lc-tokenize -m "$T/trunc.model" "$T/d/one.txt"
grep -q "^lc-tokenize: .*trunc.model" "$T/err"; _res $? "message: lc-tokenize: FILE: why"
fails 1 "a missing model" lc-tokenize -m "$T/nonexistent.model" "$T/d/one.txt"
fails 1 "no model anywhere" env -u LC_TOKENIZER LC_SHARE="$T/nowhere" lc-tokenize "$T/d/one.txt"
fails 1 "a missing input" lc-tokenize "$T/nonexistent.txt"
fails 2 "a bad -f" lc-tokenize -f nope "$T/d/one.txt"
fails 2 "a bad -d" lc-tokenize -d nope "$T/d/one.txt"
fails 2 "a bad --max-len" lc-tokenize --max-len 0 "$T/d/one.txt"
fails 2 "an unknown option" lc-tokenize --frobnicate
ok "--help" lc-tokenize --help
grep -q "^usage: lc-tokenize" "$T/out"; _res $? "--help prints usage on stdout"
ok "--version" lc-tokenize --version
fails 1 "detokenize: an id out of range" sh -c "echo '5 99999' | lc-detokenize"
fails 1 "detokenize: not ids" sh -c "echo '5 x' | lc-detokenize -f ids"
fails 1 "detokenize: a truncated stream" sh -c "lc-tokenize $T/d/one.txt | head -c 40 | lc-detokenize -f stream"
fails 2 "detokenize: a bad -f" lc-detokenize -f nope
ok "detokenize --help" lc-detokenize --help

done_testing
