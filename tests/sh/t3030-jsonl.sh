#!/bin/sh
# JSON Lines input (--jsonl): lc-tokenize reads each line as a document
# named by its id or FILE:LINE, exactly as the same texts read as separate
# documents; every kind of bad line is an error naming FILE:LINE, or is
# skipped and counted with --skip-bad; unicode escapes decode to the right
# UTF-8; compressed files work; lc-gsg-split and lc-train take (source,
# target) pairs from JSON Lines records exactly as from the stream path.
. tests/sh/lib.sh

need lc-tokenize && need lc-cat || skip_all "lc-tokenize or lc-cat is not built"
S=$DATA/spm
[ -f "$S/t5like.model" ] || skip_all "no tests/data/spm"
export LC_TOKENIZER=$S/t5like.model

# names of the documents of a stream, one per line
names() { lc-cat -o info "$@" | awk -F'\t' '$1 == "doc" { print $3 }'; }

# --- the same texts as JSON Lines and as files
cat >"$T/a.jsonl" <<'EOF'
{"id": "first", "text": "The first document.\nIt has two lines.", "n": 1}
{"id": 42, "text": "A second, longer document about tokens."}

  {"text": "Third, without an id; after a blank line."}
{"id": null, "text": "Fourth: a null id.", "extra": {"nested": [1, 2, {"a": null}]}}
{"text":"","id":"empty"}
EOF
printf 'The first document.\nIt has two lines.' >"$T/1.txt"
printf 'A second, longer document about tokens.' >"$T/2.txt"
printf 'Third, without an id; after a blank line.' >"$T/3.txt"
printf 'Fourth: a null id.' >"$T/4.txt"
: >"$T/5.txt"
for i in 1 2 3 4 5; do lc-tokenize -f ids "$T/$i.txt"; done >"$T/files.ids"
ok "--jsonl -f ids" sh -c "lc-tokenize --jsonl -f ids '$T/a.jsonl' >'$T/jsonl.ids'"
same "each line encodes as the same text in a file" "$T/jsonl.ids" "$T/files.ids"
ok "--jsonl to a stream" sh -c "lc-tokenize --jsonl --id id '$T/a.jsonl' >'$T/a.lc'"
lc-cat -o ids "$T/a.lc" >"$T/stream.ids"
same "the stream holds the same ids" "$T/stream.ids" "$T/files.ids"
is "names: string id, integer id, FILE:LINE when absent or null" "$(names "$T/a.lc" | tr '\n' '|')" \
	"first|42|$T/a.jsonl:4|$T/a.jsonl:5|empty|"
is "without --id every document is FILE:LINE (blank lines counted)" \
	"$(lc-tokenize --jsonl "$T/a.jsonl" | names | tr '\n' '|')" \
	"$T/a.jsonl:1|$T/a.jsonl:2|$T/a.jsonl:4|$T/a.jsonl:5|$T/a.jsonl:6|"
lc-tokenize "$T/1.txt" "$T/2.txt" "$T/3.txt" "$T/4.txt" "$T/5.txt" | lc-cat -o info |
	awk -F'\t' '{ $3 = ""; print }' >"$T/files.info"
lc-cat -o info "$T/a.lc" | awk -F'\t' '{ $3 = ""; print }' >"$T/jsonl.info"
same "records, shapes and tokenizer as separate documents (names aside)" "$T/jsonl.info" "$T/files.info"
is "an empty text is a document of just </s>" "$(sed -n 5p "$T/jsonl.ids")" "1"
ok "--text FIELD" sh -c "printf '{\"body\": \"A second, longer document about tokens.\"}\n' |
	lc-tokenize --jsonl --text body -f ids >'$T/body.ids'"
is "the field named by --text is the text" "$(cat "$T/body.ids")" "$(sed -n 2p "$T/files.ids")"
ok "standard input" sh -c "lc-tokenize --jsonl <'$T/a.jsonl' >'$T/in.lc'"
is "standard input names lines stdin:LINE" "$(names "$T/in.lc" | head -2 | tr '\n' '|')" "stdin:1|stdin:2|"
printf '{"text": "CRLF line"}\r\n{"text": "x"}\r\n' >"$T/crlf.jsonl"
is "CRLF line ends" "$(lc-tokenize --jsonl -f ids "$T/crlf.jsonl" | wc -l | tr -d ' ')" 2
printf '\357\273\277{"text": "after a byte order mark"}\n' >"$T/bom.jsonl"
printf 'after a byte order mark' >"$T/bom.txt"
is "a UTF-8 byte order mark is ignored" "$(lc-tokenize --jsonl -f ids "$T/bom.jsonl")" \
	"$(lc-tokenize -f ids "$T/bom.txt")"
