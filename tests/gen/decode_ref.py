#!/usr/bin/env python3
"""
decode_ref.py -- goldens for lc-decode's search (greedy with logits
processors, and beam search), computed with the oracle's float64 reference
decoder (locost_ref.LocostRef.decode_logits, teacher-forced, no cache) and
an independent Python implementation of Hugging Face generate()'s
semantics (greedy_search / beam_search + BeamSearchScorer +
RepetitionPenalty / NoRepeatNGram / MinNewTokens processors, as in
transformers 4.36: a hypothesis closed by eos is normalised by its generated
tokens with the eos, an open one at the end by its generated tokens, and
"never" by max_length - 1).

Run once, by hand, on a machine that has the oracle; the tests only read
the output file:

    /usr/bin/python3 tests/gen/decode_ref.py --oracle ORACLE_LOCOST_DIR \
        --cases tests/data/locost/cases > tests/data/locost/decode_search.txt

Output lines:  CASE beams=K max=N min=N lp=X ngram=N rep=X early=E : ids...
(ids after the start token, eos included if produced; decoded from the
golden enc_out of CASE, so they do not depend on the encoder).
"""
import argparse
import math
import os
import sys

import numpy as np
import torch


def processors(ids, scores, o, eos):
    """ids: list (start token first); scores: 1-D float64 tensor, in place."""
    if o["rep"] != 1.0:
        idx = torch.tensor(sorted(set(ids)), dtype=torch.long)
        s = scores[idx]
        scores[idx] = torch.where(s < 0, s * o["rep"], s / o["rep"])
    n = o["ngram"]
    if n > 0 and len(ids) + 1 >= n:
        seen = {}
        for i in range(len(ids) - n + 1):
            seen.setdefault(tuple(ids[i:i + n - 1]), []).append(ids[i + n - 1])
        for t in seen.get(tuple(ids[len(ids) - n + 1:]), []):
            scores[t] = -math.inf
    if len(ids) - 1 < o["min"]:
        scores[eos] = -math.inf
    return scores


def greedy(m, enc, o):
    ids = [m.start_id]
    while len(ids) < o["max"] + 1:
        lg = m.decode_logits(enc, ids)[-1].clone()
        sc = processors(ids, lg, o, m.eos_id)
        nxt = int(torch.argmax(sc))
        ids.append(nxt)
        if nxt == m.eos_id:
            break
    return ids[1:]


class Hyps:
    def __init__(self, k, lp, early, max_len):
        self.k, self.lp, self.early, self.max_len = k, lp, early, max_len
        self.beams = []
        self.worst = 1e9

    def add(self, hyp, s, gen_len):
        score = s / (gen_len ** self.lp)
        if len(self.beams) < self.k or score > self.worst:
            self.beams.append((score, list(hyp)))
            if len(self.beams) > self.k:
                srt = sorted([(b[0], i) for i, b in enumerate(self.beams)])
                del self.beams[srt[0][1]]
                self.worst = srt[1][0]
            else:
                self.worst = min(score, self.worst)

    def done(self, best, cur_len):
        if len(self.beams) < self.k:
            return False
        if self.early == "true":
            return True
        if self.early == "never" and self.lp > 0:
            high = best / (self.max_len - 1) ** self.lp
        else:
            high = best / cur_len ** self.lp
        return self.worst >= high


def beam(m, enc, o):
    K, V = o["beams"], m.V
    max_len = o["max"] + 1
    seqs = [[m.start_id] for _ in range(K)]
    bscore = torch.tensor([0.0] + [-1e9] * (K - 1), dtype=torch.float64)
    H = Hyps(K, o["lp"], o["early"], max_len)
    done = False
    cur_len = 1
    while True:
        rows = []
        for r in range(K):
            lg = m.decode_logits(enc, seqs[r])[-1]
            ls = torch.log_softmax(lg, dim=-1).clone()
            rows.append(processors(seqs[r], ls, o, m.eos_id) + bscore[r])
        flat = torch.stack(rows).reshape(-1)
        top_s, top_i = torch.topk(flat, 2 * K, largest=True, sorted=True)
        nseq, nsc = [], []
        for rank in range(2 * K):
            tok, row, s = int(top_i[rank]) % V, int(top_i[rank]) // V, float(top_s[rank])
            if tok == m.eos_id:
                if rank >= K:
                    continue
                H.add(seqs[row], s, len(seqs[row]))
            else:
                nseq.append(seqs[row] + [tok])
                nsc.append(s)
            if len(nseq) == K:
                break
        done = done or H.done(float(top_s.max()), cur_len)
        seqs = nseq
        bscore = torch.tensor(nsc, dtype=torch.float64)
        cur_len += 1
        if done or cur_len >= max_len:
            break
    if not done:
        for r in range(K):
            H.add(seqs[r], float(bscore[r]), len(seqs[r]) - 1)
    best = sorted(H.beams, key=lambda x: x[0]).pop()
    out = best[1][1:]
    if len(best[1]) < min(len(best[1]) + 1, max_len):
        out = out + [m.eos_id]
    return out, best[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", required=True, help="dir with locost_ref.py and tiny/")
    ap.add_argument("--cases", required=True, help="golden cases dir (reads enc_out)")
    a = ap.parse_args()
    sys.path.insert(0, a.oracle)
    import locost_ref as R
    model = os.path.join(a.oracle, "tiny")
    m = R.LocostRef(R.load_config(model), R.load_state_dict(model), torch.float64)
    rows = R.read_manifest(a.cases)
    enc = {}
    for case, name, kind, shape, rel in rows:
        if name == "enc_out":
            enc[case] = torch.from_numpy(
                R.read_entry(a.cases, kind, shape, rel).astype(np.float64))
    base = dict(beams=1, max=32, min=0, lp=1.0, ngram=0, rep=1.0, early="false")
    runs = []
    for case in ("L0007", "L0064", "L1000"):
        runs += [dict(base),
                 dict(base, rep=1.3),
                 dict(base, ngram=2),
                 dict(base, ngram=3, rep=0.8),
                 dict(base, min=12, max=20),
                 dict(base, beams=2),
                 dict(base, beams=4),
                 dict(base, beams=4, lp=2.0),
                 dict(base, beams=3, lp=-1.0, ngram=2),
                 dict(base, beams=4, early="true", max=16),
                 dict(base, beams=4, early="never", max=16, lp=0.5),
                 dict(base, beams=4, min=8, rep=1.5)]
    runs += [dict(base, beams=4, max=24) | {"case": "L0300"},
             dict(base, beams=2, max=8) | {"case": "L0001"}]
    i = 0
    for case in ("L0007", "L0064", "L1000"):
        for _ in range(12):
            runs[i]["case"] = case
            i += 1
    for o in runs:
        e = enc[o["case"]]
        if o["beams"] == 1:
            ids, score = greedy(m, e, o), float("nan")
        else:
            ids, score = beam(m, e, o)
        print("%s beams=%d max=%d min=%d lp=%g ngram=%d rep=%g early=%s : %s"
              % (o["case"], o["beams"], o["max"], o["min"], o["lp"], o["ngram"], o["rep"],
                 o["early"], " ".join(map(str, ids))))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
