#!/bin/sh
# bench/tokenize.sh: lc-tokenize's throughput next to spm_encode's, on the
# same 10+ MB of text (tests/data/spm/lines.txt 40 times: man page lines
# in English and 19 other languages), with the same model (share/spiece.model,
# or $LC_TOKENIZER), in the same run. Best of 3 runs each. Prints, asserts nothing.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
model=${LC_TOKENIZER:-${LC_SHARE:-$here/share}/spiece.model}
[ -d "$model" ] && model=$model/spiece.model
src=$here/tests/data/spm/lines.txt
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
i=0
while [ $i -lt 40 ]; do cat "$src"; i=$((i + 1)); done >"$tmp/text"
bytes=$(wc -c <"$tmp/text")

now() { date +%s.%N; }
# best of 3 wall-clock seconds for: sh -c "$1"
best() {
	b=
	for r in 1 2 3; do
		t0=$(now); sh -c "$1" >/dev/null 2>&1 || { echo fail; return; }; t1=$(now)
		b=$(echo "$t0 $t1 ${b:-}" | awk '{ d = $2 - $1; if ($3 != "" && $3 < d) d = $3; printf "%.3f", d }')
	done
	echo "$b"
}
rate() { echo "$bytes $1" | awk '$2 == "fail" { print "failed"; next } { printf "%.1f MB/s (%.2f s)", $1 / 1e6 / $2, $2 }'; }

echo "tokenize: $(echo "$bytes" | awk '{ printf "%.1f", $1 / 1e6 }') MB, model $model"
if command -v spm_encode >/dev/null 2>&1; then
	echo "  spm_encode --output_format=id (lines)    $(rate "$(best "spm_encode --model='$model' --output_format=id <'$tmp/text'")")"
else
	echo "  spm_encode: not installed (apt-get install sentencepiece)"
fi
echo "  lc-tokenize -d line -f ids --no-eos      $(rate "$(best "lc-tokenize -q -m '$model' -d line -f ids --no-eos <'$tmp/text'")")"
echo "  lc-tokenize -d line (stream)             $(rate "$(best "lc-tokenize -q -F -m '$model' -d line <'$tmp/text'")")"
echo "  lc-tokenize (one 10 MB document, stream) $(rate "$(best "lc-tokenize -q -F -m '$model' <'$tmp/text'")")"

# Byte-level BPE (GPT-2's 50,257-entry vocabulary, shipped as test data) on
# the same text, next to transformers' GPT2Tokenizer (bench/gpt2_tok.py,
# one run, one core) when python3 can import transformers: it is no Debian
# package, so put a checkout on PYTHONPATH.
bpe=${LC_BPE:-$here/tests/data/bart/tokenizer/gpt2}
echo "tokenize: byte-level BPE, $bpe"
if /usr/bin/python3 -c 'from transformers import GPT2Tokenizer' >/dev/null 2>&1; then
	for m in line doc; do
		s=$(taskset -c 0 /usr/bin/python3 "$here/bench/gpt2_tok.py" "$bpe/vocab.json" "$bpe/merges.txt" \
			"$tmp/text" $m 2>/dev/null | cut -d' ' -f1)
		[ -n "$s" ] || s=fail
		[ $m = line ] && l='per line (Python)  ' || l='whole text (Python)'
		echo "  GPT2Tokenizer.encode $l   $(rate "$s")"
	done
else
	echo "  transformers GPT2Tokenizer: not importable (put a transformers checkout on PYTHONPATH)"
fi
echo "  lc-tokenize -d line -f ids --no-eos      $(rate "$(best "taskset -c 0 lc-tokenize -q -m '$bpe' -d line -f ids --no-eos <'$tmp/text'")")"
echo "  lc-tokenize (one 10 MB document, stream) $(rate "$(best "taskset -c 0 lc-tokenize -q -F -m '$bpe' <'$tmp/text'")")"