printf '{"text": "no newline at the end"}' >"$T/nonl.jsonl"
is "a last line without a newline" "$(lc-tokenize --jsonl "$T/nonl.jsonl" | names)" "$T/nonl.jsonl:1"
: >"$T/empty.jsonl"
ok "an empty file" sh -c "lc-tokenize --jsonl '$T/empty.jsonl' >'$T/empty.lc'"
is "gives no documents" "$(names "$T/empty.lc" | wc -l | tr -d ' ')" 0

# --- unicode escapes decode to UTF-8 (lc-gsg-split without -m keeps the bytes)
cat >"$T/u.jsonl" <<'EOF'
{"article": "caf\u00e9 \u00C9t\u00e9 \ud83d\ude00 \u4e2d \"q\" \\ \/ \t|", "abstract": "\u20ac"}
EOF
printf 'caf\303\251 \303\211t\303\251 \360\237\230\200 \344\270\255 "q" \\ / \t|' >"$T/u.txt"
printf '\342\202\254' >>"$T/u.txt"
ok "escapes through lc-gsg-split (text pairs)" sh -c \
	"lc-gsg-split --jsonl --source article --target abstract '$T/u.jsonl' | lc-cat -o raw >'$T/u.raw'"
same "\\u00e9, surrogate pairs and the other escapes decode to UTF-8" "$T/u.raw" "$T/u.txt"
printf '{"text": "caf\\u00e9 \\ud83d\\ude00"}\n' >"$T/u2.jsonl"
printf 'caf\303\251 \360\237\230\200' >"$T/u2.txt"
is "escaped and literal UTF-8 encode alike" "$(lc-tokenize --jsonl -f ids "$T/u2.jsonl")" \
	"$(lc-tokenize -f ids "$T/u2.txt")"
printf '{"text": "caf\303\251 \360\237\230\200"}\n' >"$T/u3.jsonl"
is "raw UTF-8 in the JSON" "$(lc-tokenize --jsonl -f ids "$T/u3.jsonl")" "$(lc-tokenize -f ids "$T/u2.txt")"

# --- compressed and archived JSON Lines go through the same reader
for c in gzip xz zstd bzip2; do
	if need $c; then
		$c -c <"$T/a.jsonl" >"$T/a.jsonl.$c"
		lc-tokenize --jsonl -f ids "$T/a.jsonl.$c" >"$T/$c.ids"
		same "a $c-compressed file" "$T/$c.ids" "$T/files.ids"
	else
		skip "a $c-compressed file" "no $c"
	fi
done
if need gzip; then
	is "a compressed file names lines by its path" "$(lc-tokenize --jsonl "$T/a.jsonl.gzip" | names | sed -n 3p)" \
		"$T/a.jsonl.gzip:4"
	(cd "$T" && tar cf - a.jsonl u2.jsonl | gzip >j.tar.gz)
	is "an archive: each member's lines, named MEMBER:LINE" \
		"$(lc-tokenize --jsonl "$T/j.tar.gz" | names | tr '\n' '|')" \
		"a.jsonl:1|a.jsonl:2|a.jsonl:4|a.jsonl:5|a.jsonl:6|u2.jsonl:1|"
else
	skip "archives" "no gzip"
fi

# a zip member without a name (a damaged or hostile archive) goes by the archive's
{ printf '\120\113\003\004\012\000\000\000\000\000\000\000\000\000\250\312\073\015\016\000\000\000\016\000\000\000\000\000\000\000'
  printf '{"text": "x"}\n'
  printf '\120\113\001\002\024\000\012\000\000\000\000\000\000\000\000\000\250\312\073\015\016\000\000\000\016\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000'
  printf '\120\113\005\006\000\000\000\000\001\000\001\000\056\000\000\000\054\000\000\000\000\000'; } >"$T/noname.zip"
ok "a zip member without a name" sh -c "lc-tokenize --jsonl '$T/noname.zip' >'$T/noname.lc'"
is "  is named by the archive" "$(names "$T/noname.lc")" "$T/noname.zip:1"

