#!/bin/sh
# lc-train on BART: pairs tokenized with the model's byte-level BPE
# (<s> ... </s>), a small random BART from --config and fine-tuning of the
# oracle's tiny BART; the loss goes down, checkpoints are BART directories
# (transformers' tensor names, config.json, the BPE files,
# generation_config.json) that lc-encode and lc-decode load, and a resumed
# run ends with the bytes of an uninterrupted one.
. tests/sh/lib.sh
need lc-train || skip_all "lc-train is not built"
BART=$DATA/bart/tiny_bart
[ -f "$BART/model.safetensors" ] || skip_all "no tests/data/bart/tiny_bart"

# pairs: the verses of Ruth, ten per document, GSG-split with BART's tokenizer
awk 'NF && !/^CHAPTER|^THE BOOK/ { printf "%s%s", $0, (++n % 10 ? " " : "\n\n") }' \
	"${LC_SHARE:-share}/samples/sample.txt" >"$T/ruth.txt"
ok "pairs from lc-gsg-split -m BART" sh -c "lc-cat -i text -d blank '$T/ruth.txt' |
	lc-gsg-split -r 0.3 -m '$BART' >'$T/pairs.lc'"
cat >"$T/config.json" <<'EOF'
{"architectures": ["BartForConditionalGeneration"], "model_type": "bart",
 "d_model": 16, "encoder_layers": 1, "decoder_layers": 1,
 "encoder_attention_heads": 2, "decoder_attention_heads": 2,
 "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "vocab_size": 1000,
 "max_position_embeddings": 1024, "pad_token_id": 1, "bos_token_id": 0,
 "eos_token_id": 2, "decoder_start_token_id": 2}
EOF

# a random BART from --config, its tokenizer given as vocab.json
ok "trains 3 steps from a BART --config" lc-train --config "$T/config.json" -o "$T/m" --steps 3 \
	--batch-tokens 500 --holdout 2 --holdout-out "$T/held" -t "$BART/vocab.json" -j 2 -q "$T/pairs.lc"
for f in config.json model.safetensors vocab.json merges.txt optimizer.safetensors \
	trainer_state.json loss.tsv rouge.tsv; do
	[ -s "$T/m/$f" ]; _res $? "the checkpoint has $f"
done
[ ! -e "$T/m/spiece.model" ]; _res $? "and no spiece.model"
ok "the held-out sources are BART's: <s> first, </s> last" lc-cat -o ids "$T/held.src.lc"
is "both" "$(awk '$1 == 0 && $NF == 2' "$T/out" | wc -l | tr -d ' ')" 2
ok "lc-encode loads the checkpoint" lc-encode -m "$T/m" --info
grep -q '^architecture.bart$' "$T/out"; _res $? "as BART"
ok "lc-encode | lc-decode with the checkpoint" sh -c "lc-encode -q -m '$T/m' '$T/held.src.lc' |
	lc-decode -q -m '$T/m' -f ids --max-new 6 >'$T/ids'"
is "a summary per held-out document" "$(wc -l <"$T/ids" | tr -d ' ')" 2

# the loss goes down on a small set seen whole at every step
ok "30 steps, the whole set per step" lc-train --config "$T/config.json" -o "$T/d" --steps 30 \
	--lr 1e-2 --schedule constant --batch-tokens 100000 --no-rouge -t "$BART" -j 2 -q "$T/pairs.lc"
is "the loss falls by more than a third" "$(awk -F'\t' 'NR == 2 { a = $4 } NR == 31 { b = $4 }
	END { print (b < a * 2 / 3) ? "yes" : a " -> " b }' "$T/d/loss.tsv")" yes

# resuming gives the bytes of an uninterrupted run (dropout on: the masks too)
train() {   # train OUTDIR STEPS
	lc-train -m "$BART" -o "$1" --steps "$2" --save-every 2 --batch-tokens 800 --dropout 0.1 \
		--no-rouge -j 2 -q "$T/pairs.lc"
}
ok "fine-tunes the tiny BART 4 steps" train "$T/ref" 4
ok "2 steps" train "$T/re" 2
ok "resumed to 4" train "$T/re" 4
grep -q '"step": 4' "$T/re/trainer_state.json"; _res $? "trainer_state.json says step 4"
same "resumed weights are the uninterrupted run's" "$T/re/model.safetensors" "$T/ref/model.safetensors"
same "and so is the optimizer state" "$T/re/optimizer.safetensors" "$T/ref/optimizer.safetensors"
if cmp -s "$T/ref/model.safetensors" "$BART/model.safetensors"; then r=1; else r=0; fi
_res $r "the weights moved"
for f in vocab.json merges.txt tokenizer_config.json special_tokens_map.json generation_config.json; do
	same "the checkpoint carries the model's $f" "$T/ref/$f" "$BART/$f"
