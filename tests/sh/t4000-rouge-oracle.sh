#!/bin/sh
# lc-rouge against the rouge-score oracle (tests/data/rouge): every pair's
# P R F for all four types, with and without stemming, the multi-reference
# cases, and every bootstrap interval, compared as text (%.17g).
. tests/sh/lib.sh
need lc-rouge || skip_all "lc-rouge not built"
P=$DATA/rouge/pairs

# cand/ and ref/ directories of the single-reference pairs, paired by name
mkdir -p "$T/c" "$T/r"
i=0
while [ $i -lt 300 ]; do
	id=$(printf %04d $i)
	cp "$P/$id.cand" "$T/c/$id"
	cp "$P/$id.ref" "$T/r/$id"
	i=$((i + 1))
done

for stem in 0 1; do
	s=; [ $stem = 1 ] && s=-s
	ok "single pairs, stem=$stem" lc-rouge $s -b 0 -f tsv -t rouge1,rouge2,rougeL,rougeLsum "$T/c" "$T/r"
	grep -v '^#' "$T/out" >"$T/got.$stem"
	awk -F'\t' -v s=$stem 'NR > 1 && $2 == s && $1 < 300 { print $1 "\t" $3 "\t" $4 "\t" $5 "\t" $6 }' \
		"$DATA/rouge/scores.tsv" >"$T/want.$stem"
	is "300 x 4 rows, stem=$stem" "$(wc -l <"$T/got.$stem" | tr -d ' ')" 1200
	same "every value bit for bit, stem=$stem" "$T/got.$stem" "$T/want.$stem"
done

# multi-reference: one invocation per id, references in order
for stem in 0 1; do
	s=; [ $stem = 1 ] && s=-s
	: >"$T/mgot"
	i=300
	while [ $i -lt 330 ]; do
		id=$(printf %04d $i)
		lc-rouge $s -b 0 -f tsv -t rouge1,rouge2,rougeL,rougeLsum "$P/$id.cand" $(ls "$P/$id".ref.* | sort) |
			grep -v '^#' | sed "s|^[^\t]*\t|$id\t|" >>"$T/mgot"
		i=$((i + 1))
	done
	awk -F'\t' -v s=$stem 'NR > 1 && $2 == s && $1 >= 300 { print $1 "\t" $3 "\t" $4 "\t" $5 "\t" $6 }' \
		"$DATA/rouge/scores.tsv" >"$T/mwant"
	same "multi-reference (best F per type, first on a tie), stem=$stem" "$T/mgot" "$T/mwant"
done

# bootstrap: the first n pairs, reseeded per (n, seed, stem)
: >"$T/bgot"
for n in 1 2 5 37 300; do
	mkdir -p "$T/bc$n" "$T/br$n"
	i=0
	while [ $i -lt $n ]; do
		id=$(printf %04d $i)
		ln -s "$T/c/$id" "$T/bc$n/$id"
		ln -s "$T/r/$id" "$T/br$n/$id"
		i=$((i + 1))
	done
	for seed in 0 123; do
		for stem in 0 1; do
			s=; [ $stem = 1 ] && s=-s
			lc-rouge $s -b 1000 --seed $seed -f tsv -t rouge1,rouge2,rougeL,rougeLsum \
				"$T/bc$n" "$T/br$n" | awk -F'\t' -v n=$n -v seed=$seed -v stem=$stem '
				$1 == "low" || $1 == "mid" || $1 == "high" {
					v[$2, $1, "P"] = $3; v[$2, $1, "R"] = $4; v[$2, $1, "F"] = $5
					if (!($2 in seen)) { seen[$2] = 1; order[++nt] = $2 }
				}
				END {
					for (t = 1; t <= nt; t++) {
						split("P R F", st, " ")
						for (k = 1; k <= 3; k++)
							print n "\t" seed "\t" stem "\t" order[t] "\t" st[k] "\t" \
							      v[order[t], "low", st[k]] "\t" v[order[t], "mid", st[k]] "\t" \
							      v[order[t], "high", st[k]]
					}
				}' >>"$T/bgot"
		done
	done
done
tail -n +2 "$DATA/rouge/bootstrap.tsv" >"$T/bwant"
is "240 bootstrap rows" "$(wc -l <"$T/bgot" | tr -d ' ')" 240
sort "$T/bgot" >"$T/bgot.s"
sort "$T/bwant" >"$T/bwant.s"
same "every bootstrap low/mid/high bit for bit" "$T/bgot.s" "$T/bwant.s"

done_testing
