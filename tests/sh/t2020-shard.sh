#!/bin/sh
# lc-cat --shard and --merge: a stream dealt round-robin into N shards and
# merged back byte for byte; lost, duplicated and untagged documents are
# errors naming the index; the shards' outputs through lc-tokenize,
# lc-encode and lc-decode merge into what one machine makes.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
# Seven text documents (lines) with names and metadata (lc-chunk's).
printf 'one\ntwo two\nthree\n\nfive\nsix six six\nseven\n' >"$T/seven.txt"
ok "a seven-document stream" sh -c "lc-chunk -p '^' '$T/seven.txt' >'$T/in.lc'"
lc-cat -o info "$T/in.lc" | grep -c '^doc' >"$T/n"
is "seven documents" "$(cat "$T/n")" 7
lc-cat -o info "$T/in.lc" | awk -F'\t' '$1=="doc"{print $3}' >"$T/names"

# --- round trip for several N, N above the document count included
# (not $n: lib.sh's helpers use it)
for N in 1 2 3 7 10; do
	mkdir "$T/n$N"
	ok "--shard $N" lc-cat --shard $N -O "$T/n$N/s" "$T/in.lc"
	is "--shard $N: $N files" "$(ls "$T/n$N" | tr '\n' ' ')" \
		"$(k=0; while [ $k -lt $N ]; do printf 's.%d.lc ' $k; k=$((k + 1)); done)"
	ok "--shard $N: every shard is a valid stream" lc-cat -o info "$T/n$N"/s.*.lc
	ok "--merge of $N" sh -c "lc-cat --merge '$T/n$N'/s.*.lc >'$T/n$N.out'"
	same "--shard $N then --merge is the input byte for byte" "$T/in.lc" "$T/n$N.out"
done

# Round-robin: shard k holds documents k, k+3, ...; names kept; the last
# document says how many there were.
lc-cat -o info "$T/n3/s.1.lc" | awk -F'\t' '$1=="doc"' >"$T/s1"
is "shard 1 of 3 holds documents 1 and 4" "$(cut -f3 "$T/s1" | tr '\n' ' ')" \
	"$(sed -n '2p;5p' "$T/names" | tr '\n' ' ')"
grep -q 'piece=2	pieces=7	.*	lc.index=1	lc.split=[0-9a-f]\{16\}\/3$' "$T/s1"; is "lc.index and lc.split after the metadata kept" $? 0
lc-cat -o info "$T/n3/s.0.lc" | awk -F'\t' '$1=="doc"' | tail -1 >"$T/last"
grep -q '	lc.index=6	lc.split=[0-9a-f]*\/3	lc.count=7$' "$T/last"; is "the last document carries lc.count" $? 0
is "one lc.count in all" "$(cat "$T/n3"/s.*.lc | lc-cat -o info | grep -c 'lc.count=')" 1
is "an empty shard has no documents" "$(lc-cat -o info "$T/n10/s.9.lc" | wc -l | tr -d ' ')" 0
lc-cat --merge -o info "$T/n3"/s.*.lc | awk -F'\t' '$1=="doc"{print $2 "\t" $3}' >"$T/minfo"
lc-cat -o info "$T/in.lc" | awk -F'\t' '$1=="doc"{print $2 "\t" $3}' >"$T/iinfo"
same "merged: names and positions as in the input" "$T/iinfo" "$T/minfo"
lc-cat -o text "$T/in.lc" >"$T/in.txt"
ok "--merge -o text" sh -c "lc-cat --merge -o text '$T/n3'/s.*.lc >'$T/m.txt'"
same "--merge -o text is the input's text" "$T/in.txt" "$T/m.txt"
ok "inputs in any order" sh -c "lc-cat --merge '$T/n3/s.2.lc' '$T/n3/s.0.lc' - <'$T/n3/s.1.lc' >'$T/any'"
same "the same stream" "$T/in.lc" "$T/any"

# Text and id inputs split too; several inputs count on.
ok "-i text --shard" lc-cat -i text -d line --shard 2 -O "$T/txt" "$T/seven.txt"
is "line documents dealt" "$(lc-cat --merge -o text "$T"/txt.*.lc | cmp -s - "$T/seven.txt"; echo $?)" 0
ok "two inputs" lc-cat --shard 4 -O "$T/two" "$T/in.lc" "$T/in.lc"
is "fourteen documents, in order" "$(lc-cat --merge -o info "$T"/two.*.lc | awk -F'\t' '$1=="doc"{printf "%s ", $2}')" \
	"0 1 2 3 4 5 6 7 8 9 10 11 12 13 "
ok "stdin" sh -c "lc-cat --shard 2 -O '$T/std' <'$T/in.lc'"