done
# ... and added_tokens.json, an older transformers' file of added tokens
mkdir "$T/leg"
cp -r "$BART"/* "$T/leg/"
printf '{"<zz>": 1000}\n' >"$T/leg/added_tokens.json"
ok "fine-tunes a tokenizer with added_tokens.json" lc-train -m "$T/leg" -o "$T/legout" --steps 1 \
	--batch-tokens 800 --no-rouge -j 2 -q "$T/pairs.lc"
same "the checkpoint carries added_tokens.json" "$T/legout/added_tokens.json" \
	"$T/leg/added_tokens.json"
# transformers' names: the same tensors as save_pretrained wrote, same shapes
names() {
	python3 -c 'import json, struct, sys
b = open(sys.argv[1], "rb").read(8)
h = json.loads(open(sys.argv[1], "rb").read(8 + struct.unpack("<Q", b)[0])[8:])
for k in sorted(h):
    if k != "__metadata__":
        print(k, h[k]["shape"])' "$1"
}
tensor() {   # tensor FILE NAME: its bytes, as hex
	python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", f[:8])[0]
a, b = json.loads(f[8:8 + n])[sys.argv[2]]["data_offsets"]
print(f[8 + n + a:8 + n + b].hex())' "$1" "$2"
}
if need python3; then
	names "$BART/model.safetensors" >"$T/want"
	names "$T/ref/model.safetensors" >"$T/got"
	same "model.safetensors holds transformers' tensors and shapes" "$T/got" "$T/want"
	tensor "$BART/model.safetensors" final_logits_bias >"$T/flb0"
	tensor "$T/ref/model.safetensors" final_logits_bias >"$T/flb1"
	[ -s "$T/flb0" ]; _res $? "final_logits_bias read"
	same "final_logits_bias (a buffer) is not trained" "$T/flb1" "$T/flb0"
	tensor "$BART/model.safetensors" model.shared.weight >"$T/sh0"
	tensor "$T/ref/model.safetensors" model.shared.weight >"$T/sh1"
	if cmp -s "$T/sh0" "$T/sh1"; then r=1; else r=0; fi
	_res $r "the shared embedding is"
else
	skip "model.safetensors holds transformers' tensors and shapes" "no python3"
fi
ok "lc-decode runs the fine-tuned checkpoint (forced <s> from its generation_config.json)" \
	sh -c "lc-encode -q -m '$T/ref' '$T/held.src.lc' | lc-decode -q -m '$T/ref' -f ids --max-new 6 >'$T/ids'"
is "forced_bos_token_id 0 first" "$(awk '{print $1}' "$T/ids" | sort -u)" 0

# JSON Lines encoded with the model's own BPE
printf '%s\n' '{"article": "Ruth said, Intreat me not to leave thee.", "abstract": "Ruth stays."}' \
	'{"article": "And Naomi said, Turn again, my daughters.", "abstract": "Naomi speaks."}' >"$T/p.jsonl"
ok "--jsonl with the tiny BART's tokenizer" lc-train -m "$BART" -o "$T/j" --steps 2 --jsonl \
	--holdout 1 --holdout-out "$T/jh" --no-rouge -q "$T/p.jsonl"
ok "its held-out pair" lc-cat -o ids "$T/jh.src.lc" "$T/jh.tgt.lc"
is "both sides <s> ... </s>" "$(awk '$1 == 0 && $NF == 2' "$T/out" | wc -l | tr -d ' ')" 2

# the checkpoints' ROUGE decodes with the model's generation settings:
# settings generate() refuses (no decoder start, no bos) fail before the
# first step, not at the first checkpoint
mkdir "$T/nostart"
cp "$BART/config.json" "$BART/model.safetensors" "$BART/vocab.json" "$BART/merges.txt" "$T/nostart/"
printf '{"eos_token_id": 2}\n' >"$T/nostart/generation_config.json"
fails 1 "a model whose generation_config.json has no decoder start" lc-train -m "$T/nostart" \
	-o "$T/ns" --steps 2 --jsonl --holdout 1 -q "$T/p.jsonl"
grep -q 'generation_config.json gives neither decoder_start_token_id nor bos_token_id' "$T/err"
_res $? "says so"
[ ! -e "$T/ns/loss.tsv" ]; _res $? "before any step"

# an output directory one may write but not read (mode 333) may hold a
# user's files: refused as one that holds files (it was taken for empty,
# and its model.safetensors replaced)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	W=$(mktemp -d /tmp/lc-wo.XXXXXX) && chmod 755 "$W" && cp -r "$BART" "$W/m" &&
		cp "$T/p.jsonl" "$W/" && chmod -R a+rX "$W" && mkdir "$W/out" &&
		echo "my notes" >"$W/out/model.safetensors" && chmod 644 "$W/out/model.safetensors" &&
		chmod 333 "$W/out"
	fails 1 "-o a write-only directory holding a file" setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$(command -v lc-train)" -q -m "$W/m" -o "$W/out" --steps 2 --jsonl \
		--no-rouge "$W/p.jsonl"
	is "the user's file untouched" "$(cat "$W/out/model.safetensors")" "my notes"
	rm -rf "$W"
else
	skip "-o a write-only directory" "not root, or no setpriv"
fi

# errors
cat >"$T/short.json" <<'EOF'
{"architectures": ["BartForConditionalGeneration"], "d_model": 16, "encoder_layers": 1,
 "decoder_layers": 1, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
 "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "vocab_size": 1000,
 "max_position_embeddings": 64}
EOF
fails 1 "sources longer than max_position_embeddings" lc-train --config "$T/short.json" -o "$T/s" \
	--steps 1 -t "$BART" -q "$T/pairs.lc"
grep -q 'ruth.txt:1: a source of [0-9]* tokens is longer than the model.s 64 positions (max_position_embeddings): cut with --max-src and --max-tgt' "$T/err"
_res $? "are refused before the first step, naming the pair and the cure"
[ ! -e "$T/s/loss.tsv" ]; _res $? "(no step was taken)"
ok "--max-src cuts them to fit (greedy ROUGE summaries within the positions too)" \
	lc-train --config "$T/short.json" -o "$T/s2" --steps 1 --max-src 64 --max-tgt 64 \
	--holdout 1 -t "$BART" -q "$T/pairs.lc"
[ -s "$T/s2/rouge.tsv" ]; _res $? "rouge.tsv written"
# Training under a rain of handled signals gives the weights it gives
# without: oneDNN 2.x's JIT f32 GEMM points rsp into the heap, and a
# signal frame written there corrupted it (lc-train, stopped by SIGINT,
# died in free() now and then; a no-op handler signalled every 0.5 ms
# broke every run). The handler comes from a preloaded shim.
if command -v "${CC:-cc}" >/dev/null 2>&1; then
	printf '%s\n' '#include <signal.h>' '#include <string.h>' \
		'static void h(int s) { (void)s; }' \
		'__attribute__((constructor)) static void init(void)' \
		'{ struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = h;' \
		'  sa.sa_flags = SA_RESTART; sigaction(SIGUSR2, &sa, 0); }' >"$T/shim.c"
	${CC:-cc} -shared -fPIC -o "$T/shim.so" "$T/shim.c"
	TR="-m $BART --steps 30 --batch-tokens 1 --no-rouge --holdout 0 -j 2 -q"
	ok "30 steps" lc-train $TR -o "$T/calm" "$T/pairs.lc"
	# (an ASan build wants its runtime first: told not to mind the shim)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" LD_PRELOAD="$T/shim.so" \
		lc-train $TR -o "$T/rain" "$T/pairs.lc" 2>"$T/rain.err" &
	p=$!
	# the shim's handler is in place once lc-train runs its main: when
	# its output directory appears
	while [ ! -e "$T/rain" ] && kill -0 $p 2>/dev/null; do sleep 0.01; done
	n=0
	while kill -USR2 $p 2>/dev/null; do n=$((n + 1)); sleep 0.001; done
	wait $p
	is "30 steps under $n signals: no crash" $? 0
	same "... the same weights" "$T/calm/model.safetensors" "$T/rain/model.safetensors"
else
	skip "training under signals" "no C compiler for the shim"
fi
done_testing
