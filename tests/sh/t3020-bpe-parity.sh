#!/bin/sh
# lc-tokenize and lc-detokenize with byte-level BPE against transformers'
# GPT2Tokenizer and BartTokenizer (tests/data/bart, from the oracle): every
# line of lines.txt with GPT-2's vocabulary, with and without
# add_prefix_space: ids, tokens, decoded text with and without clean-up;
# BART's <s> ... </s> and <mask>; hostile tokenizer files.
. tests/sh/lib.sh
B=$DATA/bart/tokenizer
[ -f "$B/lines.txt" ] || skip_all "no tests/data/bart"

for v in gpt2 gpt2_prefix; do
	p=
	[ $v = gpt2_prefix ] && p=--prefix-space
	ok "$v: ids" sh -c "lc-tokenize -m $B/gpt2 $p -d line -f ids <$B/lines.txt >$T/$v.ids"
	same "$v: ids identical to GPT2Tokenizer.encode" "$T/$v.ids" "$B/$v.ids.txt"
	ok "$v: tokens" sh -c "lc-tokenize -m $B/gpt2 $p -d line -f pieces <$B/lines.txt >$T/$v.tok"
	same "$v: tokens identical to GPT2Tokenizer.tokenize" "$T/$v.tok" "$B/$v.tokens.txt"
	ok "$v: decode" sh -c "lc-detokenize -m $B/gpt2 --keep-special --no-clean-up <$B/$v.ids.txt >$T/$v.dec"
	same "$v: identical to decode(clean_up_tokenization_spaces=False)" "$T/$v.dec" "$B/$v.decoded.txt"
	ok "$v: decode with clean-up" sh -c "lc-detokenize -m $B/gpt2 --keep-special <$B/$v.ids.txt >$T/$v.cdec"
	same "$v: identical to decode()" "$T/$v.cdec" "$B/$v.decoded_cleanup.txt"
done
ok "through a stream" sh -c "lc-tokenize -m $B/gpt2 -d line <$B/lines.txt | lc-detokenize -m $B/gpt2 --keep-special --no-clean-up >$T/s.dec"
same "tokenize | detokenize gives the lines back" "$T/s.dec" "$B/lines.txt"

# BART: the model directory's tokenizer; <s> ... </s> by default
M=$DATA/bart/tiny_bart
is "BART wraps in <s> ... </s>" "$(printf 'Paris is the <mask> of France.' | lc-tokenize -m $M -f ids)" \
	"0 51 287 275 322 266 999 290 380 85 594 17 2"
is "<mask> swallows the space before it" "$(printf 'Paris is the <mask> of France.' | lc-tokenize -m $M -f pieces)" \
	"<s> P ar is Ġis Ġthe <mask> Ġof ĠF r ance . </s>"
is "--no-eos keeps <s>" "$(printf 'Hello world' | lc-tokenize -m $M -f ids --no-eos)" "0 43 699 82 480 339"
is "--no-special: neither" "$(printf 'Hello world' | lc-tokenize -m $M -f ids --no-special)" "43 699 82 480 339"
is "the tokens of a stream name the tokenizer" \
	"$(printf 'x' | lc-tokenize -m $M | lc-cat -o info | awk -F'\t' '$1 == "tensor" { print ($7 ~ /^tokenizer=[0-9a-f]+$/) }')" 1
is "detokenize drops <s> and </s>" "$(printf 'Hello world' | lc-tokenize -m $M | lc-detokenize -m $M)" "Hello world"
is "--max-len keeps </s> last" "$(printf 'Hello world' | lc-tokenize -m $M -f ids --max-len 3)" "0 43 2"

# add_prefix_space as each class has it (transformers 4.36's
# prepare_for_tokenization): BartTokenizer and RobertaTokenizer put the
# space only before a text that does not start with whitespace
# (str.isspace: U+2028 and NBSP too, not U+200B); GPT2Tokenizer before
# any text.
S=$B/bart_small
for t in ' ' ' a' '\t' '\342\200\250x' '\302\240x' '\n\n' ''; do
	is "BART, --prefix-space, a text starting with whitespace: no space added ($t)" \
		"$(printf "$t" | lc-tokenize -m $S --prefix-space -f ids)" "$(printf "$t" | lc-tokenize -m $S -f ids)"
