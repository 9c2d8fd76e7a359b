#!/bin/sh
# demo_settings.sh: how repetitive the demo model's summaries are under
# candidate generation settings; the numbers behind
# share/models/demo/generation_config.json. Run from the source tree
# after `make` (or O=DIR make):
#
#     sh tests/gen/demo_settings.sh [BUILD_DIR] > settings.tsv
#
# Documents: six books of share/samples/kjv.txt.xz (Ruth, Esther, Jonah,
# James, Jude, Revelation; the last three partly or wholly held out of the
# demo model's training), each encoded once by lc-encode. Each candidate
# decodes them all; the statistics are over the summary's words
# (lowercased, punctuation stripped), averaged over the books:
#   distinct-1  distinct words / words
#   distinct-2  distinct word bigrams / bigrams (the criterion: higher is
#               less repetitive)
#   top         the most frequent word's share of the words
#   words       summary length in words
# and the decode time of all six.
set -eu
B=${1:-build}
export PATH="$(pwd)/$B/bin:$PATH" LC_SHARE="$(pwd)/share"
M=share/models/demo
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lc-demoset.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lc-cat -i text share/samples/kjv.txt.xz -o text >"$tmp/kjv"
for b in RUTH ESTHER JONAH JAMES JUDE REVELATION; do
	awk -v b="BOOK $b" '/^BOOK / { p = ($0 == b) } p' "$tmp/kjv" >"$tmp/$b.txt"
done
# one stream of six documents (named by file), encoded once, settings
# from the command line only (no generation_config.json in the way)
lc-tokenize -m $M "$tmp"/RUTH.txt "$tmp"/ESTHER.txt "$tmp"/JONAH.txt "$tmp"/JAMES.txt \
	"$tmp"/JUDE.txt "$tmp"/REVELATION.txt | lc-encode -q -m $M >"$tmp/enc"
mkdir "$tmp/m"
cp $M/config.json $M/spiece.model "$tmp/m/"
ln -s "$(pwd)/$M/model.safetensors" "$tmp/m/model.safetensors"

stats() {   # summaries, one a line -> distinct-1 distinct-2 top words (means)
	awk '{
		n = 0; delete u; delete bg; delete c; top = 0
		line = tolower($0); gsub(/[^a-z0-9 ]/, " ", line)
		nw = split(line, w, " ")
		for (i = 1; i <= nw; i++) { u[w[i]] = 1; if (++c[w[i]] > top) top = c[w[i]] }
		for (i = 1; i < nw; i++) bg[w[i] " " w[i + 1]] = 1
		d1 = 0; for (k in u) d1++; d2 = 0; for (k in bg) d2++
		s1 += nw ? d1 / nw : 0; s2 += nw > 1 ? d2 / (nw - 1) : 0
		st += nw ? top / nw : 0; sw += nw; docs++
	} END { printf "%.3f\t%.3f\t%.3f\t%.0f", s1 / docs, s2 / docs, st / docs, sw / docs }'
}

printf 'settings\tdistinct-1\tdistinct-2\ttop\twords\tseconds\n'
while read -r name opts; do
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	lc-decode -q -m "$tmp/m" $opts "$tmp/enc" >"$tmp/out"
	t1=$(date +%s.%N)
	printf '%s\t%s\t%.2f\n' "$name" "$(stats <"$tmp/out")" "$(echo "$t1 - $t0" | bc)"
done <<'EOF2'
greedy-256 --max-new 256
greedy-128 --max-new 128
demo.sh:ngram3 --max-new 128 --no-repeat-ngram 3
ngram2 --max-new 128 --no-repeat-ngram 2
rep1.2 --max-new 128 --repetition-penalty 1.2
rep1.5 --max-new 128 --repetition-penalty 1.5
rep2.0 --max-new 128 --repetition-penalty 2.0
ngram3+rep1.2 --max-new 128 --no-repeat-ngram 3 --repetition-penalty 1.2
ngram3+rep1.5 --max-new 128 --no-repeat-ngram 3 --repetition-penalty 1.5
ngram2+rep1.2 --max-new 128 --no-repeat-ngram 2 --repetition-penalty 1.2
ngram2+rep1.5 --max-new 128 --no-repeat-ngram 2 --repetition-penalty 1.5
b4+ngram3 --max-new 128 -b 4 --no-repeat-ngram 3
b4+ngram3+rep1.2 --max-new 128 -b 4 --no-repeat-ngram 3 --repetition-penalty 1.2
b4+ngram3+rep1.5 --max-new 128 -b 4 --no-repeat-ngram 3 --repetition-penalty 1.5
b4+ngram2+rep1.2 --max-new 128 -b 4 --no-repeat-ngram 2 --repetition-penalty 1.2
b4+ngram3+rep1.2+lp2 --max-new 128 -b 4 --no-repeat-ngram 3 --repetition-penalty 1.2 --length-penalty 2
b2+ngram3+rep1.2 --max-new 128 -b 2 --no-repeat-ngram 3 --repetition-penalty 1.2
b4+ngram3+rep1.2-64 --max-new 64 -b 4 --no-repeat-ngram 3 --repetition-penalty 1.2
b4+ngram2 --max-new 128 -b 4 --no-repeat-ngram 2
ngram2+min48 --max-new 128 --no-repeat-ngram 2 --min-new 48
ngram2+rep1.2+min48 --max-new 128 --no-repeat-ngram 2 --repetition-penalty 1.2 --min-new 48
ngram3+rep1.5+min48 --max-new 128 --no-repeat-ngram 3 --repetition-penalty 1.5 --min-new 48
b4+ngram2+rep1.2+min48 --max-new 128 -b 4 --no-repeat-ngram 2 --repetition-penalty 1.2 --min-new 48
b4+ngram3+rep1.5+min48 --max-new 128 -b 4 --no-repeat-ngram 3 --repetition-penalty 1.5 --min-new 48
EOF2
