#!/bin/sh
# bench/rouge.sh: lc-rouge on the oracle pairs (tests/data/rouge/pairs),
# all four types, stemming on. Prints seconds; asserts nothing.
# If Google's rouge-score is importable by python3, it is timed on the same
# pairs in the same run and the ratio printed; otherwise that is said.
set -e
D=$(cd "$(dirname "$0")/.." && pwd)/tests/data/rouge/pairs
T=$(mktemp -d "${TMPDIR:-/tmp}/lc-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir "$T/c" "$T/r"
for f in "$D"/*.cand; do
	id=$(basename "$f" .cand)
	[ -f "$D/$id.ref" ] || continue
	cp "$f" "$T/c/$id"; cp "$D/$id.ref" "$T/r/$id"
done
n=$(ls "$T/c" | wc -l)
now() { date +%s.%N; }
TYPES=rouge1,rouge2,rougeL,rougeLsum
reps=5
t0=$(now)
i=0; while [ $i -lt $reps ]; do
	lc-rouge -q -s -b 0 -f tsv -t $TYPES "$T/c" "$T/r" >/dev/null; i=$((i + 1)); done
t1=$(now)
i=0; while [ $i -lt $reps ]; do
	lc-rouge -q -s -b 1000 -f tsv -t $TYPES "$T/c" "$T/r" >/dev/null; i=$((i + 1)); done
t2=$(now)
lc=$(echo "($t1 - $t0) / $reps" | bc -l)
lcb=$(echo "($t2 - $t1) / $reps" | bc -l)
printf 'rouge: lc-rouge, %d pairs, 4 types, stemming: %.3f s (scores), %.3f s (with 1000-sample bootstrap)\n' \
	"$n" "$lc" "$lcb"
PY=${PYTHON:-python3}
if "$PY" -c 'import rouge_score' 2>/dev/null; then
	t3=$(now)
	"$PY" - "$T/c" "$T/r" <<'PYEOF'
import os, sys
from rouge_score import rouge_scorer, scoring
c, r = sys.argv[1], sys.argv[2]
sc = rouge_scorer.RougeScorer(['rouge1', 'rouge2', 'rougeL', 'rougeLsum'], use_stemmer=True)
agg = scoring.BootstrapAggregator()
for name in sorted(os.listdir(c)):
    cand = open(os.path.join(c, name), 'rb').read().decode()
    ref = open(os.path.join(r, name), 'rb').read().decode()
    agg.add_scores(sc.score(ref, cand))
agg.aggregate()
PYEOF
	t4=$(now)
	py=$(echo "$t4 - $t3" | bc -l)
	printf 'rouge: rouge-score: %.3f s; lc-rouge is %.1f times faster\n' "$py" "$(echo "$py / $lcb" | bc -l)"
else
	echo "rouge: rouge-score is not installed here ($PY cannot import rouge_score): ratio not measured"
fi
