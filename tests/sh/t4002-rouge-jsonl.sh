#!/bin/sh
# lc-rouge --jsonl (candidates and references in JSON Lines, paired by id)
# and -f csv (rouge-score's own CSV layout).
#
# The expected CSV files in tests/data/rouge_csv/ were NOT made by lc-rouge:
# tests/gen/rouge_csv_ref.py takes the numbers rouge-score 0.1.2 computed
# (tests/data/rouge/scores.tsv and bootstrap.tsv: 1000 samples, seeds 0 and
# 123, types aggregated in the order rouge1,rouge2,rougeL,rougeLsum) and
# writes them the way rouge-score's io.py does (_write_aggregates_to_csv:
# "score_type,low,mid,high", R/P/F lines per type in sorted() order, "%f";
# _write_scores_to_csv: "id,{t}-P,{t}-R,{t}-F..." and a 0-based "%d" per
# document). `python3 tests/gen/rouge_csv_ref.py expected tests/data/rouge_csv`
# remakes them; below, when python3 is present, that is checked too. The
# JSON Lines inputs there are the first 37 oracle pairs, candidates in a
# scrambled order (cand.jsonl), references in id order (ref.jsonl).
. tests/sh/lib.sh
need lc-rouge || skip_all "lc-rouge not built"
P=$DATA/rouge/pairs
D=$DATA/rouge_csv
ALL=rouge1,rouge2,rougeL,rougeLsum
export LC_ALL=C

ok "--help" lc-rouge --help
for o in --jsonl --id --cand --ref --subset csv; do
	grep -q -e "$o" "$T/out"; _res $? "--help names $o"
done

# the first n oracle pairs as cand/ and ref/ directories, paired by name
mkpairs() {
	mkdir -p "$T/c$1" "$T/r$1"
	i=0
	while [ $i -lt $1 ]; do
		id=$(printf %04d $i)
		cp "$P/$id.cand" "$T/c$1/$id"
		cp "$P/$id.ref" "$T/r$1/$id"
		i=$((i + 1))
	done
}
mkpairs 37
mkpairs 300
mkpairs 1

# --- -f csv against rouge-score's layout of the oracle's numbers ---
ok "csv aggregate, n=37 seed=0" lc-rouge -f csv -t $ALL "$T/c37" "$T/r37"
same "aggregate csv as rouge-score writes it (n=37, seed 0)" "$T/out" "$D/agg_n37_seed0_stem0.csv"
ok "csv aggregate, n=300 seed=123 stem" lc-rouge -s -f csv -t $ALL --seed 123 "$T/c300" "$T/r300"
same "aggregate csv as rouge-score writes it (n=300, seed 123, stem)" "$T/out" "$D/agg_n300_seed123_stem1.csv"
# with one document no random number is drawn, so any type order gives the
# oracle's numbers: the rows still come in sorted() order
ok "csv aggregate, types in another order" lc-rouge -s -f csv -t rougeLsum,rouge2,rougeL,rouge1 "$T/c1" "$T/r1"
same "aggregate csv rows in sorted type order" "$T/out" "$D/agg_n1_seed0_stem1.csv"
ok "csv per document" lc-rouge -s -b 0 -f csv -t rougeL,rouge2,rougeLsum,rouge1 "$T/c37" "$T/r37"
same "per-document csv as rouge-score writes it (0-based ids)" "$T/out" "$D/docs_n37_stem1.csv"
ok "csv per document, --jsonl" lc-rouge -s -b 0 -f csv -t $ALL --ref abstract "$D/cand.jsonl" "$D/ref.jsonl"
same "per-document csv names documents by id, in candidate order" "$T/out" "$D/docs_jsonl37_stem1.csv"

