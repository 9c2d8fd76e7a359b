#!/bin/sh
# lc-train as a user runs it: GSG pairs of the Book of Ruth, a small
# random model, checkpoints that lc-encode and lc-decode load, resuming,
# SIGINT, evaluation, and the errors.
. tests/sh/lib.sh

need lc-train || skip_all "lc-train is not built"
SPM=${LC_SHARE:-share}/spiece.model
[ -f "$SPM" ] || skip_all "no share/spiece.model"

ok "--help" lc-train --help
grep -q '^usage: lc-train' "$T/out"; _res $? "--help prints the usage on stdout"
ok "--version" lc-train --version
fails 2 "no -o is a usage error" lc-train --config x.json pairs.lc
fails 2 "-m and --config together" lc-train -m a --config b -o "$T/x"
fails 2 "an unknown option" lc-train --frobnicate -o "$T/x"
fails 2 "a bad --lr" lc-train --config x -o "$T/x" --lr abc
fails 2 "a bad --schedule" lc-train --config x -o "$T/x" --schedule cosine
fails 2 "no model and no checkpoint" lc-train -o "$T/empty" "$T/pairs.lc"

# pairs: the verses of Ruth, ten per document, GSG-split and tokenized
awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
	"${LC_SHARE:-share}/samples/sample.txt" >"$T/ruth.txt"
ok "pairs from lc-gsg-split" sh -c "lc-cat -i text -d blank '$T/ruth.txt' |
	lc-gsg-split -r 0.3 -m '$SPM' >'$T/pairs.lc'"
cat >"$T/config.json" <<'EOF'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32000,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF

ok "trains 3 steps from --config" lc-train --config "$T/config.json" -o "$T/m" --steps 3 \
	--batch-tokens 500 --holdout 2 --eval-every 2 --holdout-out "$T/held" -t "$SPM" -j 2 -q "$T/pairs.lc"
for f in config.json model.safetensors spiece.model optimizer.safetensors trainer_state.json loss.tsv; do
	[ -s "$T/m/$f" ]; _res $? "the checkpoint has $f"
done
[ ! -e "$T/m/.lc-train-fresh" ]; _res $? "no fresh-start mark after the checkpoint"
is "loss.tsv has a header and 3 steps" "$(wc -l <"$T/m/loss.tsv" | tr -d ' ')" 4
is "evaluation loss at steps 2 and 3" \
	"$(awk -F'\t' 'NR > 1 && $7 != "" {printf "%s ", $1}' "$T/m/loss.tsv")" "2 3 "
ok "lc-encode loads the checkpoint" lc-encode -m "$T/m" --info
grep -q 'vocab_size.32000' "$T/out"; _res $? "with its configuration"
ok "held-out pairs written as token streams" lc-cat -o info "$T/held.src.lc" "$T/held.tgt.lc"
is "two held-out documents per side" "$(awk -F'\t' '$1 == "doc"' "$T/out" | wc -l | tr -d ' ')" 4
is "rouge.tsv: one row per checkpoint" "$(awk -F'\t' 'NR > 1 {print $1 "/" $2}' "$T/m/rouge.tsv")" "3/2"
# the same ROUGE from the programs: lc-encode | lc-decode | lc-rouge, averaged
lc-encode -q -m "$T/m" "$T/held.src.lc" | lc-decode -q -m "$T/m" --max-new 128 >"$T/cand"
lc-detokenize "$T/held.tgt.lc" >"$T/refs"
is "its ROUGE-1/2/Lsum equal lc-rouge's on lc-decode's greedy summaries" \
	"$(lc-rouge -q -d line -b 0 -f tsv "$T/cand" "$T/refs" | awk -F'\t' '!/^#/ && $1 !~ /^(low|mid|high)$/ {
		s[$2] += $5; n[$2]++ } END { printf "%.2f %.2f %.2f", 100 * s["rouge1"] / n["rouge1"],
		100 * s["rouge2"] / n["rouge2"], 100 * s["rougeLsum"] / n["rougeLsum"] }')" \
	"$(awk -F'\t' 'NR == 2 {print $3, $4, $5}' "$T/m/rouge.tsv")"
ok "tokenize | encode | decode with the checkpoint" sh -c "lc-tokenize '${LC_SHARE:-share}/samples/sample.txt' |
	lc-encode -q -m '$T/m' | lc-decode -q -m '$T/m' -f ids --max-new 4 >'$T/ids'"
