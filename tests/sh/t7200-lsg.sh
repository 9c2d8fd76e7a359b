#!/bin/sh
# LSG-BART as a user runs it: lc-convert turns the oracle's tiny BART into
# the seven LSG directories byte for byte as the authors' converter did
# (from either weight file), the converted models generate the authors'
# greedy and beam ids through lc-encode | lc-decode, an LSG directory
# extends to a longer maximum length, a long text runs tokenize | encode |
# decode | rouge, and bad configurations and inputs are clear errors.
. tests/sh/lib.sh
B=$DATA/bart/tiny_bart
G=$DATA/lsg
[ -f "$G/model.safetensors" ] || skip_all "no tests/data/lsg"

ids() {   # an oracle int32 ids file as one line (without the decoder start token: -f2-)
	od -An -td4 -v "$1" | tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//'
}

cd "$T" || exit 1
for t in none norm pooling stride block_stride bos_pooling lsh; do
	ok "lc-convert --sparsity-type $t" lc-convert -q --name model --block-size 32 \
		--sparse-block-size 32 --sparsity-factor 2 --global-tokens 1 --sparsity-type "$t" \
		"$B" "$t"
	same "$t: config.json as the authors' converter wrote it" "$t/config.json" "$G/$t/config.json"
	same "$t: model.safetensors byte for byte" "$t/model.safetensors" "$G/model.safetensors"
done
same "tokenizer_config.json with the new model_max_length" none/tokenizer_config.json \
	"$G/tokenizer_config.json"
for f in vocab.json merges.txt special_tokens_map.json generation_config.json; do
	same "$f copied" "none/$f" "$B/$f"
done
is "no temporary directories left" "$(ls -d ./*.tmp-* 2>/dev/null)" ""
mkdir bin
for f in config.json pytorch_model.bin vocab.json merges.txt tokenizer_config.json \
	special_tokens_map.json generation_config.json; do ln -s "$B/$f" bin/; done
ok "from pytorch_model.bin" lc-convert -q --name model --block-size 32 --sparse-block-size 32 \
	--sparsity-type norm bin bin-norm
same "the same weights" bin-norm/model.safetensors "$G/model.safetensors"
same "the same config" bin-norm/config.json "$G/norm/config.json"

# the authors' generate() at L = 1000 through the programs
L=len1000
ids "$G/none/$L/input_ids.i32" >in.ids
lc-cat -i ids in.ids >in.lc
for t in none norm pooling stride block_stride bos_pooling; do
	lc-encode -q -m "$t" in.lc >"$t.h"
	is "$t: greedy ids (max_new_tokens 24)" \
		"$(lc-decode -q -m "$t" -f ids --max-new 24 --forced-bos none --forced-eos none <"$t.h")" \
		"$(ids "$G/$t/$L/greedy_ids.i32" | cut -d' ' -f2-)"
	is "$t: beam ids (4 beams, length_penalty 2, no_repeat_ngram 3)" \
		"$(lc-decode -q -m "$t" -f ids --max-new 24 --forced-bos none --forced-eos none -b 4 \
			--length-penalty 2 --no-repeat-ngram 3 --early-stopping true <"$t.h")" \
		"$(ids "$G/$t/$L/beam_ids.i32" | cut -d' ' -f2-)"
done
is "the states: the global row and 1000 token rows" \
	"$(lc-cat -o info norm.h | awk -F'\t' '$1 == "tensor" { print $6, $NF }')" \
	"1001x64 encoder=lsg-bart"
lc-cat -o raw norm.h >norm.raw
ok "lsh runs, the same every time (lc's fixed projections)" sh -c \
	"lc-encode -q -m lsh in.lc | lc-cat -o raw >lsh1 && lc-encode -q -j 1 -m lsh in.lc | lc-cat -o raw >lsh2"
same "lsh: two runs, 1 and 2 threads" lsh1 lsh2

