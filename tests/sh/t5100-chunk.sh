#!/bin/sh
# lc-chunk: cut and join back, over many sizes and overlaps, for token and
# text streams; chapters of a real book.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
# Token streams: three documents of 0, 1 and 997 tokens, and one of 64.
{ echo; echo 7; seq 1 997 | tr '\n' ' '; echo; seq 5 68 | tr '\n' ' '; echo; } | lc-cat -i ids >"$T/tok"
bad=0 n=0
for size in 1 2 3 7 10 63 64 65 100 996 997 998 5000; do
	for ov in 0 1 2 5 50 500; do
		[ $ov -lt $size ] || continue
		n=$((n + 1))
		lc-chunk -n $size -o $ov "$T/tok" >"$T/p" 2>"$T/e" &&
			lc-chunk --join "$T/p" >"$T/j" 2>>"$T/e" &&
			lc-cat -o ids "$T/j" >"$T/j.ids" && lc-cat -o ids "$T/tok" >"$T/t.ids" &&
			cmp -s "$T/j.ids" "$T/t.ids" || { bad=$((bad + 1)); echo "# -n $size -o $ov: $(cat "$T/e")"; }
	done
done
is "token chunk+join is the identity ($n size/overlap pairs)" $bad 0

lc-chunk -n 10 -o 3 "$T/tok" | lc-cat -o info | awk -F'\t' '$1=="doc" && $3 ~ /stdin:3#/' >"$T/info"
is "997 tokens in windows of 10 every 7: 142 pieces" "$(wc -l <"$T/info" | tr -d ' ')" 142
sed -n 2p "$T/info" | grep -q 'parent=stdin:3	piece=2	pieces=142	offset=7	length=10	total=997	unit=tokens'
is "piece metadata" $? 0
is "an empty document is one empty piece" "$(lc-chunk -n 5 "$T/tok" | lc-cat -o info | grep -c '^doc	0	stdin:1#1	')" 1

# Text: sentences and patterns over the sample and the whole KJV.
xz -dc "$SHARE/samples/kjv.txt.xz" >"$T/kjv.txt"
lc-cat -i text "$T/kjv.txt" >"$T/kjv.lc"
bad=0
for s in 1 2 5 40; do
	for ov in 0 1 3; do
		[ $ov -lt $s ] || continue
		lc-chunk --sentences $s -o $ov "$SHARE/samples/sample.txt" | lc-chunk --join | lc-cat -o raw >"$T/sj"
		cmp -s "$T/sj" "$SHARE/samples/sample.txt" || { bad=$((bad + 1)); echo "# --sentences $s -o $ov"; }
	done
done
is "sentence chunk+join is the identity" $bad 0

lc-chunk -p '^CHAPTER [0-9]+' "$SHARE/samples/kjv.txt.xz" >"$T/ch"
is "the KJV cut into its 1189 chapters (and the title)" "$(lc-cat -o info "$T/ch" | grep -c '^doc')" 1190
lc-cat -o info "$T/ch" | awk -F'\t' '$1=="doc"{print $3}' | sed -n '2p;1190p' >"$T/names"
printf '%s\n%s\n' "$SHARE/samples/kjv.txt.xz#2" "$SHARE/samples/kjv.txt.xz#1190" >"$T/names.want"
same "pieces are named NAME#k" "$T/names" "$T/names.want"
lc-cat -o text "$T/ch" | sed -n '/^CHAPTER 1$/{p;q}' >"$T/first"
is "a piece begins at its heading" "$(cat "$T/first")" "CHAPTER 1"
lc-chunk --join "$T/ch" | lc-cat -o raw >"$T/kjv.back"
same "chapters joined give the book back byte for byte" "$T/kjv.back" "$T/kjv.txt"
is "books" "$(lc-chunk -p '^BOOK ' "$T/kjv.lc" | lc-cat -o info | grep -c '^doc')" 67

