#!/bin/sh
# lc-cat as a user runs it: ids in and out, info, raw, validation, concatenation.
. tests/sh/lib.sh

printf '5 6 7\n8 9\n' >"$T/ids"
ok "ids to a stream" sh -c "lc-cat -i ids <'$T/ids' >'$T/s'"
ok "stream back to ids" sh -c "lc-cat -o ids <'$T/s' >'$T/back'"
same "ids round trip" "$T/ids" "$T/back"

lc-cat -o info <"$T/s" >"$T/info"
printf 'doc\t0\tstdin:1\ntensor\t0\tstdin:1\ttokens\ti32\t3\ndoc\t1\tstdin:2\ntensor\t1\tstdin:2\ttokens\ti32\t2\n' >"$T/want"
same "info describes both records" "$T/info" "$T/want"

lc-cat -o raw <"$T/s" | od -An -tu4 -v | tr -s ' \n' ' ' >"$T/raw"
is "raw is little-endian int32 payloads" "$(cat "$T/raw")" " 5 6 7 8 9 "

# Cutting the stream at any byte is an error naming the offset.
n=$(wc -c <"$T/s")
bad=0 cut=0
while [ $cut -lt "$n" ]; do
	head -c $cut "$T/s" >"$T/cut"
	lc-cat <"$T/cut" >"$T/cut.out" 2>"$T/cut.err"
	r=$?
	if [ $r != 1 ] || ! grep -q 'lc-cat: stdin: .*byte [0-9]' "$T/cut.err"; then
		bad=$((bad + 1)); echo "# cut at $cut: exit $r: $(cat "$T/cut.err")"
	fi
	# Nothing after the break passes as valid: the output does not validate.
	if [ -s "$T/cut.out" ] && lc-cat <"$T/cut.out" >/dev/null 2>&1; then
		bad=$((bad + 1)); echo "# cut at $cut: output validates"
	fi
	cut=$((cut + 1))
done
is "every truncation is detected ($n cuts)" $bad 0

# A flipped byte in the payload is detected and names the document.
cp "$T/s" "$T/flip"
printf '\377' | dd of="$T/flip" bs=1 seek=$((n - 60)) conv=notrunc 2>/dev/null
fails 1 "corrupt byte detected" lc-cat "$T/flip"
grep -q 'document 1 "stdin:2"' "$T/err"; is "message names the document" $? 0

# Concatenated streams are a stream; lc-cat joins files into one.
cat "$T/s" "$T/s" >"$T/ss"
ok "cat of two streams" sh -c "lc-cat -o ids '$T/ss' >'$T/ss.ids'"
is "four documents" "$(wc -l <"$T/ss.ids" | tr -d ' ')" 4
ok "two files" sh -c "lc-cat '$T/s' - <'$T/s' | lc-cat -o info >'$T/two'"
is "indexes continue" "$(grep -c '^doc' "$T/two")" 4

# Bad input and usage.
fails 1 "text is not a stream" sh -c "echo hello | lc-cat"
grep -q 'not an lc stream' "$T/err"; is "says so" $? 0
fails 1 "empty input" sh -c "lc-cat </dev/null"
fails 1 "bad ids" sh -c "echo '5 x 7' | lc-cat -i ids"
grep -q 'stdin:1: column 3' "$T/err"; is "bad id located" $? 0
fails 1 "negative id" sh -c "echo '-5' | lc-cat -i ids"
fails 1 "id too large" sh -c "echo '99999999999' | lc-cat -i ids"
fails 1 "missing file" lc-cat /nonexistent/file
fails 2 "unknown option" lc-cat -Z
fails 2 "unknown format" lc-cat -o nope
ok "--help" lc-cat --help
grep -q usage "$T/out"; is "--help prints usage on stdout" $? 0
ok "--version" lc-cat --version
fails 1 "ids of a text stream" sh -c "printf 'x' | lc-cat -i text | lc-cat -o ids"

# Empty documents and lines.
printf '\n1\n\n' | lc-cat -i ids | lc-cat -o ids >"$T/e"
printf '\n1\n\n' >"$T/e.want"
same "empty lines are empty documents" "$T/e" "$T/e.want"

# Text in and out.
printf 'one\ntwo\n' | lc-cat -i text -d line | lc-cat -o text >"$T/t"
printf 'one\ntwo\n' >"$T/t.want"
same "text documents round trip" "$T/t" "$T/t.want"

# Terminal guard: only testable with a terminal; script(1) gives one.
if need script; then
	script -qec "lc-cat -i ids </dev/null" /dev/null >"$T/tty" 2>&1
	grep -q 'refusing' "$T/tty"; is "binary output refused on a terminal" $? 0