# what the decoder receives
sed 's/"pass_global_tokens_to_decoder": true/"pass_global_tokens_to_decoder": false/' \
	norm/config.json >cfg
mkdir pool nopool
cp cfg pool/config.json
sed 's/"pool_with_global": true/"pool_with_global": false/' cfg >nopool/config.json
ln -s "$PWD/norm/model.safetensors" pool/
ln -s "$PWD/norm/model.safetensors" nopool/
lc-encode -q -m pool in.lc | lc-cat -o raw >pool.raw
lc-encode -q -m nopool in.lc | lc-cat -o raw >nopool.raw
is "without pass_global_tokens_to_decoder: 1000 rows" "$(wc -c <pool.raw)" $((1000 * 64 * 4))
tail -c +257 norm.raw >tokens.raw
same "without pool_with_global: the token rows" nopool.raw tokens.raw
{ head -c 256 norm.raw; tail -c +513 norm.raw; } >pooled.raw
same "with pool_with_global: the first row is the global row" pool.raw pooled.raw
ok "and the decoder runs on them" sh -c "lc-encode -q -m pool in.lc |
	lc-decode -q -m pool -f ids --max-new 4 >pool.ids"
is "one summary" "$(wc -l <pool.ids)" 1

# extrapolation: a longer position table, nothing else changed
ok "an LSG directory to 8192 positions" lc-convert -q -n 8192 none long
is "config.json: max_position_embeddings and _name_or_path change" \
	"$(diff none/config.json long/config.json | grep '^[<>]' | sed 's/[<>] *//; s/:.*//' | sort -u | tr '\n' ' ')" \
	'"_name_or_path" "max_position_embeddings" '
is "tokenizer_config.json: model_max_length 8192" \
	"$(grep model_max_length long/tokenizer_config.json | tr -d ' ,')" '"model_max_length":8192'
ids "$G/none/len4096/input_ids.i32" | lc-cat -i ids >in4096.lc
lc-encode -q -m none in4096.lc | lc-cat -o raw >a.raw
lc-encode -q -m long in4096.lc | lc-cat -o raw >b.raw
same "the 4096-token states are unchanged" a.raw b.raw
awk 'BEGIN { printf "0"; for (i = 0; i < 6000; i++) printf " %d", 4 + (i * 7919) % 990; print " 2" }' |
	lc-cat -i ids >in6000.lc
ok "6002 tokens through the 8192 model" sh -c "lc-encode -q -m long in6000.lc | lc-decode -q -m long -f ids --max-new 6 >out6000"
is "one summary" "$(wc -l <out6000)" 1
fails 1 "the 4096 model refuses them" lc-encode -m none in6000.lc
grep -q 'document "stdin:1": 6002 tokens, more than the 4096 the model takes' err
_res $? "naming the document and both lengths"
ok "--truncate" lc-encode -m none --truncate in6000.lc
grep -q 'stdin:1: 6002 tokens cut to the 4096' err; _res $? "warns, naming the document"

# a long text through the pipeline
i=0
while [ $i -lt 40 ]; do
	echo "The cat sat on the mat and looked at the garden. Birds sang in tree $i."
	i=$((i + 1))
done >doc.txt
echo "The cat sat on the mat." >ref.txt
ok "tokenize | encode | decode | rouge" sh -c "lc-tokenize -m none doc.txt | lc-encode -q -m none |
	lc-decode -q -m none -f stream --max-new 12 >sum.lc && lc-rouge -q -b 0 -f tsv sum.lc ref.txt >rouge"
is "longer than BART's 1024 positions" "$(lc-tokenize -m none doc.txt | lc-cat -o ids | awk '{ print (NF > 1024) }')" 1
is "one score line per type" "$(grep -vc '^#' rouge)" 3

is "the directory made as mkdir makes one (umask 022: 755)" \
	"$(umask 022 && lc-convert -q -n 8192 none perm && stat -c %a perm)" 755