is "one summary line" "$(wc -l <"$T/ids" | tr -d ' ')" 1

# a closed standard error: the log lines go nowhere, not into loss.tsv
sh -c "lc-train --config '$T/config.json' -o '$T/ce' --steps 2 --log-every 1 --batch-tokens 500 \
	--holdout 0 '$T/pairs.lc' 2>&-"
_res $? "runs with standard error closed"
is "loss.tsv holds its rows alone" "$(awk -F'\t' 'NF != 7' "$T/ce/loss.tsv" | wc -l | tr -d ' ')" 0

# resuming: the same command with more steps continues the count
ok "resumes to step 5" lc-train --config "$T/config.json" -o "$T/m" --steps 5 --batch-tokens 500 \
	--holdout 2 -t "$SPM" -j 2 -q "$T/pairs.lc"
grep -q '"step": 5' "$T/m/trainer_state.json"; _res $? "trainer_state.json says step 5"
is "loss.tsv continues" "$(awk -F'\t' 'NR > 1 {printf "%s ", $1}' "$T/m/loss.tsv")" "1 2 3 4 5 "
cp -p "$T/m/checkpoint.json" "$T/ck.before"
ok "the same command again" lc-train --config "$T/config.json" -o "$T/m" --steps 5 --batch-tokens 500 \
	--holdout 2 -t "$SPM" -j 2 -q "$T/pairs.lc"
grep -q 'holds step 5, --steps 5: nothing to do' "$T/err"; _res $? "has nothing to do, and says so"
cmp -s "$T/m/checkpoint.json" "$T/ck.before"; _res $? "and saves nothing again"
ok "fine-tuning from -m" lc-train -m "$T/m" -o "$T/ft" --steps 2 --batch-tokens 500 -q "$T/pairs.lc"
grep -q 'cut to their first tokens' "$T/err"; _res $((!$?)) "no word of cuts when nothing is cut"
lc-cat -i text -d blank "$T/ruth.txt" | lc-gsg-split -q -r 0.3 -m "$DATA/bart/tiny_bart" >"$T/bpairs.lc"
ok "pairs of another tokenizer" lc-train -m "$T/m" -o "$T/bw" --steps 1 --batch-tokens 500 -q \
	"$T/bpairs.lc"
grep -q "the pairs were tokenized with tokenizer [0-9a-f]*, not with the model's" "$T/err"
_res $? "a warning says so"
ok "short --max-src and --max-tgt" lc-train -m "$T/m" -o "$T/cutm" --steps 1 --max-src 8 \
	--max-tgt 4 --batch-tokens 500 -q "$T/pairs.lc"
grep -q '[0-9]* of [0-9]* sources longer than --max-src 8 and [0-9]* targets longer than --max-tgt 4 are cut' \
	"$T/err"; _res $? "the cuts counted in a warning"
grep -q '"schedule": "constant"' "$T/ft/trainer_state.json"; _res $? "fine-tuning defaults to the constant schedule"
[ -s "$T/ft/spiece.model" ]; _res $? "the tokenizer follows the model"
ok "--eval STREAM" lc-train -m "$T/m" -o "$T/ev" --steps 1 --eval "$T/pairs.lc" -q "$T/pairs.lc"
is "evaluation loss logged" "$(awk -F'\t' 'NR == 2 {print ($7 != "")}' "$T/ev/loss.tsv")" 1

# SIGINT: a checkpoint, exit 0, and the count where it stopped
lc-train --config "$T/config.json" -o "$T/int" --steps 1000000 --batch-tokens 200 -t "$SPM" \
	-j 1 -q "$T/pairs.lc" 2>"$T/int.err" &
pid=$!
i=0
while [ $i -lt 300 ] && [ "$(cat "$T/int/loss.tsv" 2>/dev/null | wc -l)" -lt 3 ]; do
	sleep 0.1; i=$((i + 1))
done
kill -INT $pid
wait $pid
is "SIGINT: exit 0" $? 0
grep -q 'interrupted at step' "$T/int.err"; _res $? "SIGINT: says where it stopped"
[ -s "$T/int/trainer_state.json" ] && [ -s "$T/int/model.safetensors" ]; _res $? "SIGINT: checkpoint written"
ok "the interrupted checkpoint loads" lc-encode -m "$T/int" --info