done
for t in 'a' 'Hello world' '\342\200\213x'; do
	is "BART, --prefix-space, any other: a space added ($t)" \
		"$(printf "$t" | lc-tokenize -m $S --prefix-space -f ids)" "$(printf " $t" | lc-tokenize -m $S -f ids)"
done
for t in ' a' '\ta'; do
	is "GPT-2, --prefix-space: always a space ($t)" \
		"$(printf "$t" | lc-tokenize -m $B/gpt2 --prefix-space -f ids)" "$(printf " $t" | lc-tokenize -m $B/gpt2 -f ids)"
done
mkdir "$T/bpfx"
cp $S/vocab.json $S/merges.txt "$T/bpfx/"
printf '{"add_prefix_space": true, "tokenizer_class": "BartTokenizer"}' >"$T/bpfx/tokenizer_config.json"
is "a tokenizer_config.json naming no special tokens: the class's <s> </s>" \
	"$(printf ' a' | lc-tokenize -m "$T/bpfx" -f ids)" "$(printf ' a' | lc-tokenize -m $S -f ids)"
mkdir "$T/gcfg"
cp $B/gpt2/vocab.json $B/gpt2/merges.txt "$T/gcfg/"
printf '{"model_max_length": 1024}' >"$T/gcfg/tokenizer_config.json"
is "... GPT-2's <|endoftext|>, split out as a special token" \
	"$(printf 'a<|endoftext|>b' | lc-tokenize -m "$T/gcfg" -f ids)" "64 50256 65"
is "GPT-2 adds no eos: --max-len cuts a trailing <|endoftext|> as any id" \
	"$(printf 'a b<|endoftext|>' | lc-tokenize -m $B/gpt2 -f ids --max-len 2)" "64 275"
is "... as the first ids of the whole" "$(printf 'a b<|endoftext|>' | lc-tokenize -m $B/gpt2 -f ids)" "64 275 50256"

# hostile files: clear errors naming the file
mkdir "$T/bad"
printf '{"a": 0,' >"$T/bad/vocab.json"
printf '#version\na b\n' >"$T/bad/merges.txt"
fails 1 "broken vocab.json" sh -c "printf x | lc-tokenize -m $T/bad"
grep -q "$T/bad: vocab.json:" "$T/err"; _res $? "the message names the file"
printf '{"a": 0, "b": 1}' >"$T/bad/vocab.json"
printf '#version\na\n' >"$T/bad/merges.txt"
fails 1 "a merges line with one symbol" sh -c "printf x | lc-tokenize -m $T/bad"
grep -q "merges.txt: line 2: 1 symbols" "$T/err"; _res $? "the message names the line"
printf '{"a": 0, "b": 99999999}' >"$T/bad/vocab.json"
printf '#version\n' >"$T/bad/merges.txt"
fails 1 "an id out of range" sh -c "printf x | lc-tokenize -m $T/bad"
grep -q "must be an integer in" "$T/err"; _res $? "says so"
truncate -s 2G "$T/bad/vocab.json"   # sparse: a 2 GB claim that costs no disk
fails 1 "a 2 GB vocab.json" sh -c "printf x | lc-tokenize -m $T/bad"
grep -q "vocab.json: 2147483648 bytes, more than the 256 MiB" "$T/err"; _res $? "is refused before it is read"

# added tokens that are not special decode as texts of their own, joined
# by spaces (transformers 4.36's _decode; tests/gen/bpe_added_ref.py,
# BartTokenizer on bart_small plus <new>, [R] and <L>: 16 texts). lc
# joined their text to the rest: x<new>y, not x <new> y
A=$DATA/bart/tokenizer
ok "added tokens: encode" sh -c "lc-tokenize -m $A/bart_added -d nul -f ids <$A/added.nul >$T/added.ids"
same "added tokens: the ids of BartTokenizer" "$T/added.ids" "$A/added.ids"
ok "added tokens: decode" sh -c "lc-detokenize -m $A/bart_added -f ids <$A/added.ids >$T/added.dec"
same "added tokens: decode(skip_special_tokens=True)" "$T/added.dec" "$A/added.decoded"
ok "added tokens: decode, specials kept, no clean-up" \
	sh -c "lc-detokenize -m $A/bart_added -f ids --keep-special --no-clean-up <$A/added.ids >$T/added.keep"