# errors
fails 1 "DST exists" lc-convert -q none none
grep -q 'none exists' err; _res $? "says so"
fails 1 "a file, not a directory" lc-convert -q "$B/model.safetensors" x
grep -q 'model.safetensors: not a directory: lc-convert reads a transformers model directory' err
_res $? "says what it reads"
fails 2 "an unknown --sparsity-type" lc-convert -q --sparsity-type fancy "$B" x
fails 1 "block_size not divisible by sparsity_factor" lc-convert -q --block-size 30 \
	--sparsity-factor 4 "$B" x
grep -q 'block_size is not divisible by sparsity_factor' err; _res $? "says so"
fails 1 "num_global_tokens 0" lc-convert -q --set num_global_tokens=0 "$B" x
grep -q 'num_global_tokens 0 is outside 1..512' err; _res $? "says so"
# a malformed --set is a usage error (exit 2, as every other bad option
# value), found before anything is read
fails 2 "--set with a bare word" lc-convert -q --set sparsity_type=norm "$B" x
grep -q 'not JSON' err; _res $? "says the value must be JSON"
for kv in bad =1 'x={'; do
	fails 2 "--set $kv" lc-convert -q --set "$kv" "$B" x
done
is "nothing written by the failures" "$(ls -d x x.tmp-* 2>/dev/null)" ""
mkdir notok
cp "$B/config.json" "$B/model.safetensors" notok/
fails 1 "a BART directory without its tokenizer" lc-convert -q notok x
fails 1 "a LOCOST model" lc-convert -q "$LC_SHARE/models/demo" x
grep -q 'converts BART and LSG-BART' err; _res $? "says which models it converts"
for bad in '"sparsity_type": "fancy"/sparsity_type "fancy"' \
	'"num_global_tokens": 600/num_global_tokens 600' \
	'"sparsity_factor": 3/not divisible by sparsity_factor' \
	'"block_size": 6, "sparsity_factor": 2/odd'; do
	key=${bad%%/*} msg=${bad#*/}
	rm -rf badcfg
	mkdir badcfg
	ln -s "$PWD/norm/model.safetensors" badcfg/
	case $key in
	*sparsity_type*) sed 's/"sparsity_type": "norm"/'"$key"'/' norm/config.json ;;
	*num_global*) sed 's/"num_global_tokens": 1/'"$key"'/' norm/config.json ;;
	*block_size*) sed 's/"block_size": 32,/"block_size": 6,/' norm/config.json ;;
	*) sed 's/"sparsity_factor": 2/'"$key"'/' norm/config.json ;;
	esac >badcfg/config.json
	fails 1 "config: $key" lc-encode -m badcfg --info
	grep -q "$msg" err; _res $? "is refused: $msg"
done
# -n not a multiple of the block size: inputs pad to whole blocks, so the
# longest input the model takes is the multiple below (4000 -> 3968 with
# blocks of 128), and --truncate cuts to it
ok "-n 4000, blocks of 128" lc-convert -q -n 4000 "$B" n4000
awk 'BEGIN { for (i = 0; i < 4500; i++) printf "5 "; print "" }' | lc-cat -i ids >ids4500.lc
ok "--truncate at 4500 tokens" sh -c "lc-encode -m n4000 --truncate ids4500.lc >t.lc"
grep -q 'cut to the 3968 the model takes' "$T/err"; _res $? "cuts to 3968"
is "3968 rows and the global one" "$(lc-cat -o info t.lc | awk -F'\t' '$1 == "tensor" { print $6 }')" "3969x64"
awk 'BEGIN { for (i = 0; i < 3990; i++) printf "5 "; print "" }' | lc-cat -i ids >ids3990.lc
fails 1 "3990 tokens without --truncate" lc-encode -m n4000 ids3990.lc
grep -q '3990 tokens, more than the 3968 the model takes' "$T/err"; _res $? "says the longest it takes"
# the tokenizer's fingerprint names its ids, not its files: a conversion
# that changes model_max_length keeps it, so lc-noise and lc-encode say
# nothing of a converted model's own tokenizer; another tokenizer's ids
# (both in range) are said by lc-encode
is "a converted model's tokenizer: the same fingerprint" \
	"$(printf x | lc-tokenize -m n4000 | lc-cat -o info | awk -F'\t' '$1 == "tensor" { print $7 }')" \
	"$(printf x | lc-tokenize -m "$B" | lc-cat -o info | awk -F'\t' '$1 == "tensor" { print $7 }')"