# errors name the problem
fails 1 "ids outside the model's vocabulary" lc-train -m "$DATA/locost" -o "$T/v" --steps 1 -q "$T/pairs.lc"
grep -q 'outside the model' "$T/err"; _res $? "and says so"
lc-cat -i text "$T/ruth.txt" >"$T/nopairs.lc"
fails 1 "a stream without pairs" lc-train --config "$T/config.json" -o "$T/np" --steps 1 -q "$T/nopairs.lc"
head -c 100 "$T/pairs.lc" >"$T/trunc.lc"
fails 1 "a truncated stream" lc-train --config "$T/config.json" -o "$T/tr" --steps 1 -q "$T/trunc.lc"
sed 's/"vocab_size": 32000/"vocab_size": 1000/' "$T/config.json" >"$T/small.json"
fails 1 "-t: a tokenizer of more ids than the model has rows" lc-train --config "$T/small.json" \
	-o "$T/sv" -t "$SPM" --steps 1 -q "$T/pairs.lc"
grep -q -e "-t/--tokenizer .*: the tokenizer's ids go to 31999 but the model's vocab_size is 1000" "$T/err"; _res $? "and says so"
# nothing left behind by a run that failed before training, nor written
# over a directory a user keeps files in
[ ! -e "$T/np" ] && [ ! -e "$T/tr" ] && [ ! -e "$T/sv" ]; _res $? "failed runs leave no directory behind"
mkdir "$T/kept"; cp "$T/m/model.safetensors" "$T/m/config.json" "$T/kept/"
cksum "$T/kept/model.safetensors" >"$T/kept.sum"
fails 1 "--config over a directory with files" lc-train --config "$T/config.json" -o "$T/kept" \
	--steps 1 -q "$T/pairs.lc"
grep -q 'kept: holds files but no checkpoint to resume.*--restart' "$T/err"; _res $? "and says so"
cksum "$T/kept/model.safetensors" | cmp -s - "$T/kept.sum"; _res $? "its model untouched"
mkdir "$T/mt"
fails 1 "a failed run in an empty directory" lc-train --config "$T/config.json" -o "$T/mt" --steps 1 \
	-q "$T/trunc.lc"
[ -d "$T/mt" ] && [ -z "$(ls -A "$T/mt")" ]; _res $? "leaves it empty"
mkdir "$T/ip"; cp "$T/m/model.safetensors" "$T/m/config.json" "$T/m/spiece.model" "$T/ip/"
fails 1 "fine-tuning in place, failing" lc-train -m "$T/ip" -o "$T/ip" --steps 1 -q "$T/trunc.lc"
ok "leaves the model a model" lc-encode -m "$T/ip" --info
# a failed --restart leaves a directory with a checkpoint loadable
cp -r "$T/m" "$T/old"
fails 1 "--restart into a checkpoint, failing" lc-train -m "$T/m" -o "$T/old" --restart --steps 1 \
	-q "$T/trunc.lc"
ok "leaves it loadable" lc-encode -m "$T/old" --info
# --config OUTDIR/config.json -o OUTDIR --restart: the file is not copied onto itself
mkdir "$T/cfgd"; cp "$T/config.json" "$T/cfgd/"
fails 1 "--config inside OUTDIR, failing" lc-train --config "$T/cfgd/config.json" -o "$T/cfgd" \
	--restart --steps 1 -q "$T/trunc.lc"
cmp -s "$T/config.json" "$T/cfgd/config.json"; _res $? "the config.json kept whole"
ok "--restart starts over in it" lc-train --config "$T/config.json" -o "$T/kept" --restart --steps 1 \
	--batch-tokens 500 --holdout 0 -q "$T/pairs.lc"
