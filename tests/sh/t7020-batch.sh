#!/bin/sh
# lc-decode --batch: documents decoded together give the summaries they
# give one at a time, in input order, whatever the batch size, the dtype
# of the states or the thread count; a bad document in a batch is an
# error naming it after the documents before it are written. (The
# batched decoder itself is checked against the oracle's goldens in
# test_decoder and test_bart.)
. tests/sh/lib.sh
B=$DATA/bart/tiny_bart

# 17 documents of the demo model (the default model), uneven lengths: --batch
# 16 leaves a batch of one after a full one
awk 'BEGIN { srand(5); for (d = 0; d < 17; d++) { n = 5 + int(rand() * 300);
	for (i = 0; i < n; i++) printf "%d ", 5 + int(rand() * 31000); print 1 } }' >"$T/ids"
lc-cat -i ids <"$T/ids" >"$T/ids.lc"
ok "encode" sh -c "lc-encode -q '$T/ids.lc' >'$T/h.lc'"
ok "encode bf16" sh -c "lc-encode -q --dtype bf16 '$T/ids.lc' >'$T/h16.lc'"
ok "one at a time" sh -c "lc-decode -q -f ids --batch 1 '$T/h.lc' >'$T/one'"
is "one summary per document" "$(wc -l <"$T/one" | tr -d ' ')" 17
for b in 2 7 16 64; do
	ok "--batch $b" sh -c "lc-decode -q -f ids --batch $b '$T/h.lc' >'$T/b$b'"
	same "--batch $b = one at a time" "$T/one" "$T/b$b"
done
ok "default batch, 1 thread" sh -c "lc-decode -q -j 1 -f ids '$T/h.lc' >'$T/j1'"
same "default batch = one at a time" "$T/one" "$T/j1"
ok "default batch, 3 threads" sh -c "lc-decode -q -j 3 -f ids '$T/h.lc' >'$T/j3'"
same "3 threads = 1 thread" "$T/j1" "$T/j3"
ok "bf16 states, one at a time" sh -c "lc-decode -q -f ids --batch 1 '$T/h16.lc' >'$T/one16'"
ok "bf16 states, batched" sh -c "lc-decode -q -f ids '$T/h16.lc' >'$T/b16'"
same "bf16: batched = one at a time" "$T/one16" "$T/b16"

# names and order in every format
ok "jsonl, batched" sh -c "lc-decode -q -f jsonl '$T/h.lc' >'$T/b.jsonl'"
ok "jsonl, one at a time" sh -c "lc-decode -q -f jsonl --batch 1 '$T/h.lc' >'$T/one.jsonl'"
same "jsonl: batched = one at a time" "$T/one.jsonl" "$T/b.jsonl"
is "jsonl names in input order" "$(sed -n 's/^{"id": "\([^"]*\)".*/\1/p' "$T/b.jsonl" | tr '\n' ' ')" \
	"$(seq 1 17 | sed 's/^/stdin:/' | tr '\n' ' ')"
ok "stream, batched" sh -c "lc-decode -q -f stream '$T/h.lc' | lc-cat -o info >'$T/b.info'"
ok "stream, one at a time" sh -c "lc-decode -q -f stream --batch 1 '$T/h.lc' | lc-cat -o info >'$T/one.info'"
same "stream: batched = one at a time" "$T/one.info" "$T/b.info"

# sampling, beams and several sequences, batched
ok "sampled, batched" sh -c "lc-decode -q -f ids --sample --seed 9 --num-return-sequences 2 -b 1 '$T/h.lc' >'$T/s1'"
ok "sampled, one at a time" sh -c "lc-decode -q -f ids --sample --seed 9 --num-return-sequences 2 -b 1 --batch 1 '$T/h.lc' >'$T/s2'"
same "sampled: batched = one at a time" "$T/s2" "$T/s1"
ok "3 beams, 2 sequences, batched" sh -c "lc-decode -q -f ids -b 3 --num-return-sequences 2 --batch 5 '$T/h.lc' >'$T/m1'"
ok "3 beams, 2 sequences, alone" sh -c "lc-decode -q -f ids -b 3 --num-return-sequences 2 --batch 1 '$T/h.lc' >'$T/m2'"
same "beams: batched = one at a time" "$T/m2" "$T/m1"

# a bad document inside a batch: the ones before it come out, then the
# error names it; the same as one at a time
printf '5 6 7 8 2\n9 10 11 2\n12 13 2\n' | lc-cat -i ids | lc-encode -q -m "$B" >"$T/good.lc"
cat "$T/good.lc" "$DATA/nonfinite/hidden_bad.lcs" "$T/good.lc" >"$T/mixed.lc"
fails 1 "a NaN document in a batch" lc-decode -q -m "$B" -f ids --max-new 4 "$T/mixed.lc"
grep -q 'document "nan-row1": the encoder states. row 1 of 3 holds NaN' "$T/err"
_res $? "names the document and the row"
is "the three documents before it are written" "$(wc -l <"$T/out" | tr -d ' ')" 3
cp "$T/out" "$T/mixed.batched"
fails 1 "the same, one at a time" lc-decode -q -m "$B" -f ids --max-new 4 --batch 1 "$T/mixed.lc"
same "the same output" "$T/out" "$T/mixed.batched"
fails 2 "--batch 0" lc-decode --batch 0 "$T/h.lc"
grep -q -- '--batch' "$T/err"; _res $? "names the option"
done_testing
