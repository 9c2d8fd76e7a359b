#!/bin/sh
# Checkpoints are one atomic set: lc-train is killed (LC_FAULT, SIGKILL) at
# every write and rename of its saves, and the same command run again
# always finishes with the very weights of an uninterrupted run; a mixed
# set (a trainer_state.json from another step) is refused, naming the
# file; resuming with other data or options is refused unless
# --force-resume, saying what changed.
. tests/sh/lib.sh
need lc-train || skip_all "lc-train is not built"
SPM=${LC_SHARE:-share}/spiece.model
[ -f "$SPM" ] || skip_all "no share/spiece.model"

awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
	"${LC_SHARE:-share}/samples/sample.txt" | lc-cat -i text -d blank |
	lc-gsg-split -r 0.3 -m "$SPM" >"$T/pairs.lc" 2>/dev/null
cat >"$T/config.json" <<'JSON'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32000,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
JSON
train() {   # train OUTDIR [options]: two steps, a checkpoint after each
	o=$1
	shift
	lc-train --config "$T/config.json" -o "$o" --steps 2 --save-every 1 --batch-tokens 500 \
		-t "$SPM" -j 1 -q "$@" "$T/pairs.lc"
}
ok "an uninterrupted run" train "$T/ref"
is "checkpoint.json names the set" \
	"$(grep -c '"crc32c"' "$T/ref/checkpoint.json")" 5

# every fault point of both saves: 5 files written, the manifest, the
# commit, 5 renames
k=1
bad= lbad=
while [ $k -le 24 ]; do
	rm -rf "$T/k"
	LC_FAULT=ckpt:$k train "$T/k" >/dev/null 2>&1
	r=$?
	train "$T/k" >"$T/k.out" 2>&1 && cmp -s "$T/k/model.safetensors" "$T/ref/model.safetensors" &&
		cmp -s "$T/k/optimizer.safetensors" "$T/ref/optimizer.safetensors" &&
		grep -q '"step": 2' "$T/k/trainer_state.json" && [ $r = 137 ] ||
		bad="$bad $k"
	# loss.tsv: each step once (a step logged after the last committed
	# checkpoint was logged again by the rerun)
	[ "$(cut -f1 "$T/k/loss.tsv" | tr '\n' ' ')" = "step 1 2 " ] || lbad="$lbad $k"
	k=$((k + 1))
done
is "killed at each of the 24 points, the rerun ends with the uninterrupted weights" "$bad" ""
is "... and loss.tsv has each step once" "$lbad" ""
is "no temporary files are left" "$(ls "$T/k" | grep -c '\.tmp$')" 0
# a save that fails (a file size limit: writes fail with EFBIG, as on a
# full disk) takes its .tmp files back
fails 1 "a save whose writes fail" sh -c "trap '' XFSZ; ulimit -f 600; lc-train -m '$T/ref' \
	-o '$T/fz' --steps 1 --batch-tokens 500 -t '$SPM' -j 1 -q '$T/pairs.lc'"
is "no .tmp file left" "$(ls "$T/fz" | grep -c '\.tmp$')" 0

head -c 100 "$T/pairs.lc" >"$T/cut.lc"
# killed before its first checkpoint: random weights, which no program loads
LC_FAULT=ckpt:1 train "$T/f1" >/dev/null 2>&1
fails 1 "a run killed before its first checkpoint is no model" lc-encode -m "$T/f1" --info
grep -q "f1: an lc-train run's directory before its first checkpoint" "$T/err"; _res $? "and says so"
fails 1 "run again on bad data" lc-train --config "$T/config.json" -o "$T/f1" --steps 2 -q \
	"$T/cut.lc"
ok "run again, it trains" train "$T/f1"
ok "and then loads" lc-encode -m "$T/f1" --info

# a mixed set
cp -r "$T/ref" "$T/mixed"
LC_FAULT=ckpt:100 train "$T/one" --steps 1 >/dev/null 2>&1
cp "$T/one/trainer_state.json" "$T/mixed/trainer_state.json"
fails 1 "a trainer_state.json of another step" train "$T/mixed" --steps 3
grep -q 'trainer_state.json is not the one checkpoint.json names for step 2' "$T/err"
_res $? "is refused, naming the file"

