#!/bin/sh
# Error and warning messages: one clear line ("lc-NAME: what: why") naming
# the input, the option or the file concerned, and nothing written on failure.
. tests/sh/lib.sh

SPM=${LC_SHARE:-share}/spiece.model
LOCOST=$DATA/locost

# i, j: bad options, in every program: one line of lc's (and the usual
# "Try" line), never getopt's own message besides; a missing argument is
# named as such, for short and long options. Each line: the program, a
# short option taking an argument, a long one (- for none).
while read -r prog short long; do
	fails 2 "$prog: an unknown short option" $prog -Z </dev/null
	is "$prog: says so in one line" "$(cat "$T/err")" \
		"$prog: unknown option '-Z'
Try '$prog --help'."
	fails 2 "$prog: an unknown long option" $prog --frobnicate=1 </dev/null
	is "$prog: names it" "$(head -1 "$T/err")" "$prog: unknown option '--frobnicate'"
	is "$prog: two lines" "$(wc -l <"$T/err" | tr -d ' ')" 2
	fails 2 "$prog: -$short without its argument" $prog -q -$short </dev/null
	is "$prog: says -$short needs an argument" "$(cat "$T/err")" \
		"$prog: option -$short needs an argument
Try '$prog --help'."
	fails 2 "$prog: --help with an argument" $prog --help=yes </dev/null
	is "$prog: says --help takes none" "$(head -1 "$T/err")" "$prog: option --help takes no argument"
	[ "$long" = - ] && continue
	fails 2 "$prog: --$long without its argument" $prog --$long </dev/null
	is "$prog: says --$long needs an argument" "$(cat "$T/err")" \
		"$prog: option --$long needs an argument
Try '$prog --help'."
done <<'EOF'
lc-cat i -
lc-chunk n sentences
lc-convert n max-len
lc-decode m model
lc-detokenize m -
lc-encode m model
lc-gsg-split r mask-token
lc-noise r density
lc-rouge t types
lc-tokenize m max-len
lc-train m config
EOF
fails 2 "an unknown option in a group" lc-cat -qZF </dev/null
is "names the option, not the group" "$(head -1 "$T/err")" "lc-cat: unknown option '-Z'"
fails 2 "an ambiguous long option" lc-rouge --spl x y
is "names the candidates" "$(head -1 "$T/err")" \
	"lc-rouge: option '--spl' is ambiguous: --split, --split-sentences"
fails 2 "an abbreviated long option without its argument" lc-train --conf
is "gives its full name" "$(head -1 "$T/err")" "lc-train: option --config needs an argument"

# a: an invalid --config is an error naming it, and creates nothing.
echo '{"d_ff": 16}' >"$T/bad.json"
fails 1 "lc-train: an invalid --config" lc-train --config "$T/bad.json" -o "$T/od" -q </dev/null
is "names the option and the config" "$(cat "$T/err")" "lc-train: --config $T/bad.json: \"d_model\" is missing"
[ ! -e "$T/od" ]; _res $? "OUTDIR is not created"
echo 'not json' >"$T/bad.json"
fails 1 "lc-train: a --config that is not JSON" lc-train --config "$T/bad.json" -o "$T/od" -q </dev/null
grep -q "^lc-train: --config $T/bad.json: " "$T/err"; _res $? "names the option and the config"
[ ! -e "$T/od" ]; _res $? "OUTDIR is not created"
fails 1 "lc-train: a missing --config" lc-train --config "$T/none.json" -o "$T/od" -q </dev/null
is "names it with the option and the reason" "$(cat "$T/err")" \
	"lc-train: --config $T/none.json: No such file or directory"
[ ! -e "$T/od" ]; _res $? "OUTDIR is not created"
fails 2 "lc-train: no model and no checkpoint" lc-train -o "$T/od" </dev/null
[ ! -e "$T/od" ]; _res $? "OUTDIR is not created"

# b: --eval with no pairs is an error naming the file, not evaluation off.
cat >"$T/config.json" <<'EOF'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32000,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF
printf 'One. Two three. Four five six. Seven. Eight nine.\n\nTen. Eleven twelve. Thirteen.\n' |
	lc-cat -i text -d blank | lc-gsg-split -q -r 0.4 -m "$SPM" >"$T/pairs.lc" 2>/dev/null