same "added tokens: decode(skip_special_tokens=False, no clean-up)" "$T/added.keep" \
	"$A/added.decoded_keep"
# the same tokens with ids after vocab.json's, as transformers' add_tokens()
# and save_pretrained() leave them: the same ids and texts (transformers
# gives the same for both directories; lc refused this one)
mkdir -p "$T/beyond"
cp "$A/bart_small/vocab.json" "$A/bart_small/merges.txt" "$A/bart_added/tokenizer_config.json" \
	"$T/beyond/"
ok "added tokens after vocab.json: encode" \
	sh -c "lc-tokenize -m $T/beyond -d nul -f ids <$A/added.nul >$T/beyond.ids"
same "added tokens after vocab.json: the same ids" "$T/beyond.ids" "$A/added.ids"
ok "added tokens after vocab.json: decode" \
	sh -c "lc-detokenize -m $T/beyond -f ids <$A/added.ids >$T/beyond.dec"
same "added tokens after vocab.json: the same texts" "$T/beyond.dec" "$A/added.decoded"
# which tokens decoding leaves out and which it decodes apart: the slow
# tokenizer's all_special_ids (named roles, additional_special_tokens),
# not the "special" flags (tests/gen/bpe_specials_ref.py, 5 tokenizers,
# one saved by transformers itself, whose model_max_length int(1e30) lc
# refused as too big an integer; 11 id lines, both decode modes)
V=$A/specials
for v in special_unnamed pad_notspecial additional beyond saved; do
	mkdir -p "$T/v_$v"
	if [ $v = saved ]; then
		cp "$V/saved/"* "$T/v_$v/"
	else
		src=$A/bart_added
		[ $v = beyond ] && src=$A/bart_small
		cp "$src/vocab.json" "$src/merges.txt" "$V/$v/tokenizer_config.json" "$T/v_$v/"
	fi
	ok "$v: decode" sh -c "lc-detokenize -m $T/v_$v -f ids <$V/ids.txt >$T/v.dec"
	same "$v: decode(skip_special_tokens=True)" "$T/v.dec" "$V/$v.decoded"
	ok "$v: decode, specials kept" \
		sh -c "lc-detokenize -m $T/v_$v -f ids --keep-special --no-clean-up <$V/ids.txt >$T/v.keep"
	same "$v: decode(skip_special_tokens=False, no clean-up)" "$T/v.keep" "$V/$v.decoded_keep"
done
# a tokenizer saved before transformers 4.34 (no added_tokens_decoder):
# added_tokens.json, and tokenizer.json's added tokens, merged by id,
# additional special tokens from both the config and
# special_tokens_map.json; and after 4.34, no special_tokens_map.json;
# an added token's text decoded where vocab.json has another token at its
# id; special tokens no file numbers, numbered after the others, and texts
# wrapped in cls_token ... sep_token; as 4.36's slow tokenizer reads them
# (tests/gen/bpe_legacy_ref.py, 20 tokenizers, 41 texts encoded, 8 to 15
# id lines decoded both ways)
G=$A/legacy
for v in plain tokjson cfgroles maskjson masknamed overlap dupid tokdup addobj addvocab union \
	smignored cfgvocab smrole invocab newadd newrole newlegacy newmask single; do
	rm -rf "$T/l_$v"
	cp -r "$G/$v" "$T/l_$v"
	cp "$V/saved/vocab.json" "$V/saved/merges.txt" "$T/l_$v/"
	ok "legacy $v: encode" sh -c "lc-tokenize -m $T/l_$v -d nul -f ids <$G/cases.nul >$T/l.ids"
	same "legacy $v: the ids of BartTokenizer" "$T/l.ids" "$G/$v.ids"
	ok "legacy $v: decode" sh -c "lc-detokenize -m $T/l_$v -f ids <$G/$v.in >$T/l.dec"
	same "legacy $v: decode(skip_special_tokens=True)" "$T/l.dec" "$G/$v.decoded"
	ok "legacy $v: decode, specials kept" \
		sh -c "lc-detokenize -m $T/l_$v -f ids --keep-special --no-clean-up <$G/$v.in >$T/l.keep"
	same "legacy $v: decode(skip_special_tokens=False, no clean-up)" "$T/l.keep" \
		"$G/$v.decoded_keep"