# --- JSON Lines pair by id: the scores of the plain files, bit for bit ---
for stem in 0 1; do
	s=; [ $stem = 1 ] && s=-s
	lc-rouge $s -b 0 -f tsv -t $ALL "$T/c37" "$T/r37" | grep -v '^#' | sort >"$T/plain.$stem"
	ok "jsonl, scrambled candidates, stem=$stem" lc-rouge $s -b 0 -f tsv -t $ALL --ref abstract \
		"$D/cand.jsonl" "$D/ref.jsonl"
	grep -v '^#' "$T/out" | sort >"$T/jsonl.$stem"
	same "jsonl pairs by id: the plain files' scores, stem=$stem" "$T/jsonl.$stem" "$T/plain.$stem"
done
is "37 documents x 4 types" "$(wc -l <"$T/jsonl.1" | tr -d ' ')" 148
head -3 "$D/cand.jsonl" | cut -c1-13 >"$T/want"
grep -v '^#' "$T/out" | awk -F'\t' 'NR % 4 == 1 { print "{\"id\": \"" $1 "\"" }' | head -3 >"$T/got"
same "documents in the candidates' order" "$T/got" "$T/want"

# in the plain files' order, the bootstrap too is the same
sort "$D/cand.jsonl" >"$T/cand.sorted"
lc-rouge -s -f tsv -t $ALL "$T/c37" "$T/r37" >"$T/plain.agg"
ok "jsonl aggregate" lc-rouge -s -f tsv -t $ALL --ref abstract "$T/cand.sorted" "$D/ref.jsonl"
same "jsonl in the same order: identical tsv, aggregate and signature" "$T/out" "$T/plain.agg"
ok "jsonl from stdin" sh -c "lc-rouge -s -f tsv -t $ALL --jsonl --ref abstract - '$D/ref.jsonl' <'$T/cand.sorted'"
same "stdin gives the same" "$T/out" "$T/plain.agg"

# integer ids: 7 is the id "7" (the string "0007" is another id)
sed -E 's/^\{"id": "0*([0-9]+)"/{"id": \1/' "$D/cand.jsonl" >"$T/cand.int"
sed -E 's/^\{"id": "0*([0-9]+)"/{"id": "\1"/' "$D/ref.jsonl" >"$T/ref.str"
sed -E 's/^\{"id": "0*([0-9]+)"/{"id": \1/' "$D/ref.jsonl" >"$T/ref.int"
grep -q '^{"id": 5, ' "$T/cand.int"; _res $? "integer ids made"
ok "integer ids on both sides" lc-rouge -s -b 0 -f tsv -t $ALL --ref abstract "$T/cand.int" "$T/ref.int"
grep -v '^#' "$T/out" | cut -f2- >"$T/got"
lc-rouge -s -b 0 -f tsv -t $ALL --ref abstract "$D/cand.jsonl" "$D/ref.jsonl" | grep -v '^#' | cut -f2- >"$T/want"
same "integer ids: the same scores" "$T/got" "$T/want"
is "named by the integer" "$(grep -v '^#' "$T/out" | head -1 | cut -f1)" 5
ok "integer candidates, string references" lc-rouge -s -b 0 -f tsv -t $ALL --ref abstract "$T/cand.int" "$T/ref.str"
grep -v '^#' "$T/out" | cut -f2- >"$T/got"
same "7 and \"7\" pair" "$T/got" "$T/want"
fails 1 "\"0005\" is not 5" lc-rouge -b 0 --ref abstract "$T/cand.int" "$D/ref.jsonl"
grep -q "cand.int:1: id \"5\" has no reference in .*ref.jsonl" "$T/err"; _res $? "no reference: file:line and id"

# one input holding both texts
sed 's/"summary": /"prediction": /' "$D/cand.jsonl" >"$T/pred.jsonl"
awk 'NR == FNR { ref[substr($0, 1, 14)] = $0; next }
     { k = substr($0, 1, 14); r = ref[k]; sub(/^\{"id": "[0-9]*", /, "", r); sub(/\}$/, ", ", $0); print $0 r }' \
	"$D/ref.jsonl" "$T/pred.jsonl" >"$T/both.jsonl"