echo '5 6 7' | lc-cat -i ids >"$T/tokens.lc"
lc-cat -i ids </dev/null >"$T/nodocs.lc"
fails 1 "lc-train: --eval without pairs" lc-train --config "$T/config.json" -o "$T/m1" --steps 1 \
	-t "$SPM" -j 1 -q --eval "$T/tokens.lc" "$T/pairs.lc"
is "names the file" "$(cat "$T/err")" "lc-train: $T/tokens.lc: no (source, target) pairs to \
evaluate on (--eval): 1 document without both i32 \"source\" and \"target\""
fails 1 "lc-train: --eval without documents" lc-train --config "$T/config.json" -o "$T/m2" \
	--steps 1 -t "$SPM" -j 1 -q --eval "$T/nodocs.lc" "$T/pairs.lc"
is "names the file" "$(cat "$T/err")" "lc-train: $T/nodocs.lc: no documents, so no pairs to \
evaluate on (--eval)"

# c: a legacy (pre-1.6, non-zip) torch.save file: pickles starting with
# torch's magic number 0x1950a86a20f9469cfc6c (protocol 2; 4 has a FRAME).
mkdir "$T/legacy"
cp "$LOCOST/config.json" "$T/legacy/"
printf '\200\002\212\012\154\374\234\106\371\040\152\250\120\031.\200\002M\351\003.' \
	>"$T/legacy/pytorch_model.bin"
fails 1 "lc-encode: a legacy pytorch_model.bin" lc-encode -m "$T/legacy" --info
grep -q "$T/legacy/pytorch_model.bin: a legacy (non-zip) PyTorch pickle, which lc does not read" \
	"$T/err"; _res $? "says what the file is"
grep -q 'torch\.save(torch\.load(F), F).*safetensors' "$T/err"; _res $? "and how to convert it"
is "in one line" "$(wc -l <"$T/err" | tr -d ' ')" 1
printf '\200\004\225\015\000\000\000\000\000\000\000\212\012\154\374\234\106\371\040\152\250\120\031.' \
	>"$T/legacy/pytorch_model.bin"
fails 1 "lc-encode: the same with pickle protocol 4" lc-encode -m "$T/legacy" --info
grep -q 'legacy (non-zip) PyTorch pickle' "$T/err"; _res $? "says what the file is"

# d: PCRE2's match limit: its own message, the document and the pattern.
printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab!\n' >"$T/a.txt"
fails 1 "lc-chunk: a pattern that exceeds the match limit" lc-chunk -F -p '^(a|a)+$' "$T/a.txt"
is "PCRE2's message" "$(cat "$T/err")" \
	"lc-chunk: $T/a.txt: -p '^(a|a)+\$': matching from byte 0: match limit exceeded"

# e: a pattern that matches the empty string would cut before every byte.
for p in '' 'x*' 'a?' '\s*'; do
	fails 2 "lc-chunk -p '$p' is refused" lc-chunk -F -p "$p" "$T/a.txt"
	grep -q "^lc-chunk: -p '.*': the pattern matches the empty string, so it would cut before every byte" \
		"$T/err"; _res $? "saying why"
done
printf 'x\nCHAPTER 1\ny\nCHAPTER 2\nz\n' >"$T/ch.txt"
ok "-p '^CHAPTER' still cuts" sh -c "lc-chunk -F -p '^CHAPTER' '$T/ch.txt' >'$T/ch.lc'"
is "three pieces" "$(lc-cat -o info "$T/ch.lc" | grep -c '^doc')" 3
ok "-p '^' (every line) is not refused" sh -c "lc-chunk -F -p '^' '$T/ch.txt' >'$T/ch.lc'"
is "five pieces" "$(lc-cat -o info "$T/ch.lc" | grep -c '^doc')" 5