# --- bad lines: each an error naming FILE:LINE, exit 1 as other data errors
bad() {   # name, line, pattern of the message
	printf '{"text": "good", "id": "g"}\n%s\n' "$2" >"$T/bad.jsonl"
	fails 1 "bad line: $1" lc-tokenize --jsonl --id id -f ids "$T/bad.jsonl"
	if grep -q "^lc-tokenize: $T/bad.jsonl:2: .*$3" "$T/err"; then _res 0 "  the message names FILE:2 and says $3"
	else echo "# message: $(cat "$T/err")"; _res 1 "  the message names FILE:2 and says $3"; fi
}
bad "invalid JSON" '{"text": "a",}' "invalid JSON"
bad "truncated JSON" '{"text": "a' "invalid JSON"
bad "trailing garbage" '{"text": "a"} x' "invalid JSON"
bad "an array" '["text", "a"]' "an array, not a JSON object"
bad "a string" '"text"' "a string, not a JSON object"
bad "a number" '12' "an integer, not a JSON object"
bad "null" 'null' "null, not a JSON object"
bad "no text field" '{"txt": "a"}' 'no "text" field'
bad "a null text" '{"text": null}' 'the "text" field is null, not a string'
bad "a number for text" '{"text": 5}' '"text" field is an integer, not a string'
bad "an object for text" '{"text": {"a": 1}}' '"text" field is an object, not a string'
bad "a record with an id: the id named" '{"id": 7, "text": 5}' 'id "7": the "text" field is an integer, not a string'
bad "a bad id is found first" '{"id": "", "text": 5}' 'the id field "id" is empty'
bad "a BOM counts in byte positions" "$(printf '\357\273\277{"text": "caf\351"}')" "invalid UTF-8 at byte 17"
bad "invalid UTF-8" "$(printf '{"text": "caf\351"}')" "invalid UTF-8 at byte 14"
bad "a truncated UTF-8 sequence" "$(printf '{"text": "\342\202"}')" "invalid UTF-8"
bad "a lone surrogate" '{"text": "\ud800 x"}' "invalid JSON.*Unicode"
bad "a low surrogate alone" '{"text": "\udc00"}' "invalid JSON.*Unicode"
bad "a bad escape" '{"text": "\q"}' "invalid JSON"
bad "\\u0000" '{"text": "a\u0000b"}' 'holds \\u0000'
bad "a raw control character" "$(printf '{"text": "a\tb"}')" "invalid JSON.*control character"
bad "a key given twice" '{"text": "a", "text": "b"}' "a key given twice"
bad "an id that is a float" '{"text": "a", "id": 1.5}' '"id" is a number, not a string or an integer'
bad "an id that is true" '{"text": "a", "id": true}' '"id" is true'
bad "an id that is an array" '{"text": "a", "id": [1]}' '"id" is an array'
bad "an empty id" '{"text": "a", "id": ""}' '"id" is empty'
bad "an id with a tab" '{"text": "a", "id": "x\ty"}' '"id" holds a control character'
bad "an integer too big" '{"text": "a", "id": 99999999999999999999}' "invalid JSON"
bad "nesting too deep" "$(i=0; while [ $i -lt 3000 ]; do printf '['; i=$((i + 1)); done)" "invalid JSON"
printf '{"text": "good"}\n\n{"text": 1}\n' >"$T/bad3.jsonl"
fails 1 "the line number counts blank lines" lc-tokenize --jsonl "$T/bad3.jsonl"
grep -q "bad3.jsonl:3:" "$T/err"; _res $? "  FILE:3"
fails 1 "a bad line on standard input" sh -c "printf '{\"text\": 1}\n' | lc-tokenize --jsonl"
grep -q "^lc-tokenize: stdin:1: " "$T/err"; _res $? "  named stdin:1"
if need gzip; then
	printf '{"text": "ok"}\n{"text": "ok"}\n{oops}\n' | gzip >"$T/bad.jsonl.gz"
	fails 1 "a bad line in a compressed file" lc-tokenize --jsonl "$T/bad.jsonl.gz"
	grep -q "bad.jsonl.gz:3: invalid JSON" "$T/err"; _res $? "  named FILE:3"
fi
lc-tokenize -q "$T/1.txt" >"$T/one.lc"
fails 1 "an lc stream is not JSON Lines" lc-tokenize --jsonl "$T/one.lc"
grep -q "not JSON Lines" "$T/err"; _res $? "  and the message says so"
fails 1 "a missing input" lc-tokenize --jsonl "$T/nonexistent.jsonl"