# --- lost and duplicated documents are errors naming the index
fails 1 "a lost shard" lc-cat --merge "$T/n3/s.0.lc" "$T/n3/s.2.lc"
grep -q 'lc-cat: document 1 is missing' "$T/err"; is "names the missing index" $? 0
fails 1 "a lost shard holding only the last document" lc-cat --merge "$T"/n10/s.[012345789].lc
grep -q 'the last document is missing: the inputs end at lc.index 5' "$T/err"; is "says so" $? 0
fails 1 "two lost shards" lc-cat --merge "$T/n7/s.0.lc" "$T/n7/s.3.lc" "$T"/n7/s.[456].lc
grep -q 'documents 1 to 2 are missing' "$T/err"; is "names the range" $? 0
fails 1 "a shard given twice" lc-cat --merge "$T"/n3/s.*.lc "$T/n3/s.1.lc"
grep -q 'lc.index 1 twice: .*s.1.lc, document ".*", and .*s.1.lc' "$T/err"; is "names it and both places" $? 0
printf 'x\n' | lc-cat -i text | lc-cat --shard 1 -O "$T/one"
cat "$T/one.0.lc" "$T/one.0.lc" >"$T/dup1"
fails 1 "a document twice in one input" lc-cat --merge "$T/dup1"
grep -q "dup1: document \"stdin\": lc.index 0 twice in this input" "$T/err"; is "names the index" $? 0
cat "$T/n3/s.0.lc" "$T/n3/s.0.lc" >"$T/dup0"
fails 1 "a shard concatenated with itself" lc-cat --merge "$T/dup0" "$T/n3/s.1.lc" "$T/n3/s.2.lc"
grep -q "dup0: document \".*\": lc.index 0 after 6 (.*not in the order of the split" "$T/err"
is "out of order" $? 0
# Outputs of two splits never merge, whatever their indexes say: one left
# from an earlier split of the same corpus would fill a lost shard's place.
fails 1 "the last document of another split" lc-cat --merge "$T"/n3/s.*.lc "$T/n7/s.6.lc"
grep -q 's.6.lc: document ".*": from another split than .*n3/s.0.lc, document ".*" (lc.split [0-9a-f]*/7 against [0-9a-f]*/3)' "$T/err"
is "names both" $? 0
mkdir "$T/n8" && lc-cat --shard 8 -O "$T/n8/s" "$T/in.lc" "$T/in.lc"
fails 1 "a document of another split beyond the last" lc-cat --merge "$T"/n7/s.*.lc "$T/n8/s.7.lc"
grep -q 'from another split' "$T/err"; is "says so" $? 0
fails 1 "shards of two splits" lc-cat --merge "$T/n7/s.0.lc" "$T/n7/s.1.lc" "$T/n7/s.2.lc" "$T/two.3.lc"
grep -q 'from another split' "$T/err"; is "caught" $? 0
mkdir "$T/again" && lc-cat --shard 3 -O "$T/again/s" "$T/in.lc"
fails 1 "the same input split again, one shard of each" \
	lc-cat --merge "$T/n3/s.0.lc" "$T/again/s.1.lc" "$T/n3/s.2.lc"
grep -q 'again/s.1.lc: document ".*": from another split' "$T/err"; is "told apart" $? 0
ok "each split merges alone" sh -c "lc-cat --merge '$T'/again/s.*.lc | cmp -s - '$T/in.lc'"
fails 1 "a lost shard of a known split" lc-cat --merge "$T/n7/s.0.lc" "$T"/n7/s.[23456].lc
grep -q 'document 1 is missing (it was dealt to shard 1 of 7)' "$T/err"; is "names the shard" $? 0
fails 1 "a stream without indexes" lc-cat --merge "$T/in.lc"
grep -q "in.lc: document \"$(head -1 "$T/names")\": no lc.index" "$T/err"; is "names the document" $? 0
lc-cat -i ids </dev/null >"$T/empty.lc"
fails 1 "no documents at all" lc-cat --merge "$T/empty.lc" "$T/empty.lc"
grep -q 'no documents in the inputs' "$T/err"; is "says why" $? 0
fails 1 "a truncated shard" sh -c "head -c 200 '$T/n3/s.1.lc' >'$T/cut'; lc-cat --merge '$T/n3/s.0.lc' '$T/cut' '$T/n3/s.2.lc'"
grep -q 'cut: .*truncated' "$T/err"; is "names the file" $? 0
fails 1 "a missing file" lc-cat --merge "$T/n3/s.0.lc" "$T/nonexistent"

fails 2 "-d with a stream input" lc-cat -d line "$T/in.lc"
grep -q -- '-d applies to -i text only' "$T/err"; is "says so" $? 0

# --- the split refuses what it cannot tag, and leaves nothing half-written
mkdir "$T/fail"
fails 1 "a shard split again" lc-cat --shard 2 -O "$T/fail/s" "$T/n3/s.0.lc"
grep -q 'already has lc.index=0 .*merge it first' "$T/err"; is "says so" $? 0
fails 1 "an empty input" lc-cat --shard 2 -O "$T/fail/s" "$T/empty.lc"
grep -q 'no documents to split' "$T/err"; is "says so" $? 0
head -c 300 "$T/in.lc" >"$T/trunc"
fails 1 "a truncated input" lc-cat --shard 2 -O "$T/fail/s" "$T/trunc"
is "no shard files left behind" "$(ls "$T/fail" | wc -l | tr -d ' ')" 0
fails 1 "an unwritable prefix" lc-cat --shard 2 -O "$T/nodir/s" "$T/in.lc"
grep -q "nodir/s.0.lc.tmp[0-9]*: No such file" "$T/err"; is "names the file" $? 0

