#!/bin/sh
# lc-rouge as a user runs it: input kinds, formats, signature, errors.
. tests/sh/lib.sh
need lc-rouge || skip_all "lc-rouge not built"
P=$DATA/rouge/pairs

ok "--help" lc-rouge --help
grep -q '^usage: lc-rouge' "$T/out"; _res $? "--help prints usage on stdout"
ok "--version" lc-rouge --version
fails 2 "no arguments" lc-rouge
fails 2 "one argument" lc-rouge "$P/0000.cand"
fails 2 "unknown type" lc-rouge -t rouge10 "$P/0000.cand" "$P/0000.ref"
grep -q 'lc-rouge: .*rouge10' "$T/err"; _res $? "unknown type named"
fails 2 "bad format" lc-rouge -f xml "$P/0000.cand" "$P/0000.ref"
fails 2 "bad seed" lc-rouge --seed -1 "$P/0000.cand" "$P/0000.ref"
fails 2 "stdin twice" lc-rouge - -
fails 1 "missing file" lc-rouge "$T/nope" "$P/0000.ref"

# one pair: the contract's four types, and the signature line
ok "one pair tsv" lc-rouge -t rouge1,rouge2,rougeL,rougeLsum -s -f tsv "$P/0003.cand" "$P/0003.ref"
is "signature first" "$(head -1 "$T/out" | cut -c1-11)" "# lc-rouge|"
grep -q 'types=rouge1,rouge2,rougeL,rougeLsum|stem=porter-nltk|sentences=newline|.*samples=1000|seed=0|ci=0.95|version=' "$T/out"
_res $? "signature carries the settings"
grep -v '^#' "$T/out" | head -4 | cut -f2- >"$T/got"
awk -F'\t' '$1 == "0003" && $2 == 1 { print $3 "\t" $4 "\t" $5 "\t" $6 }' "$DATA/rouge/scores.tsv" >"$T/want"
same "one pair equals the oracle" "$T/got" "$T/want"

# - is standard input
lc-rouge -b 0 -f tsv - "$P/0003.ref" <"$P/0003.cand" | grep -v '^#' | cut -f2- >"$T/got2"
lc-rouge -b 0 -f tsv "$P/0003.cand" "$P/0003.ref" | grep -v '^#' | cut -f2- >"$T/want2"
same "stdin as candidates" "$T/got2" "$T/want2"

# -d line: one document per line; mismatched counts are refused
printf 'the cat sat\nthe dog ran\n' >"$T/c.txt"
printf 'a cat sat\nthe dog ran away\n' >"$T/r.txt"
printf 'a cat sat\n' >"$T/r1.txt"
(cd "$T" && lc-rouge -d line -b 0 -f tsv -t rouge1 c.txt r.txt) >"$T/out"
_res $? "-d line"
is "two documents" "$(grep -vc '^#' "$T/out")" 2
is "second document" "$(sed -n 3p "$T/out")" "$(printf 'c.txt:2\trouge1\t1\t0.75\t0.8571428571428571')"
fails 1 "fewer references" lc-rouge -d line -t rouge1 "$T/c.txt" "$T/r1.txt"
grep -q 'lc-rouge: .*r1.txt: has 1 document, but' "$T/err"; _res $? "count mismatch names the input"
fails 1 "more references" lc-rouge -d line -t rouge1 "$T/r1.txt" "$T/c.txt"

# a directory of references pairs by file name, whatever the candidates'
# order or kind (a directory, an archive's members, a stream's documents)
mkdir "$T/cd" "$T/rd"
echo "alpha beta" >"$T/cd/a"; echo "alpha" >"$T/rd/a"
echo "gamma" >"$T/cd/b"; echo "gamma" >"$T/rd/c"
fails 1 "a candidate with no file of its name" lc-rouge "$T/cd" "$T/rd"
grep -q 'rd: no file "b" for document 2 "b" of .*cd' "$T/err"; _res $? "the missing file named"
mkdir "$T/cn" "$T/rn"
printf 'one two three\n' >"$T/cn/x.txt"; printf 'one two three\n' >"$T/rn/x.txt"
printf 'four five\n' >"$T/cn/y.txt"; printf 'four five\n' >"$T/rn/y.txt"
printf 'six\n' >"$T/rn/z.txt"
if need lc-cat; then
	lc-cat -i text "$T/cn/y.txt" "$T/cn/x.txt" >"$T/yx.lc"
	(cd "$T" && tar cf yx.tar cn/y.txt cn/x.txt)
	for in in yx.lc yx.tar; do
		ok "$in: out of order, --subset" lc-rouge --subset -b 0 -f tsv -t rouge1 "$T/$in" "$T/rn/"
		is "$in: each takes its own file" "$(grep -v '^#' "$T/out" | cut -f1,3- | sed "s|$T/||")" \
			"$(printf 'cn/y.txt\t1\t1\t1\ncn/x.txt\t1\t1\t1')"
	done
	fails 1 "a file no candidate takes" lc-rouge -b 0 -f tsv -t rouge1 "$T/yx.lc" "$T/rn"
	grep -q 'rn/z.txt: no document of .*yx.lc is named "z.txt" (1 file without one; --subset' \
		"$T/err"; _res $? "the untaken file named"
	mkdir "$T/cn/s"; cp "$T/cn/x.txt" "$T/cn/s/x.txt"
	lc-cat -i text "$T/cn/x.txt" "$T/cn/s/x.txt" >"$T/xx.lc"
	fails 1 "two documents of one base name" lc-rouge --subset -b 0 "$T/xx.lc" "$T/rn"
	grep -q 'document 2 ".*cn/s/x.txt": the file "x.txt" of .*rn was the reference of an earlier' \
		"$T/err"; _res $? "the second one named"