# --- --skip-bad: skipped and counted, the good lines keep their names
cat >"$T/mixed.jsonl" <<'EOF'
{"text": "one", "id": "a"}
{"text": 2, "id": "b"}
not json
{"text": "three"}
[]

{"text": "four", "id": 4}
{"id": "c"}
EOF
ok "--skip-bad" sh -c "lc-tokenize --jsonl --id id --skip-bad '$T/mixed.jsonl' >'$T/mixed.lc' 2>'$T/mixed.err'"
is "the good lines, named" "$(names "$T/mixed.lc" | tr '\n' '|')" "a|$T/mixed.jsonl:4|4|"
grep -q "^lc-tokenize: skipped 4 bad JSON lines (the first: $T/mixed.jsonl:2: " "$T/mixed.err"
_res $? "standard error says how many were skipped and the first"
is "one message" "$(wc -l <"$T/mixed.err" | tr -d ' ')" 1
cp "$T/mixed.jsonl" "$T/mixed.copy.jsonl"    # no --id: named by file and line
ok "--skip-bad across files: the count adds up" sh -c \
	"lc-tokenize --jsonl --skip-bad -f ids '$T/mixed.jsonl' '$T/mixed.copy.jsonl' >/dev/null 2>'$T/m2.err'"
grep -q "skipped 8 bad JSON lines" "$T/m2.err"; _res $? "  8 skipped"
ok "--skip-bad with nothing bad" sh -c "lc-tokenize --jsonl --skip-bad '$T/a.jsonl' >/dev/null 2>'$T/m3.err'"
is "  says nothing" "$(cat "$T/m3.err")" ""
printf '{"text": "caf\351"}\n{"text": "ok"}\n' >"$T/mixed2.jsonl"
is "--skip-bad skips invalid UTF-8" "$(lc-tokenize --jsonl --skip-bad -f ids "$T/mixed2.jsonl" 2>/dev/null)" \
	"$(printf ok | lc-tokenize -f ids)"

# --- usage
fails 2 "--text without --jsonl" lc-tokenize --text body "$T/1.txt"
fails 2 "--id without --jsonl" lc-tokenize --id id "$T/1.txt"
fails 2 "--skip-bad without --jsonl" lc-tokenize --skip-bad "$T/1.txt"
fails 2 "--jsonl with -d" lc-tokenize --jsonl -d line "$T/a.jsonl"
lc-tokenize --help >"$T/help"
for o in --jsonl --text --id --skip-bad; do
	grep -q -- "$o" "$T/help"; _res $? "lc-tokenize --help lists $o"
done

# --- lc-gsg-split: pairs from JSON Lines records equal the texts tokenized alone
need lc-gsg-split || skip_all "lc-gsg-split is not built"
cat >"$T/p.jsonl" <<'EOF'
{"id": "p1", "article": "The committee met on Monday. It approved the budget for next year.\nMembers disagreed on roads.", "abstract": "The budget was approved."}
{"id": 2, "article": "Rain fell all week. Rivers rose.", "abstract": "A wet week: rivers rose.", "other": 3}
{"article": "A document with <extra_id_0> a marker.", "abstract": ""}
EOF
printf 'The committee met on Monday. It approved the budget for next year.\nMembers disagreed on roads.' >"$T/s1"
printf 'The budget was approved.' >"$T/t1"
printf 'Rain fell all week. Rivers rose.' >"$T/s2"
printf 'A wet week: rivers rose.' >"$T/t2"
printf 'A document with <extra_id_0> a marker.' >"$T/s3"
: >"$T/t3"
ok "lc-gsg-split --jsonl --source --target -m" sh -c \
	"lc-gsg-split --jsonl --source article --target abstract --id id -m '$S/t5like.model' '$T/p.jsonl' >'$T/p.lc'"
lc-tokenize "$T/s1" "$T/t1" "$T/s2" "$T/t2" "$T/s3" "$T/t3" | lc-cat -o raw >"$T/pt.raw"
lc-cat -o raw "$T/p.lc" >"$T/p.raw"
same "source and target ids are lc-tokenize's of each text (with </s>)" "$T/p.raw" "$T/pt.raw"
is "pairs named by id or FILE:LINE" "$(names "$T/p.lc" | tr '\n' '|')" "p1|2|$T/p.jsonl:3|"
is "each pair: an i32 source and target" \
	"$(lc-cat -o info "$T/p.lc" | awk -F'\t' '$1 == "tensor" { printf "%s:%s ", $4, $5 }')" \
	"source:i32 target:i32 source:i32 target:i32 source:i32 target:i32 "
