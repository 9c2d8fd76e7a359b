#!/bin/sh
# compare_builds.sh REV [--bench]: this tree's programs against those of
# git revision REV (built in a scratch directory), for a change that must
# not change behaviour (a refactoring):
#
#   outputs  the encoder states of the oracle inputs (tests/data/locost,
#            both weight files, L = 1..1000) and of a random 3000-token
#            document through a random mid-size model, byte for byte; the
#            decoder's ids for greedy and four beam-search settings on
#            those states, line for line;
#   --bench  the same machine, the same run, the builds alternating: the
#            encoder (full-size random model, 4K and 16K tokens, whole and
#            GEMMs only), the decoder (seconds per token at 16K encoder
#            tokens) and lc-train (tokens/s on the demo configuration);
#            best of BENCH_REPEAT runs (default 5), and the ratio new/old.
#
# Prints what it compares and "identical" or the differences; exit status
# 1 when an output differs. Needs git and the build dependencies.
set -eu
REV=${1:?usage: tests/gen/compare_builds.sh REV [--bench]}
BENCH=${2:-}
REPEAT=${BENCH_REPEAT:-5}
here=$(cd "$(dirname "$0")/../.." && pwd)
D=$(mktemp -d "${TMPDIR:-/tmp}/lc-compare.XXXXXX")
trap 'rm -rf "$D"' EXIT INT TERM

echo "building $REV in $D/old"
mkdir "$D/old"
git -C "$here" archive "$REV" | tar -x -C "$D/old"
make -C "$D/old" -s build >/dev/null 2>&1
make -C "$here" -s build >/dev/null
OLD=$D/old/build/bin
NEW=$here/build/bin
M=$here/tests/data/locost
fail=0

same() {   # what file1 file2
	if cmp -s "$2" "$3"; then
		echo "identical: $1"
	else
		echo "DIFFERENT: $1"
		fail=1
	fi
}

# the oracle inputs, one document per line
for c in "$M"/cases/L*; do
	od -An -td4 -v "$c/input_ids.i32" | tr -s ' \n' '  ' | sed 's/^ //; s/ $//'
	echo