else
	skip "terminal guard" "no script(1)"
fi

# A broken pipe ends lc-cat quietly.
yes '1 2 3 4 5 6 7 8' | head -100000 >"$T/big"
lc-cat -i ids "$T/big" 2>"$T/pipe.err" | head -c 10 >/dev/null
is "broken pipe is quiet" "$(cat "$T/pipe.err")" ""

# an input that is the file standard output appends to: refused before
# anything is written (it read its own output until the disk was full)
printf '5 6\n' | lc-cat -i ids >"$T/self.lc"
cksum "$T/self.lc" >"$T/self.sum"
fails 1 "lc-cat f.lc >>f.lc" sh -c "lc-cat '$T/self.lc' >>'$T/self.lc'"
grep -q 'self.lc: the input is the output file' "$T/err"; _res $? "says so"
fails 1 "lc-cat <f.lc >>f.lc" sh -c "lc-cat <'$T/self.lc' >>'$T/self.lc'"
fails 1 "lc-chunk -n 50 f.lc >>f.lc" sh -c "lc-chunk -n 50 '$T/self.lc' >>'$T/self.lc'"
# (every operand checked before anything is written: a first input
# flushed whole before the second was found to be the output spoiled it)
seq 1 3000 | awk '{ print $1, $1 + 1 }' | lc-cat -i ids >"$T/big.lc"
fails 1 "lc-cat big.lc f.lc >>f.lc" sh -c "lc-cat '$T/big.lc' '$T/self.lc' >>'$T/self.lc'"
cksum "$T/self.lc" | cmp -s - "$T/self.sum"; _res $? "the file untouched"
printf 'hello\n' >"$T/self.txt"
fails 1 "lc-tokenize f.txt >>f.txt" sh -c "lc-tokenize '$T/self.txt' >>'$T/self.txt'"
is "the text untouched" "$(cat "$T/self.txt")" "hello"
# (ids that detokenize: with text the refusal could be the parse's)
awk 'BEGIN { for (i = 0; i < 2000; i++) print "5 6 7" }' >"$T/self.ids"
cksum "$T/self.ids" >"$T/ids.sum"
fails 1 "lc-detokenize -f ids f >>f" sh -c "lc-detokenize -f ids '$T/self.ids' >>'$T/self.ids'"
fails 1 "lc-detokenize -f ids <f >>f" sh -c "lc-detokenize -f ids <'$T/self.ids' >>'$T/self.ids'"
grep -q '^lc-detokenize: stdin: the input is the output file$' "$T/err"; _res $? "says so"
cksum "$T/self.ids" | cmp -s - "$T/ids.sum"; _res $? "the ids untouched"
# a directory operand whose documents include the output file: refused
# before its other files are read (they were appended first)
mkdir "$T/dir" && seq 1 20000 >"$T/dir/a.txt" && echo keep >"$T/dir/out.txt"
fails 1 "lc-cat -i text DIR >>DIR/out.txt" sh -c "lc-cat -i text '$T/dir' >>'$T/dir/out.txt'"
grep -q 'dir/out.txt: the input is the output file' "$T/err"; _res $? "names the file"
is "the file untouched" "$(cat "$T/dir/out.txt")" "keep"
# ... and after another operand, or "-" after one: refused before the
# first operand is read (it was appended first)
seq 1 20000 >"$T/first.txt"
fails 1 "lc-cat -i text FILE DIR >>DIR/out.txt" sh -c "lc-cat -i text '$T/first.txt' '$T/dir' \
	>>'$T/dir/out.txt'"
fails 1 "lc-cat -i text FILE - <f >>f" sh -c "lc-cat -i text '$T/first.txt' - <'$T/dir/out.txt' \
	>>'$T/dir/out.txt'"
is "the file still untouched" "$(cat "$T/dir/out.txt")" "keep"
# a hidden file there is no document (the reader skips it): not refused
ok "lc-tokenize DIR >DIR/.hidden" sh -c "lc-tokenize '$T/dir' >'$T/dir/.tok.lc'"
# a model directory operand holds no documents: not refused
cp -r "$DATA/bart/tiny_bart" "$T/src"
ok "lc-convert SRC DST >SRC/log" sh -c "lc-convert -q '$T/src' '$T/cvt' >'$T/src/convert.log'"
# standard input is checked where it is read: a mode that reads none runs
echo x >"$T/g"
ok "lc-decode --info <f >>f" sh -c "lc-decode --info <'$T/g' >>'$T/g'"
done_testing
