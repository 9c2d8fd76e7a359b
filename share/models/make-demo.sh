#!/bin/sh
# make-demo.sh RUN DEST: the last step of `make demo-model`.
#
# Copies the lc-train checkpoint in RUN (config.json, model.safetensors,
# spiece.model; not the optimizer state) into DEST, with its loss log
# (loss.tsv) and the loss curve (loss.png, drawn by gnuplot when it is
# installed), then evaluates the model on the held-out GSG pairs that
# lc-train --holdout-out wrote (RUN/heldout.src.lc, RUN/heldout.tgt.lc)
# and writes DEST/eval.txt: ROUGE-1/2/Lsum (lc-rouge, F x 100) of
#   - the demo model's greedy summaries,
#   - the lead baseline: the source's first words, as many as the
#     reference (the GSG pseudo-summary) has,
# against the pseudo-summaries; and, against the rest of each chapter
# (the source), the same two next to the GSG pseudo-summary itself, the
# oracle of that comparison (GSG chose its sentences by ROUGE-1 against
# the rest).
set -eu
RUN=$1
DEST=$2
MAXNEW=${DEMO_MAX_NEW:-128}

mkdir -p "$DEST"
for f in config.json model.safetensors spiece.model loss.tsv; do
	cp -f "$RUN/$f" "$DEST/$f.tmp"
	mv -f "$DEST/$f.tmp" "$DEST/$f"
done

if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<EOF
set terminal pngcairo size 900,540 font ",11" noenhanced
set output "$DEST/loss.png.tmp"
set title "lc-train: demo model, GSG pretraining on the King James Bible"
set xlabel "step (4096 source + target tokens each)"
set ylabel "token cross-entropy (nats)"
set grid
set key top right
set datafile separator "\t"
set datafile missing ""
plot "$DEST/loss.tsv" every ::1 using 1:4 with lines lw 1 lc rgb "#7799cc" title "training (batch)", \
     "$DEST/loss.tsv" every ::1 using 1:(\$7 > 0 ? \$7 : 1/0) with linespoints pt 7 ps 0.8 lw 2 lc rgb "#cc3311" title "held-out pairs"
EOF
	mv -f "$DEST/loss.png.tmp" "$DEST/loss.png"
else
	echo "make-demo.sh: gnuplot is not installed (Debian: gnuplot-nox); no loss.png" >&2
fi

[ -f "$RUN/heldout.src.lc" ] || { echo "make-demo.sh: no held-out pairs in $RUN" >&2; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lc-demo-eval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
lc-detokenize -m "$DEST" "$RUN/heldout.tgt.lc" >"$tmp/ref"
lc-detokenize -m "$DEST" "$RUN/heldout.src.lc" >"$tmp/src"
t0=$(date +%s)
lc-encode -q -m "$DEST" "$RUN/heldout.src.lc" | lc-decode -q -m "$DEST" --max-new "$MAXNEW" >"$tmp/model"
t1=$(date +%s)
# lead: the source's first words, as many as the reference has
awk 'NR == FNR { n[FNR] = NF; next }
     { s = ""; for (i = 1; i <= NF && i <= n[FNR]; i++) s = s (i > 1 ? " " : "") $i; print s }' \
	"$tmp/ref" "$tmp/src" >"$tmp/lead"
score() {  # score CAND REF: "R1 R2 RLsum" (F x 100, bootstrap mid)
	lc-rouge -q -d line -f tsv -t rouge1,rouge2,rougeLsum "$1" "$2" |
		awk -F'\t' '$1 == "mid" { f[$2] = $5 * 100 }
		            END { printf "%6.2f  %6.2f  %8.2f\n", f["rouge1"], f["rouge2"], f["rougeLsum"] }'
}
n=$(wc -l <"$tmp/ref" | tr -d ' ')
{
	echo "Held-out evaluation of the demo model: $n GSG pairs (the last chapters of the"
	echo "Bible, never trained on), greedy decoding, at most $MAXNEW new tokens ($((t1 - t0)) s to encode and decode)."
	echo "ROUGE F x 100 by lc-rouge (rouge-score's tokenizer, no stemming; bootstrap mid)."
	echo
	echo "Against the GSG pseudo-summaries (the targets):"
	echo "                                   R-1     R-2    R-Lsum"
	printf '  demo model (greedy)            %s\n' "$(score "$tmp/model" "$tmp/ref")"
	printf '  lead words, same length        %s\n' "$(score "$tmp/lead" "$tmp/ref")"
	echo
	echo "Against the rest of each chapter (the sources):"
	echo "                                   R-1     R-2    R-Lsum"
	printf '  demo model (greedy)            %s\n' "$(score "$tmp/model" "$tmp/src")"
	printf '  lead words, same length        %s\n' "$(score "$tmp/lead" "$tmp/src")"
	printf '  GSG pseudo-summary (oracle)    %s\n' "$(score "$tmp/ref" "$tmp/src")"
	echo
	echo "Mean words per summary: model $(awk '{w += NF} END {printf "%.1f", w / NR}' "$tmp/model"),"\
	     "pseudo-summary $(awk '{w += NF} END {printf "%.1f", w / NR}' "$tmp/ref")."
	echo
	echo "First held-out summaries (model | pseudo-summary):"
	for i in 1 2 3; do
		echo "  model: $(sed -n "${i}p" "$tmp/model" | cut -c1-300)"
		echo "  GSG:   $(sed -n "${i}p" "$tmp/ref" | cut -c1-300)"
	done
} >"$DEST/eval.txt.tmp"
mv -f "$DEST/eval.txt.tmp" "$DEST/eval.txt"
cat "$DEST/eval.txt"
