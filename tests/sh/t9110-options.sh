#!/bin/sh
# Options every program shares (issue 19, "option consistency"): -j N /
# --threads N / --threads=N everywhere, checked alike; -m / --model DIR /
# --model=DIR wherever a program reads a model or a tokenizer, with the same
# output; and messages about a bad value that name the option it came from
# (both its forms), or the environment variable.
. tests/sh/lib.sh

SHARE=${LC_SHARE:-share}
SPM=$SHARE/spiece.model
DEMO=$SHARE/models/demo
B=$DATA/bart/tiny_bart

# inputs for a trivial run of each program
printf 'The cat sat on the mat. It was a sunny day. The dog barked twice.\n' >"$T/a.txt"
printf 'The cat sat. The dog barked.\n' >"$T/b.txt"
printf '5 6 7\n8 9 10 11\n' >"$T/ids.txt"
lc-cat -i ids "$T/ids.txt" >"$T/ids.lc"
lc-tokenize -m "$SPM" "$T/a.txt" >"$T/tok.lc"
cat >"$T/config.json" <<'EOF'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32000,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF
lc-cat -i text "$T/a.txt" | lc-gsg-split -q -r 0.4 -m "$SPM" >"$T/pairs.lc" 2>/dev/null
mkdir "$T/empty"
runs=0

# A trivial valid run of program $1 with the options "$2" inserted (word-split).
run() {
	prog=$1 j=$2
	runs=$((runs + 1))
	case $prog in
	lc-cat) lc-cat $j -o ids "$T/ids.lc" ;;
	lc-chunk) lc-chunk -F $j -n 2 "$T/ids.lc" ;;
	lc-convert) lc-convert -q $j --block-size 32 --sparse-block-size 32 "$B" "$T/conv$runs" ;;
	lc-decode) lc-encode -q -F -m "$DEMO" "$T/tok.lc" | lc-decode -q $j --max-new 2 -m "$DEMO" ;;
	lc-detokenize) lc-detokenize $j -m "$SPM" "$T/ids.txt" ;;
	lc-encode) lc-encode -q -F $j -m "$DEMO" "$T/tok.lc" ;;
	lc-gsg-split) lc-gsg-split $j -f text "$T/a.txt" ;;
	lc-noise) lc-noise -F $j -m "$SPM" "$T/tok.lc" ;;
	lc-rouge) lc-rouge $j -b 0 -f tsv "$T/a.txt" "$T/b.txt" ;;
	lc-tokenize) lc-tokenize $j -m "$SPM" -f ids "$T/a.txt" ;;
	lc-train) lc-train -q $j --config "$T/config.json" -o "$T/train$runs" --steps 1 \
		--no-rouge "$T/pairs.lc" ;;
	esac
}

# 1. -j / --threads: accepted everywhere, in its three spellings, with the
# same output; bad values are usage errors naming -j/--threads.
for prog in lc-cat lc-chunk lc-convert lc-decode lc-detokenize lc-encode lc-gsg-split \
	lc-noise lc-rouge lc-tokenize lc-train; do
	ok "$prog -j 1" run $prog "-j 1"
	cp "$T/out" "$T/out.j1"
	ok "$prog --threads=2" run $prog "--threads=2"
	cp "$T/out" "$T/out.j2"
	ok "$prog --threads 2" run $prog "--threads 2"
	case $prog in
	lc-train | lc-convert) ;;   # they write directories
	*) same "$prog: the same output with 1 and 2 threads" "$T/out.j1" "$T/out.j2" ;;
	esac
	for bad in 0 x 1025 -1 ''; do
		fails 2 "$prog -j '$bad' is a usage error" $prog -j "$bad" </dev/null
		is "$prog -j '$bad': names -j/--threads" "$(head -1 "$T/err")" \
			"$prog: -j/--threads: expected an integer in [1, 1024], got '$bad'"
		is "$prog -j '$bad': and says where help is" "$(sed -n 2p "$T/err")" "Try '$prog --help'."
	done
	fails 2 "$prog --threads=x is a usage error" $prog --threads=x </dev/null
	is "$prog --threads=x: names -j/--threads" "$(head -1 "$T/err")" \
		"$prog: -j/--threads: expected an integer in [1, 1024], got 'x'"
	fails 2 "$prog --threads without N" $prog --threads </dev/null
	is "$prog: says --threads needs an argument" "$(head -1 "$T/err")" \
		"$prog: option --threads needs an argument"
	$prog --help >"$T/help" 2>&1
	grep -q -- '-j, --threads N' "$T/help"; _res $? "$prog --help lists -j, --threads"