else
	skip "a stream and an archive against a directory" "no lc-cat"
fi
fails 2 "--subset without a directory or --jsonl" lc-rouge --subset "$T/cn/x.txt" "$T/rn/x.txt"

# lc streams of text records
if need lc-cat; then
	lc-cat -i text -d line "$T/c.txt" >"$T/c.lc" && lc-cat -i text -d line "$T/r.txt" >"$T/r.lc"
	ok "lc stream input" lc-rouge -b 0 -f tsv -t rouge1 "$T/c.lc" "$T/r.lc"
	grep -v '^#' "$T/out" | cut -f2- >"$T/s1"
	lc-rouge -d line -b 0 -f tsv -t rouge1 "$T/c.txt" "$T/r.txt" | grep -v '^#' | cut -f2- >"$T/s2"
	same "stream and text give the same scores" "$T/s1" "$T/s2"
else
	skip "lc stream input" "no lc-cat"
fi

# empty, punctuation-only and non-ASCII summaries
: >"$T/empty"
printf '... !!! ---\n;;' >"$T/punct"
ok "empty candidate" lc-rouge -b 0 -f tsv -t rouge1,rougeL,rougeLsum "$T/empty" "$P/0003.ref"
is "empty scores 0" "$(grep -v '^#' "$T/out" | cut -f3- | sort -u)" "$(printf '0\t0\t0')"
ok "punctuation candidate" lc-rouge -b 0 -f tsv -t rouge2,rougeLsum "$T/punct" "$T/punct"
is "punctuation scores 0" "$(grep -v '^#' "$T/out" | cut -f3- | sort -u)" "$(printf '0\t0\t0')"
printf '\304\260stanbul caf\303\251 \342\204\252elvin' >"$T/u1"
printf 'i stanbul caf kelvin' >"$T/u2"
ok "non-ASCII" lc-rouge -b 0 -f tsv -t rouge1 "$T/u1" "$T/u2"
is "U+0130 and U+212A lower to ASCII, accents separate" "$(grep -v '^#' "$T/out" | cut -f3-)" "$(printf '1\t1\t1')"

# --split-sentences: rougeLsum on text without newlines
printf 'Beta is. Alpha is.' >"$T/s.c"
printf 'alpha beta' >"$T/s.r"
ok "split sentences" lc-rouge --split-sentences -b 0 -f tsv -t rougeLsum "$T/s.c" "$T/s.r"
is "Lsum over split sentences: union of both LCS" "$(grep -v '^#' "$T/out" | cut -f3-)" \
	"$(printf '0.5\t1\t0.66666666666666663')"
grep -q 'sentences=lc-sentence' "$T/out"; _res $? "signature says lc-sentence"
ok "newline sentences" lc-rouge -b 0 -f tsv -t rougeLsum "$T/s.c" "$T/s.r"
is "Lsum over one line" "$(grep -v '^#' "$T/out" | cut -f3-)" \
	"$(printf '0.25\t0.5\t0.33333333333333331')"

# table and json
ok "table" lc-rouge "$P/0003.cand" "$P/0003.ref"
grep -q '^signature: lc-rouge|' "$T/out"; _res $? "table has the signature"
grep -q '^rougeLsum ' "$T/out"; _res $? "table has a row per type"
ok "json" lc-rouge -f json -t rouge1,rouge2 "$T/cd" "$T/cd"
if [ -x /usr/bin/python3 ]; then
	/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["signature"].startswith("lc-rouge|types=rouge1,rouge2|")
assert [d["name"] for d in j["documents"]] == ["a", "b"]
assert j["documents"][0]["scores"]["rouge1"] == {"P": 1.0, "R": 1.0, "F": 1.0}
assert j["aggregate"]["rouge2"]["mid"]["F"] == 0.5
' "$T/out"
	_res $? "json is valid and complete"
else
	skip "json is valid and complete" "no python3"
fi

done_testing