# resuming with other data or options
cp -r "$T/ref" "$T/re"
fails 1 "resuming with another --lr" train "$T/re" --steps 3 --lr 0.5
grep -q 'was trained with other data or options: --lr 0.001 -> 0.5' "$T/err"
_res $? "is refused, saying what changed"
fails 1 "resuming with another --batch-tokens" train "$T/re" --steps 3 --batch-tokens 400
grep -q -- '--batch-tokens 500 -> 400' "$T/err"; _res $? "says so"
# the weight decay was neither recorded nor checked: a resume applied another one silently
fails 1 "resuming with another --weight-decay" train "$T/re" --steps 3 --weight-decay 0.5
grep -q -- '--weight-decay 0.01 -> 0.5' "$T/err"; _res $? "says so"
awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 5 ? " " : "\n\n") }' \
	"${LC_SHARE:-share}/samples/sample.txt" | lc-cat -i text -d blank |
	lc-gsg-split -r 0.3 -m "$SPM" >"$T/other.lc" 2>/dev/null
fails 1 "resuming on other data" lc-train --config "$T/config.json" -o "$T/re" --steps 3 \
	--save-every 1 --batch-tokens 500 -t "$SPM" -j 1 -q "$T/other.lc"
grep -q 'the training data .* pairs -> .* pairs' "$T/err"; _res $? "names the data change"
ok "--force-resume" lc-train --config "$T/config.json" -o "$T/re" --steps 3 --save-every 1 \
	--batch-tokens 500 -t "$SPM" -j 1 -q --force-resume "$T/other.lc"
grep -q 'with other data or options (--force-resume)' "$T/err"; _res $? "warns"
grep -q '"step": 3' "$T/re/trainer_state.json"; _res $? "and trains on"
sed 's/"position": [0-9]*/"position": 1000000000/' "$T/ref/trainer_state.json" >"$T/state"
cp -r "$T/ref" "$T/pos"
cp "$T/state" "$T/pos/trainer_state.json"
rm "$T/pos/checkpoint.json"
fails 1 "an impossible position in trainer_state.json" train "$T/pos" --steps 3
grep -q 'an impossible state (step 2, epoch .*, position 1000000000 of' "$T/err"; _res $? "says so"
sed 's/"step": [0-9]*/"step": -4/' "$T/ref/trainer_state.json" >"$T/pos/trainer_state.json"
fails 1 "a negative step" train "$T/pos" --steps 3
grep -q 'an impossible state (step -4' "$T/err"; _res $? "says so (not an empty message)"
# the state's pair count is another data set's or absurd: the order is the
# data's now (it once sized an allocation: 2^62 pairs overflowed it)
rm -rf "$T/pos" && cp -r "$T/ref" "$T/pos" && rm "$T/pos/checkpoint.json"
sed 's/"pairs": [0-9]*/"pairs": 4611686018427387904/' "$T/ref/trainer_state.json" \
	>"$T/pos/trainer_state.json"
ok "a state naming 2^62 pairs resumes on the data's" train "$T/pos" --steps 3
grep -q '"step": 3' "$T/pos/trainer_state.json"; _res $? "and trains on"
# optimizer moments a resume would turn into NaN weights at the first update
sz=$(wc -c <"$T/ref/optimizer.safetensors")
for v in 'NaN:\000\000\300\177' 'negative:\000\000\200\277'; do
	rm -rf "$T/pos" && cp -r "$T/ref" "$T/pos" && rm "$T/pos/checkpoint.json"
	printf "${v#*:}" | dd of="$T/pos/optimizer.safetensors" bs=1 seek=$((sz - 4)) conv=notrunc \
		2>/dev/null
	fails 1 "a ${v%%:*} adam.v in optimizer.safetensors" train "$T/pos" --steps 3
	grep -q "optimizer.safetensors: tensor \"adam.v\": element [0-9]* is ${v%%:*}" "$T/err"
	_res $? "is named"
	cmp -s "$T/pos/model.safetensors" "$T/ref/model.safetensors"; _res $? "the weights are untouched"
done
done_testing