done
for f in cat chunk convert detokenize gsg-split noise rouge tokenize; do
	lc-$f --help | grep -q "lc-$f runs on one thread"
	_res $? "lc-$f --help says it runs on one thread"
done

# a bad -j is refused before any work, whatever else is wrong
fails 2 "lc-encode -m NOPE -j x: the usage error first" lc-encode -m "$T/nope" -j x </dev/null
fails 2 "lc-train -j x: before OUTDIR is created" lc-train -j x --config "$T/config.json" \
	-o "$T/jx" "$T/pairs.lc"
[ ! -e "$T/jx" ]; _res $? "OUTDIR is not created"

# $LC_THREADS: the default where threads are used, named when bad
ok "LC_THREADS=1 lc-encode" env LC_THREADS=1 lc-encode -q -F -m "$DEMO" "$T/tok.lc"
cp "$T/out" "$T/enc.env1"
ok "lc-encode -j 3" lc-encode -q -F -j 3 -m "$DEMO" "$T/tok.lc"
same "the same states" "$T/enc.env1" "$T/out"
fails 2 "lc-encode with LC_THREADS=x" env LC_THREADS=x lc-encode -F -m "$DEMO" "$T/tok.lc"
is "lc-encode: names \$LC_THREADS" "$(head -1 "$T/err")" \
	"lc-encode: \$LC_THREADS: expected an integer in [1, 1024], got 'x'"
fails 2 "lc-train with LC_THREADS=0" env LC_THREADS=0 lc-train -q -m "$DEMO" -o "$T/envx" \
	"$T/pairs.lc"
is "lc-train: names \$LC_THREADS" "$(head -1 "$T/err")" \
	"lc-train: \$LC_THREADS: expected an integer in [1, 1024], got '0'"
[ ! -e "$T/envx" ]; _res $? "lc-train: OUTDIR is not created"
ok "-j wins over a bad LC_THREADS" env LC_THREADS=x lc-encode -q -F -j 1 -m "$DEMO" "$T/tok.lc"
ok "lc-cat, on one thread, does not read LC_THREADS" env LC_THREADS=x lc-cat -o ids "$T/ids.lc"

# 2. --model=DIR, --model DIR and -m DIR: the same
same_model() {   # name, model, then the command with @M@ where the model option goes
	name=$1 model=$2
	shift 2
	i=0
	for form in "-m $model" "--model $model" "--model=$model"; do
		i=$((i + 1))
		cmd=$(printf '%s ' "$@" | sed "s|@M@|$form|")
		ok "$name $form" sh -c "$cmd"
		cp "$T/out" "$T/model.$i"
	done
	same "$name: --model DIR as -m DIR" "$T/model.1" "$T/model.2"
	same "$name: --model=DIR as -m DIR" "$T/model.1" "$T/model.3"
}
same_model lc-tokenize "$SPM" lc-tokenize @M@ -f ids "$T/a.txt"
ok "lc-tokenize with LC_TOKENIZER=SPM" env LC_TOKENIZER="$SPM" lc-tokenize -f ids "$T/a.txt"
same "the same ids as -m SPM" "$T/out" "$T/model.1"
same_model "lc-tokenize (a directory)" "$DEMO" lc-tokenize @M@ -f ids "$T/a.txt"
same_model lc-detokenize "$SPM" lc-detokenize @M@ "$T/ids.txt"
same_model lc-encode "$DEMO" lc-encode -q -F -j 2 @M@ "$T/tok.lc"
same_model lc-gsg-split "$SPM" lc-gsg-split -q -F @M@ "$T/a.txt"
same_model lc-noise "$SPM" lc-noise -q -F @M@ "$T/tok.lc"
same_model lc-decode "$DEMO" "lc-encode -q -F -m $DEMO $T/tok.lc |" lc-decode -q --max-new 3 @M@
for form in "-m" "--model" "--model="; do
	case $form in
	--model=) set -- "--model=$DEMO" ;;
	*) set -- "$form" "$DEMO" ;;
	esac
	ok "lc-train $* works" lc-train -q -j 1 "$@" -o "$T/ft$form" --steps 1 --no-rouge \
		--batch-tokens 64 "$T/pairs.lc"
done
same "lc-train: --model DIR trains as -m DIR" "$T/ft-m/model.safetensors" \
	"$T/ft--model/model.safetensors"
same "lc-train: --model=DIR trains as -m DIR" "$T/ft-m/model.safetensors" \
	"$T/ft--model=/model.safetensors"
