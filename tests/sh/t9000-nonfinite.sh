#!/bin/sh
# Nothing silently wrong: NaN or infinite weights are refused when a model
# is opened, encoder states that overflow are refused by lc-encode, NaN,
# infinite or empty states by lc-decode, and a non-finite training loss
# stops lc-train before the update, the last checkpoint kept; each error
# names the file or document and where.
. tests/sh/lib.sh
B=$DATA/bart/tiny_bart
[ -f "$B/model.safetensors" ] || skip_all "no tests/data/bart"

hlen() { od -An -tu8 -N8 "$1" | tr -d ' '; }
# tensor_range FILE NAME: the byte range of a tensor's data
tensor_range() {
	h=$(hlen "$1")
	head -c $((8 + h)) "$1" | tail -c "$h" |
		sed -n 's/.*"'"$2"'":{"dtype":"F32","shape":\[[0-9,]*\],"data_offsets":\[\([0-9]*\),\([0-9]*\)\]}.*/\1 \2/p' |
		awk -v b=$((8 + h)) '{ print $1 + b, $2 + b }'
}
# poke FILE OFFSET COUNT BYTES: COUNT little-endian floats given as 4 octal escapes
poke() {
	i=0
	while [ "$i" -lt "$3" ]; do
		printf "$4" | dd of="$1" bs=1 seek=$(($2 + 4 * i)) conv=notrunc 2>/dev/null
		i=$((i + 1))
	done
}

mkdir "$T/nan" "$T/inf" "$T/huge"
for d in nan inf huge; do
	cp "$B/config.json" "$B/model.safetensors" "$T/$d/"
done
set -- $(tensor_range "$T/nan/model.safetensors" model.encoder.layernorm_embedding.bias)
is "the test finds a tensor's bytes" "$(($2 - $1))" 256
poke "$T/nan/model.safetensors" $(($1 + 12)) 1 '\000\000\300\177'
poke "$T/inf/model.safetensors" "$1" 1 '\000\000\200\377'
echo "0 5 6 7 2" | lc-cat -i ids >"$T/ids.lc"
fails 1 "a NaN weight" lc-encode -m "$T/nan" "$T/ids.lc"
grep -q 'model.safetensors: tensor "model.encoder.layernorm_embedding.bias": element 3 is NaN' "$T/err"
_res $? "names the file, the tensor and the element"
fails 1 "an infinite weight" lc-decode -m "$T/inf" --info
grep -q 'element 0 is -inf' "$T/err"; _res $? "says -inf"

# finite weights that overflow: states of inf and NaN
set -- $(tensor_range "$T/huge/model.safetensors" model.encoder.layernorm_embedding.weight)
poke "$T/huge/model.safetensors" "$1" 64 '\000\000\000\177'
fails 1 "states that overflow" lc-encode -m "$T/huge" "$T/ids.lc"
grep -q 'document "stdin:1": the encoder.s states are .* at row 0 of 5' "$T/err"
_res $? "are refused, naming the document and the row"

fails 1 "NaN states" lc-decode -m "$B" -f ids --max-new 4 "$DATA/nonfinite/hidden_bad.lcs"
grep -q 'document "nan-row1": the encoder states. row 1 of 3 holds NaN' "$T/err"
_res $? "name the document and the row"
is "nothing is printed for it" "$(cat "$T/out")" ""
# (sampling said "no token can be drawn at step 1", the cause unnamed)
for b in "-b 1" "-b 3" "--sample" "--sample -b 2"; do
	fails 1 "finite states whose scores overflow, $b" lc-decode -m "$B" $b -f ids \
		--max-new 4 "$DATA/nonfinite/hidden_huge.lcs"
	grep -q 'document "huge": search: a score at step 0 is NaN' "$T/err"; _res $? "name the document"
done
fails 1 "empty states" lc-decode -m "$B" -f ids "$DATA/nonfinite/hidden_empty.lcs"
grep -q 'document "no-rows": the encoder states have no rows' "$T/err"; _res $? "say so"

# a non-finite loss stops training before the update
SPM=${LC_SHARE:-share}/spiece.model
if need lc-train && [ -f "$SPM" ]; then
	awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
		"${LC_SHARE:-share}/samples/sample.txt" | lc-cat -i text -d blank |
		lc-gsg-split -r 0.3 -m "$SPM" >"$T/pairs.lc"
	cat >"$T/config.json" <<'JSON'
{"d_model": 8, "d_ff": 16, "d_kv": 4, "d_state": 4, "num_layers": 1,
 "num_decoder_layers": 1, "num_heads": 2, "vocab_size": 32000,
 "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
JSON
	ok "a small model" lc-train --config "$T/config.json" -o "$T/m" --steps 1 -q "$T/pairs.lc"
	cp -r "$T/m" "$T/bad"
	set -- $(tensor_range "$T/bad/model.safetensors" encoder.final_layer_norm.weight)
	poke "$T/bad/model.safetensors" "$1" 8 '\000\000\000\177'
	fails 1 "resuming a checkpoint whose weights changed since it was saved" \
		lc-train -m "$T/bad" -o "$T/bad" --steps 3 -q "$T/pairs.lc"
	grep -q 'model.safetensors is not the one checkpoint.json names' "$T/err"; _res $? "is refused"
	fails 1 "training into a NaN loss" lc-train -m "$T/bad" -o "$T/ft" --steps 3 -q "$T/pairs.lc"
	grep -q 'step 1: the loss (NaN) or the gradient norm (.*) is not finite; the weights were not updated; no checkpoint was written (.*ft holds none)' "$T/err"
	_res $? "stops at the step, saying no checkpoint was written"
	[ ! -e "$T/ft/model.safetensors" ]; _res $? "and writes no checkpoint of NaN weights"
else
	skip "a non-finite loss" "no lc-train or share/spiece.model"
fi
# a document to encode that already holds states: refused, not given a
# second "hidden" beside the stale one
fails 1 "tokens and stale states" lc-encode -m "${LC_SHARE:-share}/models/demo" "$DATA/nonfinite/tokens_and_hidden.lcs"
grep -q 'document "d": already holds "hidden" states' "$T/err"; _res $? "says so"
done_testing
