#!/usr/bin/env python3
"""Expected files for tests/sh/t4002-rouge-jsonl.sh (tests/data/rouge_csv/).

This is NOT rouge-score. It takes the oracle numbers that rouge-score
0.1.2 itself computed (tests/data/rouge/scores.tsv and bootstrap.tsv, see
tests/data/rouge/README.md) and lays them out the way rouge-score's
command-line tool writes its CSV (rouge_score/rouge.py with io.py, read in
google-research/google-research, rouge/io.py: _write_aggregates_to_csv
and _write_scores_to_csv). Only that formatting is mimicked here:

  aggregate (BootstrapAggregator; rouge.py --aggregate, the default):
    "score_type,low,mid,high\\n", then for each type in sorted() order
    "%s-R,%f,%f,%f\\n", "%s-P,...", "%s-F,..." (low, mid, high), in that
    order: recall first.
  per document (rouge.py --noaggregate):
    "id" + ",{t}-P,{t}-R,{t}-F" for each type in sorted() order, "\\n";
    then per document "%d" % i (0-based) + ",%f,%f,%f" (P, R, F), "\\n".

The oracle's aggregator saw the types in the order rouge1, rouge2, rougeL,
rougeLsum, 1000 samples, np.random.seed(SEED) before aggregate(): lc-rouge
must be run with -t rouge1,rouge2,rougeL,rougeLsum -b 1000 --seed SEED.

  rouge_csv_ref.py expected OUTDIR   the expected CSV and the JSONL inputs
  rouge_csv_ref.py jsonl N OUTDIR    cand.jsonl / ref.jsonl of the first N
                                     pairs (candidates shuffled), for tests

Run from the top of the tree; the committed files are
`python3 tests/gen/rouge_csv_ref.py expected tests/data/rouge_csv`.
"""
import json
import os
import sys

DATA = os.path.join("tests", "data", "rouge")
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def read_tsv(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f]


def scores(stem):
    """{id: {type: (P, R, F)}} for one stem setting."""
    out = {}
    for r in read_tsv("scores.tsv"):
        if int(r["stem"]) == stem:
            out.setdefault(r["id"], {})[r["type"]] = (float(r["P"]), float(r["R"]), float(r["F"]))
    return out


def aggregate_csv(n, seed, stem):
    agg = {}
    for r in read_tsv("bootstrap.tsv"):
        if (int(r["n"]), int(r["seed"]), int(r["stem"])) == (n, seed, stem):
            agg[(r["type"], r["stat"])] = (float(r["low"]), float(r["mid"]), float(r["high"]))
    assert len(agg) == 12, (n, seed, stem)
    lines = ["score_type,low,mid,high\n"]
    for t in sorted(TYPES):
        for stat in ("R", "P", "F"):
            lines.append("%s-%s,%f,%f,%f\n" % ((t, stat) + agg[(t, stat)]))
    return "".join(lines)


def docs_csv(ids, names, stem, types):
    s = scores(stem)
    ts = sorted(types)
    lines = ["id" + "".join(",{t}-P,{t}-R,{t}-F".format(t=t) for t in ts) + "\n"]
    for i, name in zip(ids, names):
        lines.append(str(name) + "".join(",%f,%f,%f" % s[i][t] for t in ts) + "\n")
    return "".join(lines)


def text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def shuffled(n):
    """Pair ids in a fixed scrambled order: k -> 17k + 5 mod n, a
    permutation when n and 17 are coprime (37, 300)."""
    step = 17 if n % 17 else 1
    return ["%04d" % ((step * k + 5) % n) for k in range(n)]


def write_jsonl(n, outdir):
    """Candidates shuffled, as lc-decode would write them (UTF-8 as is);
    references in id order, as a datasets export (ASCII with escapes)."""
    pairs = os.path.join(DATA, "pairs")
    with open(os.path.join(outdir, "cand.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for i in shuffled(n):
            rec = {"id": i, "summary": text(os.path.join(pairs, i + ".cand"))}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(os.path.join(outdir, "ref.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for k in range(n):
            i = "%04d" % k
            rec = {"id": i, "article": "(not used)", "abstract": text(os.path.join(pairs, i + ".ref"))}
            f.write(json.dumps(rec) + "\n")


def write(path, s):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(s)


def main(argv):
    if len(argv) == 3 and argv[1] == "expected":
        out = argv[2]
        os.makedirs(out, exist_ok=True)
        for n, seed, stem in ((37, 0, 0), (300, 123, 1), (1, 0, 1)):
            write(os.path.join(out, "agg_n%d_seed%d_stem%d.csv" % (n, seed, stem)),
                  aggregate_csv(n, seed, stem))
        ids = ["%04d" % i for i in range(37)]
        # rouge-score numbers its documents from 0
        write(os.path.join(out, "docs_n37_stem1.csv"), docs_csv(ids, range(37), 1, TYPES))
        # lc-rouge --jsonl names them by id, in the candidates' order
        sh = shuffled(37)
        write(os.path.join(out, "docs_jsonl37_stem1.csv"), docs_csv(sh, sh, 1, TYPES))
        write_jsonl(37, out)
    elif len(argv) == 4 and argv[1] == "jsonl":
        write_jsonl(int(argv[2]), argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