if [ -d "$B" ]; then
	ok "lc-convert SRC DST" lc-convert -q --block-size 32 --sparse-block-size 32 "$B" "$T/c1"
	ok "lc-convert -m SRC DST" lc-convert -q -m "$B" --block-size 32 --sparse-block-size 32 "$T/c2"
	ok "lc-convert --model=SRC DST" lc-convert -q --block-size 32 --sparse-block-size 32 \
		--model="$B" "$T/c3"
	same "-m SRC: the same weights" "$T/c1/model.safetensors" "$T/c2/model.safetensors"
	same "--model=SRC: the same weights" "$T/c1/model.safetensors" "$T/c3/model.safetensors"
	fails 2 "lc-convert -m SRC with two operands" lc-convert -q -m "$B" "$T/c4" "$T/c5"
	is "says why" "$(head -1 "$T/err")" "lc-convert: with -m SRC, expected the DST directory alone"
	[ ! -e "$T/c4" ] && [ ! -e "$T/c5" ]; _res $? "and creates nothing"
else
	skip "lc-convert --model" "no $B"
fi
# the programs that read no model take no --model
for prog in lc-cat lc-chunk lc-rouge; do
	fails 2 "$prog --model is an unknown option" $prog --model="$DEMO" </dev/null
	is "$prog: says so" "$(head -1 "$T/err")" "$prog: unknown option '--model'"
	fails 2 "$prog -m is an unknown option" $prog -m "$DEMO" </dev/null
done
# every program's --help lists its model option
for prog in lc-convert lc-detokenize lc-encode lc-gsg-split lc-noise lc-tokenize lc-train; do
	$prog --help | grep -q -- '-m, --model'; _res $? "$prog --help lists -m, --model"
done

# 3. a bad model or tokenizer path: the option (both forms) or the variable
msg() {   # name, expected first line of stderr, exit status, command...
	name=$1 expect=$2 st=$3
	shift 3
	fails "$st" "$name" "$@"
	is "$name: the message" "$(head -1 "$T/err")" "$expect"
}
NOPE=$T/nope
ENOENT="No such file or directory"
NOTOK="no tokenizer (spiece.model, vocab.json + merges.txt, tokenizer.json, or fairseq's \
dict.txt + encoder.json + vocab.bpe)"
for form in -m --model; do
	msg "lc-tokenize $form NOPE" "lc-tokenize: -m/--model $NOPE: $ENOENT" 1 \
		lc-tokenize $form "$NOPE" "$T/a.txt"
	msg "lc-detokenize $form NOPE" "lc-detokenize: -m/--model $NOPE: $ENOENT" 1 \
		lc-detokenize $form "$NOPE" "$T/ids.txt"
	msg "lc-encode $form NOPE" "lc-encode: -m/--model $NOPE: $ENOENT" 1 \
		lc-encode -F $form "$NOPE" "$T/tok.lc"
	msg "lc-gsg-split $form NOPE" "lc-gsg-split: -m/--model $NOPE: $ENOENT" 1 \
		lc-gsg-split $form "$NOPE" "$T/a.txt"
	msg "lc-noise $form NOPE" "lc-noise: -m/--model $NOPE: $ENOENT" 1 \
		lc-noise $form "$NOPE" "$T/tok.lc"
	msg "lc-convert $form NOPE" "lc-convert: -m/--model $NOPE: $ENOENT" 1 \
		lc-convert -q $form "$NOPE" "$T/conv-nope"
	msg "lc-train $form NOPE" "lc-train: -m/--model $NOPE: $ENOENT" 1 \
		lc-train -q $form "$NOPE" -o "$T/tr-nope" "$T/pairs.lc"
	[ ! -e "$T/tr-nope" ]; _res $? "lc-train $form NOPE: OUTDIR is not created"
done
msg "lc-tokenize --model=NOPE" "lc-tokenize: -m/--model $NOPE: $ENOENT" 1 \
	lc-tokenize --model="$NOPE" "$T/a.txt"
msg "lc-tokenize -m DIR without a tokenizer" "lc-tokenize: -m/--model $T/empty: $NOTOK" 1 \
	lc-tokenize -m "$T/empty" "$T/a.txt"
msg "lc-tokenize -m FILE that is no model" "lc-tokenize: -m/--model $T/a.txt: malformed model \
file: unexpected end of group at byte 1" 1 lc-tokenize -m "$T/a.txt" "$T/a.txt"
msg "lc-encode -m DIR without config.json" "lc-encode: -m/--model $T/empty: no config.json \
(nor a fairseq checkpoint, *.pt)" 1 \
	lc-encode -F -m "$T/empty" "$T/tok.lc"
for form in -t --tokenizer; do
	msg "lc-train $form NOPE" "lc-train: -t/--tokenizer $NOPE: $ENOENT" 1 \
		lc-train -q $form "$NOPE" --config "$T/config.json" -o "$T/tt-nope" "$T/pairs.lc"
	[ ! -e "$T/tt-nope" ]; _res $? "lc-train $form NOPE: OUTDIR is not created"
