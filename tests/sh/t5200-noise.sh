#!/bin/sh
# lc-noise: the authors' span corruption end to end (the oracle's pairs
# from its documents, bit for bit), determinism, both sentinel
# conventions through lc-tokenize and into lc-train, --concat, the
# errors, and make span-data.
. tests/sh/lib.sh

S=$DATA/span
SPM=${LC_SHARE:-share}/spiece.model
B=$DATA/bart/tiny_bart

# the oracle's five documents (<s> ... </s>, 12 to 8192 tokens) as a token stream
for i in 0 1 2 3 4; do
	od -An -v -td4 -w1000000 "$S/docs/doc$i.i32" | tr -s ' ' | sed 's/^ //'
done >"$T/docs.txt"
lc-cat -i ids "$T/docs.txt" >"$T/docs.lc"

# 1. the authors' pairs: every non-dynamic configuration, both epochs
for cfg in "d0625_s3:" "d10_s3:-r 0.1" "d15_s3:-r 0.15" "d30_s8:-r 0.3 -l 8" "d50_s1:-r 0.5 -l 1"; do
	name=${cfg%%:*} opts=${cfg#*:}
	for e in 1 2; do
		lc-noise $opts --epoch $e --sentinel-start 1001 --truncate-target 1022 "$T/docs.lc" |
			lc-cat -o raw >"$T/got.raw"
		for i in 0 1 2 3 4; do
			cat "$S/cases/${name}_e${e}_i$i/source.i32" "$S/cases/${name}_e${e}_i$i/target.i32"
		done >"$T/want.raw"
		same "$name epoch $e: the authors' sources and targets, bit for bit" "$T/got.raw" "$T/want.raw"
	done
done
ok "--stats" lc-noise --sentinel-start 1001 --stats "$T/docs.lc"
is "--stats: the achieved density and mean span length (the oracle's 837 tokens, 280 spans)" \
	"$(cat "$T/err")" "lc-noise: 5 pairs, 0 skipped; 837 of 13390 body tokens noised (density \
0.062509) in 280 spans (mean length 2.9893); 0 targets truncated"
lc-cat -o info "$T/out" | awk -F'\t' '$1=="doc"' | tr '\t' '\n' | grep '^noise\.\(tokens\|spans\)' |
	tr '\n' ' ' >"$T/counts"
is "per-document counts in the metadata" "$(cat "$T/counts")" \
	"noise.tokens=1 noise.spans=1 noise.tokens=6 noise.spans=2 noise.tokens=62 noise.spans=21 \
noise.tokens=256 noise.spans=85 noise.tokens=512 noise.spans=171 "

# 2. deterministic for a seed; another seed or epoch differs
lc-noise --sentinel-start 1001 --seed 7 "$T/docs.lc" >"$T/s7a"
lc-noise --sentinel-start 1001 --seed 7 "$T/docs.lc" >"$T/s7b"
lc-noise --sentinel-start 1001 --seed 8 "$T/docs.lc" >"$T/s8"
lc-noise --sentinel-start 1001 --seed 7 --epoch 2 "$T/docs.lc" >"$T/s7e2"
same "the same seed: the same pairs" "$T/s7a" "$T/s7b"
! cmp -s "$T/s7a" "$T/s8"; _res $? "another seed: other pairs"
! cmp -s "$T/s7a" "$T/s7e2"; _res $? "another epoch: other pairs"
cat "$T/docs.lc" "$T/docs.lc" | lc-noise --sentinel-start 1001 >"$T/twice"
lc-cat -o info "$T/twice" | grep -c 'noise.index=9' >"$T/n9"
is "indices count on through concatenated streams" "$(cat "$T/n9")" 1

# 3. through lc-tokenize: T5's sentinels with SentencePiece, the authors' with BART
printf 'In the beginning God created the heaven and the earth. And the earth was without \
form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon \
the face of the waters. And God said, Let there be light: and there was light.\n' >"$T/a.txt"
ok "lc-tokenize -m SPM | lc-noise -m SPM" sh -c "lc-tokenize -m '$SPM' '$T/a.txt' |
	lc-noise -m '$SPM' -r 0.15 >'$T/spm.lc'"
lc-cat -o raw "$T/spm.lc" | od -An -v -td4 | tr -s ' ' '\n' | sed '/^$/d' >"$T/spm.ids"
lc-cat -o info "$T/spm.lc" | awk -F'\t' '$4=="source"{print $6}' >"$T/nsrc"
n=$(cat "$T/nsrc")
is "SentencePiece: the source ends with </s>" "$(sed -n "${n}p" "$T/spm.ids")" 1
is "SentencePiece: the target ends with </s>" "$(tail -1 "$T/spm.ids")" 1
is "SentencePiece: the target starts with <extra_id_0> = 32099" "$(sed -n "$((n + 1))p" "$T/spm.ids")" 32099
tail -n +$((n + 1)) "$T/spm.ids" | awk '$1 >= 32000' | tr '\n' ' ' >"$T/sent"
spans=$(lc-cat -o info "$T/spm.lc" | tr '\t' '\n' | sed -n 's/^noise.spans=//p')
is "SentencePiece: sentinels count down from 32099" "$(cat "$T/sent")" \
	"$(awk -v k="$spans" 'BEGIN{for (i = 0; i < k; i++) printf "%d ", 32099 - i}')"
if [ -d "$B" ]; then
	ok "lc-tokenize -m BART | lc-noise -m BART" sh -c "lc-tokenize -m '$B' '$T/a.txt' |
		lc-noise -m '$B' -r 0.15 >'$T/bart.lc'"
	lc-cat -o raw "$T/bart.lc" | od -An -v -td4 | tr -s ' ' '\n' | sed '/^$/d' >"$T/bart.ids"
	n=$(lc-cat -o info "$T/bart.lc" | awk -F'\t' '$4=="source"{print $6}')
	is "BART: the source is <s> ... </s>" "$(head -1 "$T/bart.ids") $(sed -n "${n}p" "$T/bart.ids")" "0 2"
	is "BART: the target is <s> <sentinel_0> ... </s>" \
		"$(sed -n "$((n + 1))p;$((n + 2))p" "$T/bart.ids" | tr '\n' ' ')$(tail -1 "$T/bart.ids")" "0 1000 2"
	ok "--sentinel-start wins over -m" sh -c "lc-tokenize -m '$B' '$T/a.txt' |
		lc-noise -m '$B' -r 0.15 --sentinel-start 1001 | lc-cat -o raw >'$T/b1001.raw'"
	lc-cat -o raw "$T/bart.lc" | od -An -v -td4 | awk '{for (i = 1; i <= NF; i++) print ($i >= 1000 ? $i + 1 : $i)}' >"$T/want1001"
	od -An -v -td4 "$T/b1001.raw" | tr -s ' ' '\n' | sed '/^$/d' >"$T/got1001"
	same "the same pairs, sentinels moved by one" "$T/got1001" "$T/want1001"
	fails 1 "tokens of another tokenizer, outside -m's ids" sh -c "lc-tokenize -m '$SPM' '$T/a.txt' |
		lc-noise -m '$B' >/dev/null"
	grep -q "^lc-noise: document \"$T/a.txt\": tokens of tokenizer .*, the sentinels are -m's" "$T/err"
	_res $? "a warning names the document"
	grep -q "document \"$T/a.txt\": token [0-9]* is [0-9]*, outside the tokenizer's ids (-m)" "$T/err"
	_res $? "and an error the first id outside"
else
	skip "BART sentinels" "no $B"
fi
cat >"$T/config.json" <<'EOF2'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32100,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF2
ok "lc-train reads the pairs" lc-train -q -j 1 --config "$T/config.json" -o "$T/run" --steps 1 \
	--no-rouge -t "$SPM" "$T/spm.lc"

# 4. --span-set: lengths from the set, the same for a seed
lc-noise --sentinel-start 1001 --span-set 4,8,12 "$T/docs.lc" >"$T/dyn1"
lc-noise --sentinel-start 1001 --span-set 4,8,12 --epoch 2 "$T/docs.lc" >"$T/dyn2"
lc-cat -o info "$T/dyn1" | tr '\t' '\n' | sed -n 's/^noise.span-length=//p' | tr '\n' ' ' >"$T/l1"
lc-cat -o info "$T/dyn2" | tr '\t' '\n' | sed -n 's/^noise.span-length=//p' | tr '\n' ' ' >"$T/l2"
grep -qx '\(\(4\|8\|12\) \)\{5\}' "$T/l1"; _res $? "--span-set: each length from the set ($(cat "$T/l1"))"
same "--span-set: the same lengths in another epoch" "$T/l1" "$T/l2"
lc-noise --sentinel-start 1001 --span-set 4,8,12 "$T/docs.lc" >"$T/dyn1b"
same "--span-set: deterministic" "$T/dyn1" "$T/dyn1b"

# 5. --concat: inputs of up to LEN tokens, every document once
awk 'BEGIN{srand(5); for (d = 0; d < 60; d++) {n = 3 + int(rand() * 60); printf "0"; \
	for (i = 0; i < n; i++) printf " %d", 4 + int(rand() * 900); print " 2"}}' >"$T/short.txt"
lc-cat -i ids "$T/short.txt" >"$T/short.lc"
ok "--concat 200" lc-noise --sentinel-start 1001 --concat 200 "$T/short.lc"
cp "$T/out" "$T/c1"
lc-cat -o info "$T/c1" | awk -F'\t' '
	$1 == "doc" { for (i = 4; i <= NF; i++) { split($i, kv, "="); m[kv[1]] = substr($i, length(kv[1]) + 2) }
		ntok = m["noise.tokens"]; nsp = m["noise.spans"]; njoin = split(m["concat"], ix, " ");
		for (k in ix) seen[ix[k]]++; docs++ }
	$1 == "tensor" && $4 == "source" { len = $6 + ntok - nsp; if (len > 200 && njoin > 1) bad++;
		if (len > max) max = len; tot += len }
	END { for (k in seen) if (seen[k] != 1) dup++; printf "%d %d %d %d\n", docs, length(seen), bad + dup, tot }' >"$T/cstat"
set -- $(cat "$T/cstat")
is "--concat: every input document joined once" "$2" 60
is "--concat: no input over 200 tokens" "$3" 0
is "--concat: all tokens kept, each joined document less its <s>" "$4" \
	"$(awk '{t += NF} END {print t - NR}' "$T/short.txt" | awk -v d="$1" '{print $1 + d}')"
[ "$1" -lt 30 ] && [ "$1" -ge 10 ]; _res $? "--concat: fewer, longer inputs ($1)"
lc-cat -o info "$T/c1" | head -1 | cut -f3 >"$T/cname"
is "--concat: inputs are named concat#K" "$(cat "$T/cname")" "concat#0"
lc-noise --sentinel-start 1001 --concat 200 "$T/short.lc" >"$T/c2"
same "--concat: deterministic" "$T/c1" "$T/c2"
lc-noise --sentinel-start 1001 --concat 200 --epoch 2 "$T/short.lc" >"$T/c3"
! cmp -s "$T/c1" "$T/c3"; _res $? "--concat: another epoch groups differently"
ok "--concat 4: documents longer are alone" lc-noise -q --sentinel-start 1001 --concat 4 "$T/short.lc"
is "as many inputs as documents" "$(lc-cat -o info "$T/out" | grep -c '^doc')" 60

# 6. errors and warnings
printf '5 6 7\n8\n0 9 2\n1 2 3 4 5 6 7 8 9 10 11 12\n' | lc-cat -i ids >"$T/tiny.lc"
ok "too short: skipped" lc-noise --sentinel-end 99 "$T/tiny.lc"
is "one pair" "$(lc-cat -o info "$T/out" | grep -c '^doc')" 1
is "a warning with the count and the first" "$(cat "$T/err")" "lc-noise: 3 of 4 documents too \
short to noise were skipped (the first, \"stdin:1\": a body of 1 token is too short to noise (the \
authors' code fails on it))"
ok "-q: no warning" lc-noise -q --sentinel-end 99 "$T/tiny.lc"
is "nothing on stderr" "$(cat "$T/err")" ""
printf '1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n' | lc-cat -i ids >"$T/d55.lc"
fails 1 "density 0.55, mean 1 (the authors' ValueError): no document left" lc-noise -r 0.55 -l 1 \
	--sentinel-end 99 "$T/d55.lc"
grep -q "every document (1) too short to noise: no pairs (the first, .*11 noise tokens in 11 spans leave 9 tokens for the 11 spans" \
	"$T/err"; _res $? "says why"
lc-noise -r 0.55 -l 1 --sentinel-end 99 "$T/d55.lc" >"$T/none.lc" 2>/dev/null
fails 1 "... and leaves a stream no reader takes whole" lc-cat "$T/none.lc"
lc-cat -i text "$T/a.txt" >"$T/text.lc"
fails 1 "a text stream" lc-noise --sentinel-end 99 "$T/text.lc"
is "names the file and the document" "$(cat "$T/err")" "lc-noise: $T/text.lc: document \
\"$T/a.txt\": no \"tokens\" record of i32 ids (a token stream, as lc-tokenize writes)"
fails 1 "more spans than T5's sentinels" lc-noise -m "$SPM" "$T/docs.lc"
is "names the document and the count" "$(cat "$T/err")" "lc-noise: $T/docs.lc: document \
\"$T/docs.txt:5\": 171 noise spans, more than the sentinels available (100)"
fails 1 "--max-spans" lc-noise --sentinel-start 1001 --max-spans 50 "$T/docs.lc"
fails 2 "no sentinels" lc-noise "$T/docs.lc"
is "says how to give them" "$(head -1 "$T/err")" "lc-noise: no sentinel ids: give -m MODEL (its \
tokenizer has them), --sentinel-start ID or --sentinel-end ID"
fails 2 "a bad density" lc-noise --sentinel-end 9 -r 1.5 "$T/docs.lc"
is "names it" "$(head -1 "$T/err")" "lc-noise: -r/--density: expected a number in [0, 1], got '1.5'"
fails 2 "a mean span below 1" lc-noise --sentinel-end 9 -l 0.5 "$T/docs.lc"
fails 2 "-l with --span-set" lc-noise --sentinel-end 9 -l 3 --span-set 4,8 "$T/docs.lc"
fails 2 "a bad --span-set" lc-noise --sentinel-end 9 --span-set 4,x "$T/docs.lc"
fails 2 "both conventions" lc-noise --sentinel-end 9 --sentinel-start 9 "$T/docs.lc"
fails 2 "a bad --ends" lc-noise --sentinel-end 9 --ends 1 "$T/docs.lc"
fails 2 "--concat 0" lc-noise --sentinel-end 9 --concat 0 "$T/docs.lc"
fails 1 "a truncated stream" sh -c "head -c 100 '$T/docs.lc' | lc-noise --sentinel-end 9 >/dev/null"

# 7. make span-data on a small corpus (as t0200: only where make would
# use this build's settings, and without the jobserver of a make around us)
OARG=${O:-build}
MF=$(printf '%s' "${MAKEFLAGS:-}" | sed 's/--jobserver-[a-z]*=[^ ]*//g')
mk() { env -u MFLAGS -u MAKELEVEL MAKEFLAGS="$MF" make -s --no-print-directory O="$OARG" "$@"; }
printf 'lc-t5200-id:\n\t@echo '"'"'$(BUILD_ID)'"'"'\n' | mk -f Makefile -f - lc-t5200-id >"$T/id" 2>/dev/null
if ! need make || [ ! -f Makefile ]; then
	skip "make span-data" "no make"
elif ! cmp -s "$T/id" "$OARG/.settings"; then
	skip "make span-data" "$OARG was built with other settings than make's here"
else
	mkdir "$T/corpus"
	cp "$T/a.txt" "$T/corpus/a.txt"
	printf 'And God called the light Day, and the darkness he called Night. And the evening \
and the morning were the first day.\n' >"$T/corpus/b.txt"
	ok "make span-data CORPUS=DIR SPAN_OUT=..." mk span-data CORPUS="$T/corpus" SPAN_OUT="$T/sd.lc"
	grep -q "^$T/sd.lc: 2 pairs" "$T/out"; _res $? "says how many pairs"
	lc-cat "$T/corpus" -i text | lc-tokenize -m share/models/demo | lc-noise -m share/models/demo \
		-r 0.0625 -l 3 --seed 3 >"$T/sd.want"
	same "the pipeline's pairs" "$T/sd.lc" "$T/sd.want"
	fails 2 "make span-data with a missing CORPUS" mk span-data CORPUS="$T/none" SPAN_OUT="$T/sd2.lc"
	[ ! -e "$T/sd2.lc" ] && [ ! -e "$T/sd2.lc.tmp" ]; _res $? "leaves nothing"
fi

# shards noised apart and merged are one run's pairs: a shard's document
# is noised at its lc.index (its place in the shard drew other noise, and
# every shard's first document the same)
grep -v '^$' "${LC_SHARE:-share}/samples/sample.txt" | head -40 | lc-tokenize -q -d line -m "$SPM" \
	>"$T/n40.lc"
lc-noise -q -m "$SPM" "$T/n40.lc" >"$T/whole.lc"
lc-cat -q --shard 3 -O "$T/nz" "$T/n40.lc"
for k in 0 1 2; do lc-noise -q -m "$SPM" "$T/nz.$k.lc" >"$T/nz.$k.out"; done
ok "the noised shards merge" lc-cat -q --merge "$T/nz.0.out" "$T/nz.1.out" "$T/nz.2.out"
same "into one run's pairs, byte for byte" "$T/out" "$T/whole.lc"
done_testing