# Transformed pieces (say, summaries of chapters) join by concatenation.
lc-chunk -p '^CHAPTER' "$SHARE/samples/sample.txt" | lc-cat -o info | grep -c '^doc' >"$T/npieces"
is "the sample has a title and four chapters" "$(cat "$T/npieces")" 5
# Windows that keep a document's special tokens (BART's <s> ... </s>).
printf '0 10 11 12 13 14 15 16 2\n0 2\n0 5 2\n' | lc-cat -i ids >"$T/wrapped"
lc-chunk -n 4 -o 1 --ends 1,1 "$T/wrapped" >"$T/wins"
is "--ends 1,1: <s> and </s> around every window of 2" "$(lc-cat -o ids "$T/wins" | paste -sd'|' -)" \
	"0 10 11 2|0 11 12 2|0 12 13 2|0 13 14 2|0 14 15 2|0 15 16 2|0 2|0 5 2"
is "and --join gives the documents back" "$(lc-chunk --join "$T/wins" | lc-cat -o ids | paste -sd'|' -)" \
	"0 10 11 12 13 14 15 16 2|0 2|0 5 2"
is "--ends 0,1 (T5's </s>)" "$(lc-chunk -n 3 --ends 0,1 "$T/wrapped" | lc-cat -o ids | head -2 | paste -sd'|' -)" \
	"0 10 2|11 12 2"
printf '7\n' | lc-cat -i ids >"$T/one"
fails 1 "a document shorter than its ends" lc-chunk -n 4 --ends 1,1 "$T/one"
grep -q 'document "stdin:1": 1 tokens, fewer than the 1 + 1' "$T/err"; _res $? "names the document"
fails 2 "--ends leaving no room" lc-chunk -n 2 --ends 1,1
fails 2 "--ends without -n" lc-chunk --sentences 2 --ends 1,1
fails 2 "--ends not H,T" lc-chunk -n 5 --ends 1
fails 2 "--ends overlap too large" lc-chunk -n 5 -o 3 --ends 1,1
# Errors.
fails 2 "overlap >= size" lc-chunk -n 5 -o 5
fails 2 "no mode" lc-chunk
fails 2 "two modes" lc-chunk -n 5 --join
fails 2 "-d with -n (it was ignored)" lc-chunk -n 5 -d line
fails 2 "-d with --join" lc-chunk --join -d line
fails 2 "bad pattern" lc-chunk -p '('
fails 1 "-n on text" sh -c "lc-cat -i text '$SHARE/samples/sample.txt' | lc-chunk -n 5"
# a parent whose last pieces never come: the message has lc(7)'s form
# (input, document, why); it named neither the input nor a document
printf 'a b c d e\n' | lc-tokenize -d line | lc-chunk -n 4 >"$T/p2.lc"
lc-cat -q --shard 2 -O "$T/half" "$T/p2.lc"
fails 1 "--join of a parent's first piece alone" lc-chunk --join "$T/half.0.lc"
grep -q "^lc-chunk: $T/half.0.lc: document \"stdin:1#1\": the input ends after piece 1 of 2 of \"stdin:1\"\$" "$T/err"
_res $? "names the input and the document"
lc-cat -i ids </dev/null >"$T/none.lc"
fails 1 "... then an empty input" lc-chunk --join "$T/half.0.lc" "$T/none.lc"
grep -q "^lc-chunk: $T/half.0.lc: document" "$T/err"; _res $? "names the input the piece came from"
# a pattern whose match the JIT's fixed stack cannot hold (a repeated
# group over thousands of bytes) is matched by the interpreter: the same
# cut as ever, not "JIT stack limit reached"
awk 'BEGIN { print "Intro Text"; for (i = 0; i < 1000; i++) printf "%s", (i % 2 ? "ab " : "cd\n");
	print "CHAPTER 1"; print "body" }' >"$T/deep.txt"
ok "a deep repeated group" sh -c "lc-chunk -q -p '^(?:ab|cd|\s)+CHAPTER' '$T/deep.txt' >'$T/deep.lc'"
is "two pieces" "$(lc-cat -o info "$T/deep.lc" | grep -c '^doc')" 2
done_testing
