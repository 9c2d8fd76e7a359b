#!/bin/sh
# lc-gsg-split against an independent computation: each sentence scored
# by lc-rouge (checked against rouge-score's goldens in t4*) against the
# rest of the document joined with spaces, ranked, ties to the earlier.
. tests/sh/lib.sh

DOC=$DATA/gsg/ruth-sentences.txt
M=$(wc -l <"$DOC" | tr -d ' ')

# reference_selection RATIO STEMFLAG: the selected sentences, in order.
reference_selection() {
	i=1
	while [ $i -le "$M" ]; do
		sed -n "${i}p" "$DOC" >"$T/cand"
		sed "${i}d" "$DOC" | tr '\n' ' ' | sed 's/ $//' >"$T/rest"
		f=$(lc-rouge $2 -t rouge1 -f tsv -b 1 "$T/cand" "$T/rest" | awk -F'\t' '!/^#/{print $5; exit}')
		printf '%s\t%s\n' "$i" "$f"
		i=$((i + 1))
	done | sort -t "$(printf '\t')" -k2,2gr -k1,1n -s | head -n "$(awk -v m="$M" -v r="$1" 'BEGIN{print int(r*m)}')" |
		cut -f1 | sort -n | while read -r k; do sed -n "${k}p" "$DOC"; done
}

for ratio in 0.2 0.1 0.5; do
	reference_selection $ratio "" >"$T/want.$ratio"
	lc-gsg-split -r $ratio -s ind -f text "$DOC" | sed -n '/^== target$/,/^== source$/p' | sed '1d;$d' >"$T/got.$ratio"
	same "Ind-Orig ratio $ratio matches lc-rouge's ROUGE-1 ranking" "$T/got.$ratio" "$T/want.$ratio"
done
reference_selection 0.2 -s >"$T/want.stem"
lc-gsg-split -r 0.2 --stem -f text "$DOC" | sed -n '/^== target$/,/^== source$/p' | sed '1d;$d' >"$T/got.stem"
same "Ind-Orig with stemming" "$T/got.stem" "$T/want.stem"

# Source + target is the document, in order.
lc-gsg-split -f text "$DOC" >"$T/out"
is "target has floor(0.2 M) sentences" "$(sed -n '/^== target$/,/^== source$/p' "$T/out" | grep -vc '^== ')" $((M / 5))
sed -n '/^== source$/,$p' "$T/out" | sed 1d >"$T/src"
cat "$T/src" "$T/got.0.2" | sort >"$T/all"; sort "$DOC" >"$T/doc.sorted"
same "source and target partition the document" "$T/all" "$T/doc.sorted"

# Seq: the first pick of Seq is the best Ind sentence.
lc-gsg-split -r 0.2 -s seq -f text "$DOC" >"$T/seq"
best=$(lc-gsg-split -r 0.03 -f text "$DOC" | sed -n 2p)
case $best in "=="*|"") best="(no sentence selected)" ;; esac
grep -qxF "$best" "$T/seq"; is "Seq contains the best single sentence" $? 0
is "Seq selects floor(0.2 M)" "$(sed -n '/^== target$/,/^== source$/p' "$T/seq" | grep -vc '^== ')" $((M / 5))
for mode in "-s ind" "-s seq" "-s ind --uniq" "-s seq --uniq"; do
	lc-gsg-split $mode -f text "$DOC" >"$T/a"; lc-gsg-split $mode -f text "$DOC" >"$T/b"
	same "deterministic: $mode" "$T/a" "$T/b"
done

# Edge cases: one sentence, none, alpha*M < 1, ties.
printf 'Only one sentence here.\n' >"$T/one"
lc-gsg-split -f text "$T/one" >"$T/one.out" 2>"$T/one.err"
printf '== target\n== source\nOnly one sentence here.\n' >"$T/one.want"
same "one sentence: empty target, passed through" "$T/one.out" "$T/one.want"
grep -q '1 of 1 documents too short' "$T/one.err"; is "counted in a warning" $? 0
printf 'One here. Two\000with a NUL. Three is longer than the rest. Four now. Five last.\n' >"$T/nul"
lc-gsg-split -f text "$T/nul" >"$T/nul.out" 2>/dev/null
is "text output: a NUL byte and all after it" "$(tr '\000' @ <"$T/nul.out" | grep -c 'Two@with\|Five last')" 2
printf '' | lc-gsg-split -f text >"$T/none.out" 2>/dev/null
printf '== target\n== source\n' >"$T/none.want"
same "empty document" "$T/none.out" "$T/none.want"
printf 'Same words here.\nSame words here.\nSame words here.\nSame words here.\nSame words here.\n' >"$T/ties"
lc-gsg-split -r 0.4 -f text "$T/ties" | sed -n 2,3p >"$T/ties.out"
printf 'Same words here.\nSame words here.\n' >"$T/ties.want"
same "ties: the earlier sentences" "$T/ties.out" "$T/ties.want"
lc-gsg-split -r 0.4 "$T/ties" | lc-cat -o info | grep '^doc' >"$T/ties.info"
grep -q 'sentences=5	selected=2' "$T/ties.info"; is "metadata counts" $? 0

# Mask: the source keeps a mask token in place of each selected sentence.
lc-gsg-split -r 0.2 --mask sentence -f text "$DOC" >"$T/mask"
is "mask tokens in the source" "$(grep -c '^<extra_id_0>$' "$T/mask")" $((M / 5))
is "masked source keeps M lines" "$(sed -n '/^== source$/,$p' "$T/mask" | sed 1d | wc -l | tr -d ' ')" "$M"

# Streams: text records, and several documents.
lc-gsg-split "$DOC" "$T/one" | lc-cat -o info | awk -F'\t' '$1=="tensor"{print $3, $4, $5}' >"$T/recs"
printf '%s source u8\n%s target u8\n%s source u8\n%s target u8\n' "$DOC" "$DOC" "$T/one" "$T/one" >"$T/recs.want"
same "stream: source and target per document, names kept" "$T/recs" "$T/recs.want"
lc-gsg-split -f text "$DOC" "$T/one" 2>/dev/null | grep '^== doc' >"$T/hdr"
printf '== doc %s\n== doc %s\n' "$DOC" "$T/one" >"$T/hdr.want"
same "-f text: headers when several documents" "$T/hdr" "$T/hdr.want"
if [ -f "${LC_SHARE:-share}/spiece.model" ]; then
	lc-gsg-split -m "${LC_SHARE:-share}/spiece.model" "$DOC" | lc-cat -o info | awk -F'\t' '$1=="tensor"{print $4, $5}' >"$T/tok"
	printf 'source i32\ntarget i32\n' >"$T/tok.want"
	same "-m: token pairs" "$T/tok" "$T/tok.want"
else
	skip "-m: token pairs" "no share/spiece.model yet"
fi
fails 2 "bad ratio" lc-gsg-split -r 1.5
fails 2 "bad strategy" lc-gsg-split -s best
fails 1 "missing file" lc-gsg-split /nonexistent
done_testing
