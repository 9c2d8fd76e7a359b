#!/bin/sh
# A producer killed at any write of its stream (LC_FAULT=stream:K, SIGKILL,
# as a crash or the OOM killer would) never leaves a stream that reads as
# complete: every reader refuses it, naming where it broke.
. tests/sh/lib.sh

awk 'BEGIN { for (d = 1; d <= 12; d++) { for (i = 0; i < 40 * d; i++) printf "%d ", (i * 7 + d) % 1000; print "" } }' \
	>"$T/ids.txt"
ok "the whole stream" sh -c "lc-cat -i ids '$T/ids.txt' >'$T/full.lc'"
n=$(lc-cat -o info "$T/full.lc" | grep -c '^doc')
is "12 documents" "$n" 12
k=1 bad= killed=0
while [ $k -le 80 ]; do
	LC_FAULT=stream:$k lc-cat -i ids "$T/ids.txt" >"$T/part.lc" 2>/dev/null
	r=$?
	if [ $r = 137 ]; then
		killed=$((killed + 1))
		lc-cat "$T/part.lc" >/dev/null 2>"$T/part.err" && bad="$bad $k"
		grep -q 'lc-cat: .*part.lc: .*\(truncated\|empty input\|no end-of-stream\)' "$T/part.err" ||
			bad="$bad $k(message)"
	else
		cmp -s "$T/part.lc" "$T/full.lc" || bad="$bad $k(rc $r)"
	fi
	k=$((k + 1))
done
is "killed at each of the first 80 writes, no partial stream reads as whole" "$bad" ""
[ $killed -ge 40 ]; _res $? "the kills landed ($killed of 80)"

# cut between two documents: the message names the last one read whole
printf '' | lc-cat -i text -d line >"$T/none.lc"
printf 'a\n' | lc-cat -i text -d line >"$T/one.lc"
printf 'a\nb\n' | lc-cat -i text -d line >"$T/two.lc"
eos=$(($(wc -c <"$T/none.lc") - 32))
head -c $(($(wc -c <"$T/one.lc") - eos + 5)) "$T/two.lc" >"$T/cut.lc"
fails 1 "cut inside the second document's first record" lc-cat "$T/cut.lc"
grep -q 'cut.lc: after document 0 "stdin:1": byte [0-9]*: truncated stream' "$T/err"
_res $? "names the document before the cut"
# a writer that failed before its first document (a missing input at the
# head of a pipeline) leaves only the stream's start: said as such
head -c 32 "$T/none.lc" >"$T/start.lc"
fails 1 "only the start record" lc-cat "$T/start.lc"
grep -q 'start.lc: byte 32: truncated stream (it ends after its start, before any document: the program writing it failed?)' "$T/err"
_res $? "says what it is"
fails 1 "a pipeline whose first program fails" sh -c "lc-cat -i text '$T/missing' | lc-tokenize | lc-cat"
grep -q '^lc-cat: stdin: byte 32: truncated stream (it ends after its start' "$T/err"; _res $? "the last program says why"
done_testing