done
# ... and refused with a message when it is not a {"text": id} object
for bad in '[1, 2]' '{"<z>": "1000"}' '{"<z>": -1}' '{"<z>": 1000' '{"": 1000}' \
	'{"<z>": 2000000000}'; do
	printf '%s' "$bad" >"$T/l_plain/added_tokens.json"
	fails 1 "added_tokens.json $bad" sh -c "printf x | lc-tokenize -m $T/l_plain"
	grep -q -e 'added_tokens.json' -e 'added token' "$T/err"
	_res $? "is refused, naming the file or the token"
done
# a tokenizer.json or added_tokens.json beside vocab.json that cannot be
# read matters only to a tokenizer that needs it
rm -f "$T/l_plain/added_tokens.json" "$T/l_smrole/tokenizer.json"
mkfifo "$T/l_plain/added_tokens.json" "$T/l_smrole/tokenizer.json"
fails 1 "a legacy tokenizer whose added_tokens.json is a pipe" \
	sh -c "printf x | lc-tokenize -m $T/l_plain"
grep -q 'added_tokens.json' "$T/err"; _res $? "is refused, naming it"
mkfifo "$T/l_smrole/added_tokens.json"
ok "a later one with a tokenizer.json and an added_tokens.json that are pipes" \
	sh -c "lc-tokenize -m $T/l_smrole -d nul -f ids <$G/cases.nul >$T/l.ids"
same "its ids as before" "$T/l.ids" "$G/smrole.ids"
printf '{"added_tokens": 3}' >"$T/l_tokjson/tokenizer.json"
fails 1 "a legacy tokenizer.json's added_tokens not a list" \
	sh -c "printf x | lc-tokenize -m $T/l_tokjson"
grep -q 'tokenizer.json: "added_tokens" is not a list' "$T/err"; _res $? "is refused"
sed 's/"1002": {/"2000000000": {/' "$A/bart_added/tokenizer_config.json" >"$T/beyond/tokenizer_config.json"
fails 1 "an added token's absurd id" sh -c "printf x | lc-tokenize -m $T/beyond"
grep -q 'added token "<L>": id 2000000000 outside \[0, 66536) (the vocabulary and 65536 ids after it)' \
	"$T/err"; _res $? "is refused, naming the token and the bound"
# added tokens that strip their neighbours empty, join them as single
# words (in chains), hold a space or lie over each other, as 4.36's slow
# tokenizer splits texts at them (tests/gen/bpe_words_ref.py: 12 texts,
# 2,000 random ones, and 4 over a second tokenizer)
W=$A/words
ok "single_word and strips: encode" \
	sh -c "lc-tokenize -m $W/tok -d nul -f ids <$W/cases.nul >$T/w.ids"
same "single_word and strips: the ids of BartTokenizer" "$T/w.ids" "$W/cases.ids"
ok "2,000 random texts over such tokens: encode" \
	sh -c "lc-tokenize -m $W/tok -d nul -f ids <$W/random.nul >$T/w.ids"
same "2,000 random texts over such tokens: the ids of BartTokenizer" "$T/w.ids" "$W/random.ids"
ok "a token with a space in it after an rstrip one: encode" \
	sh -c "lc-tokenize -m $W/tok2 -d nul -f ids <$W/cases2.nul >$T/w.ids"
same "a token with a space in it after an rstrip one: the ids of BartTokenizer" "$T/w.ids" \
	"$W/cases2.ids"
# a stream names its tokenizer's fingerprint, which later versions must
# keep for the same files: those the binaries before gave these
for fp in gpt2:afce2a8a91c8f22d bart_small:1584db101c772784 bart_added:9f496ac57cf62b18 \
	specials/saved:d092f918bbaaf83a; do
	is "${fp%%:*}: the fingerprint streams made before name" \
		"$(printf hi | lc-tokenize -m "$A/${fp%%:*}" | lc-cat -o info |
			sed -n 's/.*tokenizer=\([0-9a-f]*\).*/\1/p' | head -1)" "${fp#*:}"
done
done_testing