done
msg "lc-train --config NOPE" "lc-train: --config $NOPE: $ENOENT" 1 \
	lc-train -q --config "$NOPE" -o "$T/tc-nope" "$T/pairs.lc"
msg "lc-train --eval NOPE" "lc-train: --eval $NOPE: $ENOENT" 1 \
	lc-train -q --config "$T/config.json" --eval "$NOPE" -o "$T/te-nope" "$T/pairs.lc"
[ ! -e "$T/te-nope" ]; _res $? "lc-train --eval NOPE: OUTDIR is not created"
# from the environment
msg "LC_TOKENIZER=NOPE lc-tokenize" "lc-tokenize: \$LC_TOKENIZER $NOPE: $ENOENT" 1 \
	env LC_TOKENIZER="$NOPE" lc-tokenize "$T/a.txt"
msg "LC_TOKENIZER=DIR lc-detokenize" "lc-detokenize: \$LC_TOKENIZER $T/empty: $NOTOK" 1 \
	env LC_TOKENIZER="$T/empty" lc-detokenize "$T/ids.txt"
msg "LC_MODEL=NOPE lc-encode" "lc-encode: \$LC_MODEL $NOPE: $ENOENT" 1 \
	env LC_MODEL="$NOPE" lc-encode -F "$T/tok.lc"
ok "-m wins over a bad LC_TOKENIZER" env LC_TOKENIZER="$NOPE" lc-tokenize -m "$SPM" "$T/a.txt"
ok "-m wins over a bad LC_MODEL" env LC_MODEL="$NOPE" lc-encode -q -F -m "$DEMO" "$T/tok.lc"

# 4. option values in messages: both forms where there are two
msg "lc-rouge -t bad" "lc-rouge: -t/--types: unknown type 'rouge0' (rouge1..rouge9, rougeL, \
rougeLsum)" 2 lc-rouge -t rouge0 "$T/a.txt" "$T/b.txt"
msg "lc-rouge --types=bad" "lc-rouge: -t/--types: unknown type 'x' (rouge1..rouge9, rougeL, \
rougeLsum)" 2 lc-rouge --types=x "$T/a.txt" "$T/b.txt"
ok "lc-rouge -t rouge1" lc-rouge -b 0 -f tsv -t rouge1 "$T/a.txt" "$T/b.txt"
cp "$T/out" "$T/r1"
ok "lc-rouge --types=rouge1" lc-rouge -b 0 -f tsv --types=rouge1 "$T/a.txt" "$T/b.txt"
same "the same scores" "$T/r1" "$T/out"
msg "lc-rouge -b x" "lc-rouge: -b/--samples: expected an integer in [0, 100000000], got 'x'" 2 \
	lc-rouge -b x "$T/a.txt" "$T/b.txt"
msg "lc-rouge -f x" "lc-rouge: -f/--format: unknown format 'x' (table, tsv, json, csv)" 2 \
	lc-rouge -f x "$T/a.txt" "$T/b.txt"
msg "lc-rouge -d x" "lc-rouge: -d/--split: unknown mode 'x' (file, line, blank, nul)" 2 \
	lc-rouge -d x "$T/a.txt" "$T/b.txt"
msg "lc-convert -n x" "lc-convert: -n/--max-len: expected an integer in [1, 16777216], got 'x'" 2 \
	lc-convert -n x a b
msg "lc-cat -o x" "lc-cat: -o: unknown output format 'x' (stream, ids, raw, info, text, jsonl)" 2 \
	lc-cat -o x
msg "lc-tokenize -d x" "lc-tokenize: -d: unknown document mode 'x' (file, line, blank, nul)" 2 \
	lc-tokenize -d x

# -q and -F have the same long forms everywhere (cli_getopt adds them)
for p in lc-cat lc-chunk lc-convert lc-decode lc-detokenize lc-encode lc-gsg-split lc-noise lc-rouge \
	lc-tokenize lc-train; do
	$p --help >"$T/h" 2>&1
	grep -q -- '-q, --quiet' "$T/h"; _res $? "$p --help: -q, --quiet"
	if grep -q -- '^  -F' "$T/h"; then
		grep -q -- '-F, --force' "$T/h"; _res $? "$p --help: -F, --force"
	fi
done
ok "lc-decode --force --quiet (not ambiguous with --forced-bos)" lc-decode --force --quiet --info
ok "lc-tokenize --quiet" sh -c "printf x | lc-tokenize --quiet -f ids"

done_testing
