#!/bin/sh
# A whole book as Pang et al. summarize BookSum's (share/book-summary.sh,
# make book-summary): the bundled Book of Ruth cut into its chapters, each
# summarized by the demo model, the summaries joined in chapter order and
# summarized again; names and order kept at every stage, and the script
# gives what the pipeline written out by hand gives.
. tests/sh/lib.sh
M=$LC_SHARE/models/demo
BOOK=$LC_SHARE/samples/sample.txt
[ -f "$M/model.safetensors" ] || skip_all "no demo model"
[ -f "$BOOK" ] || skip_all "no share/samples/sample.txt"
S=$LC_SHARE/book-summary.sh
cd "$T" || exit 1

export LC_DECODE_FLAGS="--max-new 12"
ok "book-summary.sh on the Book of Ruth" sh -c "sh '$S' '$BOOK' '$M' '^CHAPTER [0-9]+' ch.lc >book.lc"
lc-cat -o info ch.lc | awk -F'\t' '$1 == "doc" { print $3, $5 }' >names
printf '%s#%d piece=%d\n' "$BOOK" 1 1 "$BOOK" 2 2 "$BOOK" 3 3 "$BOOK" 4 4 "$BOOK" 5 5 >want
same "five chapter summaries (the title, then chapters 1-4), named and in order" names want
lc-cat -o info book.lc | awk -F'\t' '$1 == "doc" { print $3 }' >bn
echo "$BOOK" >want
same "one book summary, named as the book" bn want
lc-cat -o info book.lc | grep -q 'joined=concatenated'; _res $? "... made from the joined chapter summaries"
is "the book summary is text" "$(lc-cat -o text book.lc | wc -w | awk '$1 > 0 { print "ok" }')" ok

# the same by hand, step by step
lc-chunk -q -p '^CHAPTER [0-9]+' "$BOOK" | lc-tokenize -q -m "$M" | lc-encode -q -m "$M" |
	lc-decode -q -m "$M" -f stream --max-new 12 >ch2.lc
same "the chapters' summaries as by hand" ch.lc ch2.lc
lc-chunk -q --join ch2.lc >joined.lc
lc-cat -o text ch2.lc >chtext
lc-cat -o text joined.lc >jtext
same "the joined text is the chapter summaries in order" jtext chtext
lc-tokenize -q -m "$M" joined.lc | lc-encode -q -m "$M" | lc-decode -q -m "$M" -f stream --max-new 12 >book2.lc
same "the book's summary as by hand" book.lc book2.lc
fails 2 "no model" sh "$S" "$BOOK"

# a model that takes fewer tokens than a chapter has (BART's 1024): an
# error naming the chapter, or with LC_ENCODE_FLAGS=--truncate its start
if [ -f "$DATA/bart/tiny_bart/config.json" ]; then
	B=$DATA/bart/tiny_bart
	awk '{ print } /^CHAPTER/ { for (i = 0; i < 300; i++) print "and the people went up again and again" }' \
		"$BOOK" >long.txt
	fails 1 "chapters longer than BART takes" sh "$S" long.txt "$B"
	grep -q 'long.txt#2": [0-9]* tokens, more than the 1024 the model takes' "$T/err"; _res $? "names the chapter"
	ok "LC_ENCODE_FLAGS=--truncate" sh -c "LC_ENCODE_FLAGS=--truncate LC_DECODE_FLAGS='--max-new 4' sh '$S' long.txt '$B' >lb.lc"
	is "one book summary" "$(lc-cat -o info lb.lc | grep -c '^doc')" 1
fi
done_testing
