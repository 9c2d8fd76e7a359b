#!/bin/sh
# lc-encode with several threads encodes short documents several at a
# time, one thread each: the states are the same bytes as one at a time
# on one thread, in input order, long documents mixed in; a bad document
# among them is an error naming it after the ones before it are written.
. tests/sh/lib.sh
B=$DATA/bart/tiny_bart

# 30 short documents and two of 9000 tokens (over the overlap limit)
awk 'BEGIN { srand(3); for (d = 0; d < 32; d++) { n = (d == 7 || d == 20) ? 9000 : 2 + int(rand() * 400);
	for (i = 1; i < n; i++) printf "%d ", 5 + int(rand() * 31000); print 1 } }' >"$T/ids"
lc-cat -i ids <"$T/ids" >"$T/ids.lc"
ok "one thread" sh -c "lc-encode -q -j 1 '$T/ids.lc' >'$T/j1'"
ok "two threads" sh -c "lc-encode -q -j 2 '$T/ids.lc' >'$T/j2'"
same "the same states" "$T/j1" "$T/j2"
ok "three threads, bf16" sh -c "lc-encode -q -j 3 --dtype bf16 '$T/ids.lc' >'$T/j3'"
ok "one thread, bf16" sh -c "lc-encode -q -j 1 --dtype bf16 '$T/ids.lc' >'$T/j1b'"
same "the same bf16 states" "$T/j1b" "$T/j3"
is "32 documents in order" "$(lc-cat -o info "$T/j2" | awk '$1 == "doc" { printf "%s ", $3 }')" \
	"$(seq 1 32 | sed 's/^/stdin:/' | tr '\n' ' ')"

# a lone short document goes alone on all threads (not to one thread of
# the batch, leaving the others idle): the same states as on one thread
head -1 "$T/ids" | lc-cat -i ids >"$T/one.lc"
ok "a lone short document, two threads" sh -c "lc-encode -q -j 2 '$T/one.lc' >'$T/one2'"
ok "one thread" sh -c "lc-encode -q -j 1 '$T/one.lc' >'$T/one1'"
same "the same states" "$T/one1" "$T/one2"

# BART: the same, and a document too long for it in the middle
printf '0 5 6 7 8 2\n0 9 10 11 2\n0 12 13 2\n' | lc-cat -i ids >"$T/b.lc"
ok "BART, one thread" sh -c "lc-encode -q -j 1 -m '$B' '$T/b.lc' >'$T/b1'"
ok "BART, two threads" sh -c "lc-encode -q -j 2 -m '$B' '$T/b.lc' >'$T/b2'"
same "BART: the same states" "$T/b1" "$T/b2"
awk 'BEGIN { printf "0"; for (i = 0; i < 1100; i++) printf " 7"; print " 2" }' >"$T/long"
{ printf '0 5 6 2\n0 8 9 2\n'; cat "$T/long"; printf '0 10 2\n'; } | lc-cat -i ids >"$T/bad.lc"
fails 1 "too long for BART, in a batch" lc-encode -q -j 2 -m "$B" "$T/bad.lc"
grep -q 'document "stdin:3": 1102 tokens, more than the 1024' "$T/err"; _res $? "names it"
is "the two before it are written" "$(lc-cat -o info "$T/out" 2>/dev/null | grep -c '^doc')" 2
done_testing