grep -q '"prediction": .*"abstract": ' "$T/both.jsonl"; _res $? "both.jsonl made"
ok "one input with both fields" lc-rouge -s -b 0 -f tsv -t $ALL --cand prediction --ref abstract "$T/both.jsonl"
grep -v '^#' "$T/out" | sort >"$T/got"
same "one input: the same scores" "$T/got" "$T/jsonl.1"
ok "--pred is --cand" lc-rouge -s -b 0 -f tsv -t $ALL --pred prediction --ref abstract "$T/both.jsonl"
fails 2 "one input needs two fields" lc-rouge --jsonl "$T/both.jsonl"
fails 2 "one input, --subset" lc-rouge --subset --cand prediction --ref abstract "$T/both.jsonl"

# several reference inputs: multi-reference scoring, each input paired by id
sed 's/"summary": /"abstract": /' "$D/cand.jsonl" >"$T/ref2.jsonl"
ok "two reference inputs" lc-rouge -b 0 -f tsv -t $ALL --ref abstract "$T/cand.sorted" "$D/ref.jsonl" "$T/ref2.jsonl"
lc-rouge -b 0 -f tsv -t $ALL "$T/c37" "$T/r37" "$T/c37" >"$T/want"
same "multi-reference: the plain files' scores" "$T/out" "$T/want"

# blank lines, CRLF and spaces around a line; an lc stream or a compressed file as input
printf '\357\273\277{"id": 1, "summary": "the cat sat"}\r\n\n  \t\r\n{"id": 2, "summary": "the dog ran"}  \n' >"$T/c.jsonl"
printf '{"id": "2", "summary": "the dog ran away"}\n\n{"id": "1", "summary": "a cat sat"}' >"$T/r.jsonl"
printf 'the cat sat\nthe dog ran\n' >"$T/c.txt"
printf 'a cat sat\nthe dog ran away\n' >"$T/r.txt"
lc-rouge -d line -b 0 -f tsv "$T/c.txt" "$T/r.txt" | grep -v '^#' | cut -f2- >"$T/want"
ok "blank lines, CRLF, a byte order mark" lc-rouge -b 0 -f tsv --jsonl "$T/c.jsonl" "$T/r.jsonl"
grep -v '^#' "$T/out" | cut -f2- >"$T/got"
same "blank lines skipped, no final newline needed" "$T/got" "$T/want"
if need gzip; then
	gzip -c "$T/r.jsonl" >"$T/r.jsonl.gz"
	ok "compressed references" lc-rouge -b 0 -f tsv --jsonl "$T/c.jsonl" "$T/r.jsonl.gz"
	grep -v '^#' "$T/out" | cut -f2- >"$T/got"
	same "gzip: the same scores" "$T/got" "$T/want"
else
	skip "compressed references" "no gzip"
fi
if need lc-cat; then
	# lc-cat names the documents of a directory by file name: the ids
	lc-cat -i text "$T/c37" >"$T/c37.lc"
	ok "lc stream candidates" lc-rouge -s -b 0 -f tsv -t $ALL --ref abstract "$T/c37.lc" "$D/ref.jsonl"
	lc-rouge -s -b 0 -f tsv -t $ALL "$T/c37" "$T/r37" >"$T/want"
	same "a stream pairs by document name" "$T/out" "$T/want"
	ok "lc stream from stdin" sh -c "lc-cat -i text '$T/c37' | lc-rouge -s -b 0 -f tsv -t $ALL --ref abstract - '$D/ref.jsonl'"
	same "stdin stream pairs by document name" "$T/out" "$T/want"
	fails 1 "a stream has one text" lc-rouge --cand a --ref b "$T/c37.lc"
	grep -q 'c37.lc: document "0000": an lc stream holds one text' "$T/err"; _res $? "one text: named"
else
	skip "lc stream candidates" "no lc-cat"
fi