ok "without -m: text pairs" sh -c "lc-gsg-split --jsonl --source article --target abstract '$T/p.jsonl' | lc-cat -o raw >'$T/ptext.raw'"
cat "$T/s1" "$T/t1" "$T/s2" "$T/t2" "$T/s3" "$T/t3" >"$T/ptext.want"
same "the texts as they are (no sentence split)" "$T/ptext.raw" "$T/ptext.want"
ok "-f text" sh -c "lc-gsg-split -f text --jsonl --target abstract '$T/p.jsonl' >'$T/p.txt'"
is "-f text shows each pair" "$(sed -n '1p;2p;7p' "$T/p.txt" | tr '\n' '|')" \
	"== doc $T/p.jsonl:1|== target|== doc $T/p.jsonl:2|"
# GSG of a JSON Lines field equals GSG of the same texts as documents
lc-gsg-split -r 0.5 -m "$S/t5like.model" "$T/s1" "$T/s2" "$T/s3" >"$T/g.lc" 2>/dev/null
ok "lc-gsg-split --jsonl --text article" sh -c \
	"lc-gsg-split -r 0.5 --jsonl --text article -m '$S/t5like.model' '$T/p.jsonl' >'$T/gj.lc' 2>/dev/null"
lc-cat -o raw "$T/g.lc" >"$T/g.raw"
lc-cat -o raw "$T/gj.lc" >"$T/gj.raw"
same "GSG pairs of a field equal those of the texts as files" "$T/gj.raw" "$T/g.raw"
lc-cat -o info "$T/g.lc" | awk -F'\t' '{ $3 = ""; print }' >"$T/g.info"
lc-cat -o info "$T/gj.lc" | awk -F'\t' '{ $3 = ""; print }' >"$T/gj.info"
same "with the same metadata" "$T/gj.info" "$T/g.info"
is "sentences were selected" "$(lc-cat -o info "$T/gj.lc" | grep -c 'selected=[1-9]')" 2
printf '{"article": "x", "abstract": 1}\n' >"$T/pbad.jsonl"
fails 1 "lc-gsg-split: a bad line" lc-gsg-split --jsonl --source article --target abstract "$T/pbad.jsonl"
grep -q "pbad.jsonl:1: the \"abstract\" field is an integer" "$T/err"; _res $? "  names FILE:LINE and the field"
ok "lc-gsg-split --skip-bad" sh -c "cat '$T/pbad.jsonl' '$T/p.jsonl' |
	lc-gsg-split --jsonl --target abstract --skip-bad >'$T/pskip.lc' 2>'$T/pskip.err'"
is "  the good pairs" "$(names "$T/pskip.lc" | wc -l | tr -d ' ')" 3
grep -q "skipped 1 bad JSON line (the first: stdin:1: " "$T/pskip.err"; _res $? "  and the count"
fails 2 "lc-gsg-split: --text with --source" lc-gsg-split --jsonl --text a --source b "$T/p.jsonl"
fails 2 "lc-gsg-split: --source without --jsonl" lc-gsg-split --source a "$T/p.jsonl"
fails 2 "lc-gsg-split: --jsonl with -d" lc-gsg-split --jsonl -d line "$T/p.jsonl"
lc-gsg-split --help >"$T/help"
for o in --jsonl --text --source --target --id --skip-bad; do
	grep -q -- "$o" "$T/help"; _res $? "lc-gsg-split --help lists $o"
done

# --- lc-train: JSON Lines pairs train exactly as the stream of the same pairs
need lc-train || skip_all "lc-train is not built"
SPM=${LC_SHARE:-share}/spiece.model
[ -f "$SPM" ] || skip_all "no share/spiece.model"
cat >"$T/config.json" <<'EOF'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32100,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF
cp "$T/p.jsonl" "$T/train.jsonl"
cat >>"$T/train.jsonl" <<'EOF'
{"id": "long", "article": "Whither thou goest, I will go; and where thou lodgest, I will lodge: thy people shall be my people, and thy God my God.", "abstract": "Ruth stays with Naomi, whatever comes, wherever she goes."}
{"id": "last", "article": "And Boaz said unto Ruth, Hearest thou not, my daughter?", "abstract": "Boaz speaks to Ruth."}
EOF
ok "the stream path: lc-gsg-split pairs -m" sh -c \
	"lc-gsg-split --jsonl --target abstract --id id -m '$SPM' '$T/train.jsonl' >'$T/train.lc'"