done >"$D/ids.txt"
# a mid-size random model (both builds read the same weights) and a long input
cat >"$D/rand-config.json" <<'EOF'
{"architectures": ["LOCOSTForConditionalGeneration"], "d_model": 256, "d_ff": 512,
 "d_kv": 32, "d_state": 64, "num_layers": 4, "num_decoder_layers": 3, "num_heads": 8,
 "vocab_size": 4000, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF
mkdir "$D/rand"
cp "$D/rand-config.json" "$D/rand/config.json"
"$NEW/lc-encode" -m "$D/rand" --random-weights --seed 3
awk 'BEGIN { srand(5); for (i = 1; i < 3000; i++) printf "%d ", 3 + int(rand() * 3990); print 1 }' \
	>"$D/long.txt"

for b in old new; do
	eval bin=\$$(echo $b | tr a-z A-Z)
	"$bin/lc-cat" -i ids "$D/ids.txt" | "$bin/lc-encode" -q -m "$M" >"$D/$b.h"
	"$bin/lc-cat" -i ids "$D/ids.txt" | "$bin/lc-encode" -q -m "$M/pytorch_model.bin" >"$D/$b.hb"
	"$bin/lc-cat" -i ids "$D/long.txt" | "$bin/lc-encode" -q -m "$D/rand" >"$D/$b.hr"
	for h in h hb hr; do "$bin/lc-cat" -o raw "$D/$b.$h" >"$D/$b.$h.raw"; done
	for h in h hr; do
		m=$M
		[ $h = hr ] && m=$D/rand
		for args in "" "-b 4" "-b 3 --length-penalty 2 --no-repeat-ngram 2" \
		    "-b 2 --repetition-penalty 1.3 --early-stopping true" "--min-new 5 --max-new 30"; do
			# shellcheck disable=SC2086
			"$bin/lc-decode" -q -m "$m" -f ids --max-new 64 $args <"$D/$b.$h"
		done >"$D/$b.$h.ids"
	done
done
same "encoder states, oracle model (safetensors), $(wc -l <"$D/ids.txt") documents" "$D/old.h.raw" "$D/new.h.raw"
same "encoder states, oracle model (pytorch_model.bin)" "$D/old.hb.raw" "$D/new.hb.raw"
same "encoder states, random model, 3000 tokens" "$D/old.hr.raw" "$D/new.hr.raw"
same "decoder ids, oracle model, 5 settings x $(wc -l <"$D/ids.txt") documents" "$D/old.h.ids" "$D/new.h.ids"
same "decoder ids, random model, 5 settings" "$D/old.hr.ids" "$D/new.hr.ids"

if [ "$BENCH" = --bench ]; then
	J=${LC_THREADS:-$(nproc)}
	mkdir "$D/full"
	cat >"$D/full/config.json" <<'EOF'
{"architectures": ["LOCOSTForConditionalGeneration"], "d_model": 768, "d_ff": 2048,
 "d_kv": 64, "d_state": 512, "num_layers": 12, "num_decoder_layers": 12, "num_heads": 12,
 "vocab_size": 32128, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": true}
EOF
	"$NEW/lc-encode" -m "$D/full" --random-weights --seed 7
	best() {   # keeps the smallest of the numbers on stdin
		sort -g | head -1
	}
	for L in 4096 16384; do
		awk -v n="$L" 'BEGIN { srand(n); for (i = 1; i < n; i++) printf "%d ", 3 + int(rand() * 32000); print 1 }' |
			"$NEW/lc-cat" -i ids >"$D/in$L"
	done
	"$NEW/lc-encode" -q -j "$J" -m "$D/full" <"$D/in16384" >"$D/h16k"
	"$NEW/lc-chunk" -q -p '^CHAPTER [0-9]+' "$here/share/samples/kjv.txt.xz" |
		"$NEW/lc-gsg-split" -q -m "$here/share/spiece.model" >"$D/pairs.lc" 2>/dev/null
	printf '%-34s %10s %10s %8s\n' measure old new new/old
	row() {   # name, then a command template with @ for the bin directory; prints best times
		name=$1; shift
		for b in old new; do : >"$D/t.$b"; done
		i=0
		while [ $i -lt "$REPEAT" ]; do
			for b in old new; do
				eval bin=\$$(echo $b | tr a-z A-Z)
				sh -c "$(printf '%s' "$*" | sed "s|@|$bin|g")" >>"$D/t.$b"
			done
			i=$((i + 1))
		done
		o=$(best <"$D/t.old")
		n=$(best <"$D/t.new")
		awk -v a="$name" -v o="$o" -v n="$n" 'BEGIN { printf "%-34s %10.3f %10.3f %8.3f\n", a, o, n, n / o }'
	}
	for L in 4096 16384; do
		row "encode $L tokens, s" "@/lc-encode -q -j $J --stats -m $D/full <$D/in$L 2>&1 >/dev/null | sed -n 's/.*encode \([0-9.]*\) s/\1/p'"
		row "encode $L GEMMs only, s" "@/lc-encode -q -j $J -m $D/full --gemm-only <$D/in$L | cut -f3"
	done
	row "decode 16K, s per token (8 tokens)" "s=\$(date +%s.%N); @/lc-decode -q -j $J -m $D/full -f ids --max-new 1 --min-new 1 <$D/h16k >/dev/null 2>&1; m=\$(date +%s.%N); @/lc-decode -q -j $J -m $D/full -f ids --max-new 9 --min-new 9 <$D/h16k >/dev/null 2>&1; e=\$(date +%s.%N); echo \"(\$e - \$m - (\$m - \$s)) / 8\" | bc -l"
	row "train demo config, s per 4 steps" "rm -rf $D/tm; s=\$(date +%s.%N); @/lc-train --config $here/share/models/demo-config.json -o $D/tm --steps 4 --batch-tokens 4096 --max-src 512 --max-tgt 128 -j $J -q --no-rouge $D/pairs.lc; e=\$(date +%s.%N); echo \"\$e - \$s\" | bc -l"
fi
exit $fail