# f: a write error says why.
if [ -w /dev/full ]; then
	for i in 1 2 3 4; do cat "${LC_SHARE:-share}/samples/sample.txt"; done >"$T/long.txt"
	lc-tokenize -m "$SPM" "$T/long.txt" >"$T/long.lc"
	fails 1 "lc-detokenize to a full disk" sh -c "lc-detokenize -m '$SPM' '$T/long.lc' >/dev/full"
	grep -q '^lc-detokenize: .*write error: No space left on device$' "$T/err"; _res $? "says why"
	fails 1 "lc-detokenize ids to a full disk" sh -c \
		"lc-cat -o ids '$T/long.lc' | lc-detokenize -m '$SPM' -f ids >/dev/full"
	grep -q '^lc-detokenize: stdin:1: write error: No space left on device$' "$T/err"; _res $? "says why"
	# lc-decode writes each document's summaries out before the next: the
	# error names the first document, the one lost (not one a buffer later)
	printf 'One.\n\nTwo.\n\nThree.\n' | lc-cat -i text -d blank | lc-tokenize | lc-encode -q >"$T/three.lc"
	for f in jsonl text stream; do
		fails 1 "lc-decode -f $f to a full disk" sh -c "lc-decode -q -f $f --max-new 3 '$T/three.lc' >/dev/full"
		grep -q '^lc-decode: .*three.lc: document "stdin:1": write error: No space left on device$' "$T/err"
		_res $? "names the first document"
	done
else
	skip "lc-detokenize to a full disk" "no writable /dev/full"
fi
printf 'hello\n' >"$T/hello.txt"
fails 1 "standard output closed" sh -c "lc-tokenize -m '$SPM' '$T/hello.txt' >&-"
grep -q '^lc-tokenize: write error: Bad file descriptor$' "$T/err"; _res $? "is a write error"

# g: lc-rouge scores a file that is not text, with one warning naming it.
printf 'the cat sat on the mat\n' >"$T/ref"
printf 'the cat\000sat on the mat\n' >"$T/nul"
printf 'the cat \377 sat\n' >"$T/latin1"
ok "lc-rouge: a candidate with a NUL byte" lc-rouge -b 0 -f tsv "$T/nul" "$T/ref"
is "one warning naming it" "$(cat "$T/err")" \
	"lc-rouge: $T/nul: not text (a NUL byte at byte 7): scored as text anyway"
ok "lc-rouge: a reference that is not UTF-8" lc-rouge -b 0 -f tsv "$T/ref" "$T/latin1"
is "one warning naming it" "$(cat "$T/err")" \
	"lc-rouge: $T/latin1: not text (invalid UTF-8 at byte 8): scored as text anyway"
mkdir "$T/cands" "$T/refs"
for i in 1 2 3; do cp "$T/latin1" "$T/cands/$i"; cp "$T/ref" "$T/refs/$i"; done
ok "lc-rouge: directories of such files" lc-rouge -b 0 -f tsv "$T/cands" "$T/refs"
is "one warning per input, naming the document" "$(cat "$T/err")" \
	"lc-rouge: $T/cands: document \"1\" is not text (invalid UTF-8 at byte 8): scored as text anyway"
ok "lc-rouge: text" lc-rouge -b 0 -f tsv "$T/ref" "$T/ref"
is "no warning" "$(cat "$T/err")" ""
# and lc-tokenize tokenizes it (as spm_encode does), saying so once an input
ok "lc-tokenize: a directory of such files" lc-tokenize "$T/cands"
is "one warning per input, naming the document" "$(cat "$T/err")" \
	"lc-tokenize: $T/cands: document \"1\" is not text (invalid UTF-8 at byte 8): tokenized as text anyway"
ok "lc-tokenize: a NUL byte" lc-tokenize "$T/nul"
is "the warning names the file" "$(cat "$T/err")" \
	"lc-tokenize: $T/nul: not text (a NUL byte at byte 7): tokenized as text anyway"
ok "lc-tokenize: text" lc-tokenize "$T/ref"
is "no warning" "$(cat "$T/err")" ""