TR="--config $T/config.json --steps 3 --batch-tokens 60 --max-src 12 --max-tgt 6 --holdout 1 -t $SPM -j 1 -q --no-rouge"
ok "lc-train on the stream" lc-train $TR -o "$T/ms" --holdout-out "$T/hs" "$T/train.lc"
ok "lc-train --jsonl on the records" lc-train $TR -o "$T/mj" --holdout-out "$T/hj" \
	--jsonl --source article --target abstract --id id "$T/train.jsonl"
same "the same weights" "$T/mj/model.safetensors" "$T/ms/model.safetensors"
same "the same optimizer state" "$T/mj/optimizer.safetensors" "$T/ms/optimizer.safetensors"
same "the same data recorded for resuming" "$T/mj/trainer_state.json" "$T/ms/trainer_state.json"
same "the same held-out sources (ids, cut, names)" "$T/hj.src.lc" "$T/hs.src.lc"
same "the same held-out targets" "$T/hj.tgt.lc" "$T/hs.tgt.lc"
is "the held-out pair is named by its id" "$(names "$T/hj.src.lc")" "last"
ok "--eval JSON Lines" lc-train $TR -o "$T/me" --holdout 0 --eval-every 1 --jsonl --target abstract --eval "$T/train.jsonl" "$T/train.jsonl"
is "evaluation loss logged" "$(awk -F'\t' 'NR == 2 {print ($7 != "")}' "$T/me/loss.tsv")" 1
cp "$T/train.jsonl" "$T/trainbad.jsonl"
printf '{"id": "x", "article": "no abstract"}\n' >>"$T/trainbad.jsonl"
fails 1 "lc-train: a bad line" lc-train $TR -o "$T/mb" --jsonl "$T/trainbad.jsonl"
grep -q "^lc-train: $T/trainbad.jsonl:6: no \"abstract\" field" "$T/err"; _res $? "  names FILE:LINE"
ok "lc-train --skip-bad" lc-train $TR -o "$T/mk" --jsonl --id id --skip-bad "$T/trainbad.jsonl"
grep -q "skipped 1 bad JSON line" "$T/err"; _res $? "  says how many it skipped"
same "  and trains on the rest as before" "$T/mk/model.safetensors" "$T/ms/model.safetensors"
fails 2 "lc-train: --source without --jsonl" lc-train $TR -o "$T/mu" --source a "$T/train.lc"
printf '{"article": "a", "abstract": "b"}\n' >"$T/one.jsonl"
fails 1 "lc-train --jsonl: an lc stream input" lc-train $TR -o "$T/mx" --holdout 0 --jsonl "$T/train.lc"
lc-train --help >"$T/help"
for o in --jsonl --source --target --id --skip-bad; do
	grep -q -- "$o" "$T/help"; _res $? "lc-train --help lists $o"
done

# two documents of one id would score against each other's references
# (found by lc-rouge only after the whole corpus was summarized): refused
printf '{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n' >"$T/dup.jsonl"
fails 1 "an id twice" lc-tokenize --jsonl --id id "$T/dup.jsonl"
grep -q "dup.jsonl:3: id \"a\" given twice (first at .*dup.jsonl:1)" "$T/err"; _res $? "  names both lines"
printf '{"id": 7, "text": "x"}\n' >"$T/int.jsonl"
printf '{"id": "7", "text": "x"}\n' >"$T/str.jsonl"
fails 1 "an id twice over two inputs (7 and \"7\": one name)" lc-tokenize --jsonl --id id "$T/int.jsonl" "$T/str.jsonl"
grep -q "str.jsonl:1: id \"7\" given twice (first at .*int.jsonl:1)" "$T/err"; _res $? "  names both"
# ...ids only: lines named FILE:LINE may meet (two archives whose members
# share a path)
mkdir -p "$T/p1" "$T/p2"
printf '{"text": "x"}\n' >"$T/p1/data.jsonl"
printf '{"text": "y"}\n' >"$T/p2/data.jsonl"
tar -C "$T/p1" -cf "$T/p1.tar" data.jsonl
tar -C "$T/p2" -cf "$T/p2.tar" data.jsonl
ok "two archives with one member path, no --id" lc-tokenize --jsonl -f ids "$T/p1.tar" "$T/p2.tar"

done_testing