# the pipeline: a data set's articles summarized, scored against its
# abstracts by id, from lc-decode's stream and from its JSON Lines
if need lc-tokenize && need lc-encode && need lc-decode &&
	lc-tokenize --help 2>/dev/null | grep -q -e --jsonl &&
	lc-decode --help 2>/dev/null | grep -q 'format jsonl'; then
	printf '%s\n' \
		'{"id": "doc-a", "article": "In the beginning God created the heaven and the earth.", "abstract": "God created the earth."}' \
		'{"id": 17, "article": "And God said, Let there be light: and there was light.", "abstract": "there was light"}' \
		>"$T/ds.jsonl"
	ok "tokenize and encode a data set by id" sh -c "lc-tokenize -q --jsonl --text article --id id '$T/ds.jsonl' | lc-encode -q >'$T/h.lc'"
	ok "decode to a stream" sh -c "lc-decode -q -f stream --max-new 8 '$T/h.lc' >'$T/dec.lc'"
	ok "decode to JSON Lines" sh -c "lc-decode -q -f jsonl --max-new 8 '$T/h.lc' >'$T/dec.jsonl'"
	ok "score the stream by id" lc-rouge -b 0 -f tsv --ref abstract "$T/dec.lc" "$T/ds.jsonl"
	mv "$T/out" "$T/s1"
	ok "score the JSON Lines by id" lc-rouge -b 0 -f tsv --ref abstract "$T/dec.jsonl" "$T/ds.jsonl"
	same "stream and JSON Lines: the same scores" "$T/out" "$T/s1"
	is "named by the data set's ids" "$(grep -v '^#' "$T/out" | cut -f1 | uniq | tr '\n' ' ')" "doc-a 17 "
else
	skip "the pipeline by id" "no lc-tokenize --jsonl or lc-decode -f jsonl"
fi

# references without a candidate: an error, or left out with --subset
head -20 "$D/cand.jsonl" >"$T/cand20"
fails 1 "references without a candidate" lc-rouge -b 0 --ref abstract "$T/cand20" "$D/ref.jsonl"
grep -q 'ref.jsonl:1: id "0000" has no candidate in .*cand20 (17 references without one; --subset' "$T/err"
_res $? "unpaired reference: file:line, id, count"
for f in csv tsv; do
	fails 1 "-f $f, references without a candidate" lc-rouge -b 0 -f $f --ref abstract "$T/cand20" "$D/ref.jsonl"
	is "-f $f: no rows that look like a whole corpus's" "$(wc -c <"$T/out" | tr -d ' ')" 0
done
{ head -3 "$D/cand.jsonl"; echo '{"id": "x", "summary": '; } >"$T/cand.bad"
fails 1 "-f csv, a broken candidate line" lc-rouge -b 0 -f csv --subset --ref abstract "$T/cand.bad" "$D/ref.jsonl"
is "-f csv: nothing written" "$(wc -c <"$T/out" | tr -d ' ')" 0
ok "--subset" lc-rouge -s -b 0 -f tsv -t $ALL --subset --ref abstract "$T/cand20" "$D/ref.jsonl"
grep -v '^#' "$T/out" | sort >"$T/got"
cut -c9-12 "$T/cand20" | awk -F'\t' 'NR == FNR { keep[$1] = 1; next } $1 in keep' - "$T/plain.1" | sort >"$T/want"
same "--subset scores the candidates only" "$T/got" "$T/want"