[ -s "$T/kept/trainer_state.json" ]; _res $? "a checkpoint there"
# a model lc cannot decode is not trained either (fuzz_model: no decoder
# layers read a relative bias that is not there)
sed 's/"num_decoder_layers": 1/"num_decoder_layers": 0/' "$T/config.json" >"$T/nodec.json"
fails 1 "no decoder layers" lc-train --config "$T/nodec.json" -o "$T/nd" --steps 1 -q "$T/pairs.lc"
grep -q 'decoder: unsupported configuration' "$T/err"; _res $? "and says so"
# a document that is not a pair (a token stream's, here) is left out and
# said, with the first one's name and why
printf 'x y z' | lc-tokenize -m "$SPM" >"$T/notpair.lc"
lc-cat "$T/pairs.lc" "$T/notpair.lc" >"$T/mixed.lc"
ok "pairs and a document that is not one" lc-train --config "$T/config.json" -o "$T/mixm" --steps 1 \
	--batch-tokens 500 --holdout 0 --no-rouge -t "$SPM" -q "$T/mixed.lc"
grep -q '1 of [0-9]* documents were skipped, no (source, target) pair with ids on both sides (the first, "stdin": no "source")' \
	"$T/err"; _res $? "said, even with -q"

# --holdout-out: never over an input (it wrote the held-out sources over
# the training stream, exit 0), and a failed write keeps the pair of an
# earlier run (it truncated P.src.lc first)
cp "$T/pairs.lc" "$T/in.src.lc"
cksum "$T/in.src.lc" >"$T/in.sum"
fails 1 "--holdout-out onto the training input" lc-train --config "$T/config.json" -o "$T/ho" \
	--steps 1 --batch-tokens 500 --holdout 2 --holdout-out "$T/in" -t "$SPM" -q "$T/in.src.lc"
grep -q -- "--holdout-out $T/in: $T/in.src.lc is the training input" "$T/err"; _res $? "says so"
fails 1 "... the input given on standard input" sh -c "lc-train --config '$T/config.json' \
	-o '$T/ho' --steps 1 --batch-tokens 500 --holdout 2 --holdout-out '$T/in' -t '$SPM' -q \
	<'$T/in.src.lc'"
cksum "$T/in.src.lc" | cmp -s - "$T/in.sum"; _res $? "the input untouched"
cksum "$T/held.src.lc" "$T/held.tgt.lc" >"$T/held.sum"
rm -rf "$T/ho"
# (LC_FAULT: killed at its second write of a stream, the held-out one's)
LC_FAULT=stream:2 lc-train --config "$T/config.json" -o "$T/ho" --steps 1 --batch-tokens 500 \
	--holdout 2 --holdout-out "$T/held" -t "$SPM" -q "$T/pairs.lc" 2>/dev/null
is "--holdout-out killed while it writes" $? 137
cksum "$T/held.src.lc" "$T/held.tgt.lc" | cmp -s - "$T/held.sum"; _res $? "the earlier pair kept"

# stopped while it reads its input from a pipe: it dies of the signal as
# the other programs do, quietly, its fresh directory removed (it said
# "stdin: byte 0: read error: Interrupted system call" and exited 1)
rm -rf "$T/sig"
( (sleep 2; cat "$T/pairs.lc") | lc-train --config "$T/config.json" -o "$T/sig" --steps 1 \
	--batch-tokens 500 --holdout 0 --no-rouge -t "$SPM" -q 2>"$T/sigerr" &
  pid=$!; sleep 0.5; kill -TERM $pid; wait $pid; echo $? >"$T/sigrc" )
is "SIGTERM while it reads a pipe: dies of it" "$(cat "$T/sigrc")" 143
is "nothing said" "$(cat "$T/sigerr")" ""
[ ! -e "$T/sig" ]; _res $? "no directory left"

# the files copied into every checkpoint are regular files, found before
# training (a spiece.model that is /dev/zero filled the disk at the save)
rm -rf "$T/zm" "$T/zt" && mkdir "$T/zt"
lc-train --config "$T/config.json" -o "$T/zm" --steps 1 --batch-tokens 500 --holdout 0 \
	--no-rouge -t "$SPM" -q "$T/pairs.lc" 2>/dev/null
cp "$T/zm/config.json" "$T/zm/model.safetensors" "$T/zt/"
ln -s /dev/zero "$T/zt/spiece.model"
fails 1 "a model whose spiece.model is /dev/zero" lc-train -m "$T/zt" -o "$T/zo" --steps 1 \
	--batch-tokens 500 --holdout 0 --no-rouge -q "$T/pairs.lc"
grep -q 'the tokenizer copied into every checkpoint: .*zt/spiece.model: not a regular file' "$T/err"
_res $? "is refused before training, naming the file"
done_testing