# --- usage
for bad in 0 -1 x 2x 4097; do
	fails 2 "--shard $bad" lc-cat --shard $bad -O "$T/fail/s" "$T/in.lc"
done
fails 2 "--shard without -O" lc-cat --shard 2 "$T/in.lc"
fails 2 "-O without --shard" lc-cat -O "$T/fail/s" "$T/in.lc"
fails 2 "--shard and --merge" lc-cat --shard 2 -O "$T/fail/s" --merge "$T/in.lc"
fails 2 "--shard -o text" lc-cat --shard 2 -O "$T/fail/s" -o text "$T/in.lc"
fails 2 "--merge -i text" lc-cat --merge -i text "$T/seven.txt"
is "nothing written on usage errors" "$(ls "$T/fail" | wc -l | tr -d ' ')" 0
ok "--help mentions --shard" sh -c "lc-cat --help | grep -q -- '--shard N'"

# --- the shards' outputs from the programs merge into one machine's output
# (document metadata pass through lc-tokenize, lc-encode and lc-decode)
if [ -f "$SHARE/models/demo/config.json" ]; then
	lc-chunk -p '^CHAPTER [0-9]+' "$SHARE/samples/sample.txt" >"$T/ruth.lc"
	echo 'lc-tokenize -q "$1" | lc-encode -q -j 2 | lc-decode -q -j 2 --max-new 6 -f stream' >"$T/run"
	ok "one machine" sh -c "sh '$T/run' '$T/ruth.lc' >'$T/one.lc'"
	ok "split in 2" lc-cat --shard 2 -O "$T/ruth" "$T/ruth.lc"
	ok "each shard" sh -c "sh '$T/run' '$T/ruth.0.lc' >'$T/ruth.0.sum' &&
		sh '$T/run' '$T/ruth.1.lc' >'$T/ruth.1.sum'"
	lc-cat -o info "$T/ruth.1.sum" | grep -q '^doc	0	.*	lc.index=1	'
	is "lc.index passed through" $? 0
	ok "merge" sh -c "lc-cat --merge '$T'/ruth.*.sum >'$T/merged.lc'"
	same "merged = one machine, byte for byte" "$T/one.lc" "$T/merged.lc"
else
	skip "the programs' outputs merge" "no demo model in $SHARE/models/demo"
fi

# an input that is one of the shards' files is refused (its shard replaced
# it), and nothing is written
printf '1 2\n3 4\n5 6\n' | lc-cat -i ids >"$T/three.lc"
lc-cat -q --shard 2 -O "$T/own" "$T/three.lc"
cksum "$T/own.0.lc" "$T/own.1.lc" >"$T/own.sum"
fails 1 "an input that is shard 0's file" lc-cat -q --shard 2 -O "$T/own" "$T/own.0.lc"
grep -q "own.0.lc: an input is shard 0's output file" "$T/err"; _res $? "says so"
fails 1 "... given on standard input" sh -c "lc-cat -q --shard 2 -O '$T/own' <'$T/own.0.lc'"
cksum "$T/own.0.lc" "$T/own.1.lc" | cmp -s - "$T/own.sum"; _res $? "both shards untouched"
# text documents of a directory the shards go into: its temporaries
# would be read as documents
mkdir "$T/sd" && printf 'a\n' >"$T/sd/a.txt" && printf 'b\n' >"$T/sd/b.txt"
fails 1 "shards into the input directory" lc-cat -q -i text --shard 2 -O "$T/sd/p" "$T/sd"
grep -q 'sd: the shards would be written into this input directory' "$T/err"; _res $? "says so"

# a shard directory one may write but not read (mode 333): the shards are
# written and the command succeeds (syncing the directory needs it open)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	W=$(mktemp -d /tmp/lc-wo.XXXXXX) && chmod 755 "$W" && cp "$T/three.lc" "$W/" &&
		chmod 644 "$W/three.lc" && mkdir "$W/wo" && chmod 333 "$W/wo"
	ok "--shard into a write-only directory" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$(command -v lc-cat)" -q --shard 2 -O "$W/wo/p" "$W/three.lc"
	rm -rf "$W"
else
	skip "--shard into a write-only directory" "not root, or no setpriv"
fi

# killed by SIGTERM while it writes, no temporary is left (SIGINT and
# SIGHUP the same; a background job here ignores SIGINT)
( (lc-cat -o ids "$T/three.lc"; sleep 3) | lc-cat -q -i ids --shard 3 -O "$T/sig" &
  pid=$!; sleep 1; kill -TERM $pid; wait $pid ) 2>/dev/null
is "SIGTERM mid-split: no shard and no temporary" "$(ls "$T" | grep -c '^sig\.')" 0
done_testing