# --- bad lines: each an error naming the file and line ---
printf '{"id": "a", "summary": "x"}\n{"id": "b", "summary": "y"}\n{"id": "c", "summary": "z"}\n' >"$T/r3"
bad() {   # bad NAME LINE2 PATTERN: a candidate file whose line 2 is LINE2
	printf '{"id": "a", "summary": "x"}\n%s\n' "$2" >"$T/bad.jsonl"
	fails 1 "$1" lc-rouge --subset -b 0 --jsonl "$T/bad.jsonl" "$T/r3"
	grep -q "^lc-rouge: .*bad.jsonl:2: $3" "$T/err"; _res $? "$1: file:line and why"
}
bad "invalid JSON" '{"id": "b", "summary": "y"' 'invalid JSON'
bad "trailing garbage" '{"id": "b", "summary": "y"} x' 'invalid JSON'
bad "not an object" '["b", "y"]' 'an array, not a JSON object'
bad "a string line" '"b"' 'a string, not a JSON object'
bad "no id" '{"summary": "y"}' 'no "id" field'
bad "real id" '{"id": 1.5, "summary": "y"}' 'the id field "id" is a number, not a string or an integer'
bad "null id" '{"id": null, "summary": "y"}' 'the id field "id" is null, not a string or an integer'
bad "empty id" '{"id": "", "summary": "y"}' 'the id field "id" is empty'
bad "control character in the id" '{"id": "b\tc", "summary": "y"}' 'the id field "id" holds a control character (byte 2, after "b")'
bad "no text" '{"id": "b", "abstract": "y"}' 'id "b": no "summary" field'
bad "text not a string" '{"id": "b", "summary": ["y"]}' 'id "b": the "summary" field is an array, not a string'
bad "null text" '{"id": "b", "summary": null}' 'id "b": the "summary" field is null, not a string'
bad "key twice" '{"id": "b", "summary": "y", "summary": "z"}' 'a key given twice: duplicate object key near .*"summary"'
bad "too big an integer" '{"id": 123456789012345678901234567890, "summary": "y"}' 'invalid JSON'
bad "lone surrogate" '{"id": "b", "summary": "\ud800"}' 'invalid JSON'
bad "NUL in a string" '{"id": "b", "summary": "x\u0000y"}' 'a string holds \\u0000 (the string ending at byte 33)'
bad "id too long" "{\"id\": \"$(printf %4097s '' | tr ' ' x)\", \"summary\": \"y\"}" 'the id field "id" is longer than 4096 bytes ("xxx*\.\.\.")'
bad "invalid UTF-8" "$(printf '{"id": "b", "summary": "caf\351"}')" 'invalid UTF-8 at byte 28'
bad "duplicate candidate" '{"id": "a", "summary": "y"}' 'id "a" given twice (first at .*bad.jsonl:1)'
bad "candidate without reference" '{"id": "d", "summary": "y"}' 'id "d" has no reference in .*r3'
printf '{"id": "1", "summary": "x"}\n\n{"id": 1, "summary": "y"}\n' >"$T/rdup"
fails 1 "duplicate reference" lc-rouge --jsonl "$T/c.jsonl" "$T/rdup"
grep -q 'rdup:3: id "1" given twice (first at .*rdup:1)' "$T/err"; _res $? "1 and \"1\" are one id: both lines named"
printf '{"id": "a", "summary": "x"}\n{"id": "a", "summary": "y"}\n' >"$T/both.dup"
fails 1 "one input, a field missing" lc-rouge --cand summary --ref summary2 "$T/both.dup"
grep -q 'both.dup:1: id "a": no "summary2" field' "$T/err"; _res $? "missing second field named"
printf '{"id": "a", "summary": "x", "abstract": "x"}\n{"id": "a", "summary": "y", "abstract": "y"}\n' >"$T/both.dup"
fails 1 "duplicate in one input" lc-rouge --ref abstract "$T/both.dup"
grep -q 'both.dup:2: id "a" given twice (first at .*both.dup:1)' "$T/err"; _res $? "duplicate in one input named"
: >"$T/empty.jsonl"
fails 1 "no candidates" lc-rouge --subset --jsonl "$T/empty.jsonl" "$T/r3"
grep -q 'empty.jsonl: no documents' "$T/err"; _res $? "no documents named"
fails 1 "missing file" lc-rouge --jsonl "$T/nope" "$T/r3"