# h: a "hidden" tensor of the wrong rank: its real shape. The stream: one
# document "rank1" holding "hidden", f32 [3] (zeros).
{
printf 'LCSR\001\000\000\000\010\000\000\000\000\000\000\000\245\017\246\224\255\317\024\305'
printf '\001\000\000\000\000\000\000\000LCSR\002\000\000\000\021\000\000\000\000\000\000\000'
printf '\274\003EH\360\335\273\316\005\000\000\000\004\000\000\000rank1\000\000\000'
printf '\000\000\000\000\000\000\000\000LCSR\003\000\000\0004\000\000\000\000\000\000\000'
printf '\137M\025\034qg\010d\013\001\000\000\006\000\000\000\004\000\000\000\050\000\000\000'
printf '\003\000\000\000\000\000\000\000hidden\000\000\000\000\000\000\000\000\000\000'
printf '\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000LCSR\004\000\000\000'
printf '\010\000\000\000\000\000\000\000U\213\020\140\255\317\024\305\001\000\000\000\000\000\000\000'
printf 'LCSR\005\000\000\000\010\000\000\000\000\000\000\000e\137aQ\255\317\024\305'
printf '\001\000\000\000\000\000\000\000'
} >"$T/rank1.lc"
ok "the rank-1 stream is valid" lc-cat "$T/rank1.lc"
fails 1 "lc-decode: a rank-1 \"hidden\"" lc-decode -m "$LOCOST" -f ids "$T/rank1.lc"
is "prints its shape" "$(cat "$T/err")" "lc-decode: $T/rank1.lc: document \"rank1\": \"hidden\" \
must be [L, 64] for this model, not [3] (rank 1)"

# a model directory's tokenizer and config.json must agree
mkdir "$T/mix"
cp "${LC_SHARE:-share}/spiece.model" "$T/mix/"
printf '{"vocab_size": 1000}\n' >"$T/mix/config.json"
fails 1 "a tokenizer with more ids than the config's vocab_size" sh -c "echo a b | lc-tokenize -m '$T/mix'"
grep -q "mix: the tokenizer's ids go to 31999 but the model's vocab_size is 1000" "$T/err"
_res $? "names both"
mkdir "$T/cnn"
cp "$DATA/bart/tiny_bart/vocab.json" "$DATA/bart/tiny_bart/merges.txt" "$T/cnn/"
sed 's/"vocab_size": 1000/"vocab_size": 999/' "$DATA/bart/tiny_bart/config.json" >"$T/cnn/config.json"
ok "only a special token (<mask>) past vocab_size, as bart-large-cnn" sh -c "echo a b | lc-tokenize -m '$T/cnn' -f ids"
# the bundled tokenizer's sentinels fit the bundled model
ok "a sentinel through the bundled tokenizer and model" sh -c \
	"echo 'a <extra_id_0> b' | lc-tokenize | lc-encode -q | lc-decode -q --max-new 3"
printf 'In the beginning was the word. And the word was with God. And the word was God.\nThe same was in the beginning with God. All things were made by him.\n' |
	lc-cat -i text | lc-gsg-split -r 0.4 --mask sentence -m "${LC_SHARE:-share}/spiece.model" >"$T/masked.lc" 2>/dev/null
ok "lc-gsg-split --mask sentence pairs train the bundled model" lc-train -m "${LC_SHARE:-share}/models/demo" \
	-o "$T/masked" --steps 1 --batch-tokens 64 -q "$T/masked.lc"
# the computation's switches in the environment: garbage is an error
for v in LC_GEMM LC_BF16_EMULATE LC_FFT_BLOCKS LC_CUDA_ALL; do
	fails 2 "$v=abc" env "$v=abc" lc-encode --info
	grep -q "^lc-encode: $v=abc: expected" "$T/err"; _res $? "$v=abc named"
done
fails 2 "lc-train checks them too" env LC_FFT_BLOCKS=abc lc-train --config x.json -o "$T/never"
[ ! -e "$T/never" ]; _res $? "before anything is written"
# A reader that goes away ends a program quietly, as at a shell's default,
# even when the parent ignores SIGPIPE (the program restores it): before,
# lc-cat exited 0 and lc-decode said "write error: Broken pipe", exit 1.
awk 'BEGIN { for (i = 0; i < 20000; i++) print "one line of text to tokenize, number " i }' >"$T/many.txt"
for p in "lc-tokenize -d line -f ids" "lc-cat -i text -d line -o text"; do
	( trap '' PIPE; $p "$T/many.txt" 2>"$T/pipe.err"; echo $? >"$T/pipe.rc" ) | head -c 10 >/dev/null
	is "$p | head, SIGPIPE ignored: ended by the signal" "$(cat "$T/pipe.rc")" 141
	is "$p: nothing said" "$(cat "$T/pipe.err")" ""
done

done_testing