ok "BART's tokens into its LSG conversion" sh -c "printf 'some text' | lc-tokenize -m '$B' | lc-encode -m n4000 >/dev/null"
is "nothing said" "$(cat "$T/err")" ""
ok "fairseq's ids into an LSG model" sh -c "printf 'some text' | lc-tokenize -m '$DATA/fairseq/bart' |
	lc-encode -m n4000 >/dev/null"
grep -q 'tokens of tokenizer [0-9a-f]*, but the model.s (n4000) is [0-9a-f]*: another model.s ids' "$T/err"
_res $? "is said"
# the output directory: "out/" is out; a missing parent, and a fairseq
# checkpoint's directory as the source, are said plainly
ok "an output directory given with a trailing slash" lc-convert -q "$B" slash/
[ -f slash/config.json ]; _res $? "... is written as slash"
fails 1 "an output whose directory does not exist" lc-convert -q "$B" no/such/out
grep -q "no/such/out: its directory no/such: No such file or directory" "$T/err"; _res $? "says so"
fails 1 "a fairseq checkpoint's directory" lc-convert -q "$DATA/fairseq/bart" fsout
grep -q "a fairseq checkpoint's directory (a .pt, no config.json)" "$T/err"; _res $? "says what it is"
# --set of a key that changes a tensor's shape: refused (it read past the
# source's tensors: a crash, or bytes of the next tensor written silently)
for kv in d_model=128 d_model=4096 vocab_size=2000 encoder_ffn_dim=512; do
	fails 1 "--set $kv" lc-convert -q --set $kv "$B" shape
	grep -q 'does not fit the converted configuration (a --set that changes a shape' "$T/err"
	_res $? "--set $kv: says why"
done
[ ! -e shape ]; _res $? "nothing written"
# interrupted while it writes (SIGTERM: an asynchronous job of sh starts
# with SIGINT ignored, which lc-convert leaves so), a conversion removes
# what it wrote and dies of the signal: no temporary directory left
lc-convert -q -n 300000 "$B" intr & p=$!
k=0 seen=0
while [ $k -lt 1000 ] && kill -0 $p 2>/dev/null; do
	ls -d intr.tmp-* >/dev/null 2>&1 && { seen=1; break; }
	sleep 0.005; k=$((k + 1))
done
kill -TERM $p 2>/dev/null
wait $p
rc=$?
if [ $seen = 1 ]; then
	is "terminated while it wrote" $rc 143
	[ ! -e intr ]; _res $? "and no output"
else
	is "done before it was seen writing" $rc 0
fi
is "no temporary directory left" "$(ls -d intr.tmp-* 2>/dev/null | wc -l | tr -d ' ')" 0
# a signal the caller ignores stays ignored (nohup): the conversion ends
( trap '' HUP; exec lc-convert -q -n 300000 "$B" nohup ) & p=$!
k=0
while [ $k -lt 1000 ] && kill -0 $p 2>/dev/null && ! ls -d nohup.tmp-* >/dev/null 2>&1; do
	sleep 0.005; k=$((k + 1))
done
kill -HUP $p 2>/dev/null
wait $p
is "SIGHUP ignored by the caller: the conversion ends" $?.$([ -f nohup/model.safetensors ] && echo written) 0.written
done_testing