# usage errors
fails 2 "-d with --jsonl" lc-rouge --jsonl -d line "$T/c.jsonl" "$T/r.jsonl"
fails 2 "--subset without --jsonl" lc-rouge --subset "$T/c.txt" "$T/r.txt"
fails 2 "empty field name" lc-rouge --ref "" "$T/c.jsonl" "$T/r.jsonl"
fails 2 "no input" lc-rouge --jsonl
fails 2 "unknown format" lc-rouge -f csv2 "$T/c.txt" "$T/r.txt"

# csv quoting of ids as Python's csv module does; a write error is reported
printf '{"id": "a,\\"b", "summary": "x y"}\n{"id": "c", "summary": "y"}\n' >"$T/cq"
ok "csv with an id to quote" lc-rouge -b 0 -f csv -t rouge1 --jsonl "$T/cq" "$T/cq"
is "csv quoting" "$(cat "$T/out")" "$(printf 'id,rouge1-P,rouge1-R,rouge1-F\n"a,""b",1.000000,1.000000,1.000000\nc,1.000000,1.000000,1.000000')"
if [ -w /dev/full ]; then
	fails 1 "write error" sh -c "lc-rouge -f csv '$T/c37' '$T/r37' >/dev/full"
else
	skip "write error" "no /dev/full"
fi

# --- with python3: the expected files are what the generator writes, and
# all 300 oracle pairs (long texts, every kind of byte) pair by id ---
if [ -x /usr/bin/python3 ] && [ -f tests/gen/rouge_csv_ref.py ]; then
	mkdir "$T/gen" "$T/j300"
	/usr/bin/python3 tests/gen/rouge_csv_ref.py expected "$T/gen"
	_res $? "generator runs"
	for f in "$D"/*; do
		[ "$(basename "$f")" = README.md ] && continue     # the folder's own, by hand
		same "generator makes $(basename "$f")" "$T/gen/$(basename "$f")" "$f"
	done
	/usr/bin/python3 tests/gen/rouge_csv_ref.py jsonl 300 "$T/j300"
	for stem in 0 1; do
		s=; [ $stem = 1 ] && s=-s
		ok "300 pairs as jsonl, stem=$stem" lc-rouge $s -b 0 -f tsv -t $ALL --ref abstract \
			"$T/j300/cand.jsonl" "$T/j300/ref.jsonl"
		grep -v '^#' "$T/out" | sort >"$T/got"
		lc-rouge $s -b 0 -f tsv -t $ALL "$T/c300" "$T/r300" | grep -v '^#' | sort >"$T/want"
		same "300 pairs: jsonl equals the plain files, stem=$stem" "$T/got" "$T/want"
	done
else
	skip "generator and 300 jsonl pairs" "no python3"
fi

# --skip-bad: a test set with a broken line, as lc-tokenize --skip-bad
# skipped it, scores against the rest
{ head -3 "$D/ref.jsonl"; echo '{"id": "broken", "abstract": '; sed -n '4,$p' "$D/ref.jsonl"; } >"$T/ref.bad"
fails 1 "a bad reference line" lc-rouge -b 0 -f tsv -t rouge1 --ref abstract "$D/cand.jsonl" "$T/ref.bad"
grep -q 'ref.bad:4: ' "$T/err"; _res $? "names FILE:LINE"
ok "--skip-bad" lc-rouge -b 0 -f tsv -t $ALL --skip-bad --ref abstract "$D/cand.jsonl" "$T/ref.bad"
grep -q 'skipped 1 bad JSON line (the first: .*ref.bad:4: ' "$T/err"; _res $? "says what it skipped"
lc-rouge -b 0 -f tsv -t $ALL --ref abstract "$D/cand.jsonl" "$D/ref.jsonl" >"$T/noskip" 2>/dev/null
same "the same scores as without the line" "$T/out" "$T/noskip"
fails 2 "--skip-bad without --jsonl" lc-rouge --skip-bad "$T/cand20" "$T/cand20"
grep -q -- '--skip-bad: only with --jsonl' "$T/err"; _res $? "says so"

done_testing
