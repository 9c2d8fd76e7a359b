#!/usr/bin/python3
"""Goldens for lc's sampling warpers (lib/gen/search.c): Hugging Face
transformers 4.36.2's own logits warpers, as generate() builds them
(GenerationMixin._get_logits_warper: TemperatureLogitsWarper, then
TopKLogitsWarper, then TopPLogitsWarper, with min_tokens_to_keep 1, or 2
with num_beams > 1), applied to fixed float32 scores, and the softmax that
sample() draws from.

usage: PYTHONPATH=<transformers 4.36.2 and torch> sampling_ref.py > tests/data/sampling/warpers.txt

Output, three lines a case after a "case" header:
  case NAME V TEMPERATURE TOP_K TOP_P NUM_BEAMS
  in   V scores (float32, %.9g; -inf for removed ones)
  out  V warped scores (float32)
  prob V probabilities (torch.softmax in float32)
The scores: seeded normal draws times a scale, with ties and -inf placed
on purpose (ties at the top-k and top-p boundaries, scores a processor
has already removed)."""
import numpy as np
import torch
from transformers import GenerationConfig
from transformers.generation.utils import GenerationMixin


def fmt(a):
    return " ".join(format(float(x), ".9g") for x in np.asarray(a, dtype=np.float32))


def scores(seed, V, scale=2.0, ties=(), ninf=()):
    rs = np.random.RandomState(seed)
    x = (rs.standard_normal(V) * scale).astype(np.float32)
    for group in ties:                      # equal scores
        x[list(group)] = x[group[0]]
    for i in ninf:
        x[i] = -np.inf
    return x


def top_ties(x, k, n):
    """x with its k-th highest score repeated n more times below it."""
    order = np.argsort(-x, kind="stable")
    y = x.copy()
    y[order[k:k + n]] = x[order[k - 1]]
    return y


cases = []
x64 = scores(1, 64)
cases += [
    ("temp0.5", x64, 0.5, 0, 1.0, 1),
    ("temp1.7", x64, 1.7, 0, 1.0, 1),
    ("topk1", x64, 1.0, 1, 1.0, 1),
    ("topk5", x64, 1.0, 5, 1.0, 1),
    ("topk50_v64", x64, 1.0, 50, 1.0, 1),
    ("topk100_over_vocab", x64, 1.0, 100, 1.0, 1),
    ("topk5_ties", top_ties(x64, 5, 3), 1.0, 5, 1.0, 1),
    ("topp0", x64, 1.0, 0, 0.0, 1),
    ("topp0.3", x64, 1.0, 0, 0.3, 1),
    ("topp0.9", x64, 1.0, 0, 0.9, 1),
    ("topp0.99", x64, 1.0, 0, 0.99, 1),
    ("t0.7_k20_p0.9", x64, 0.7, 20, 0.9, 1),
    ("t1.3_k50_p0.5", x64, 1.3, 50, 0.5, 1),
    ("t2_k10_p0.95", x64, 2.0, 10, 0.95, 1),
    # num_beams > 1: min_tokens_to_keep 2
    ("beams_topk1_keep2", x64, 1.0, 1, 1.0, 4),
    ("beams_topp0_keep2", x64, 1.0, 0, 0.0, 4),
    ("beams_t0.5_k3_p0.2", x64, 0.5, 3, 0.2, 4),
]
# equal scores: top-p removes the lower token ids first (stable ascending sort)
flat = np.zeros(8, dtype=np.float32)
cases += [
    ("flat_topp0.5", flat, 1.0, 0, 0.5, 1),
    ("flat_topp0.3", flat, 1.0, 0, 0.3, 1),
    ("flat_topk3", flat, 1.0, 3, 1.0, 1),
]
tied = scores(2, 32, ties=[(3, 9, 17, 30), (5, 6)])
cases += [
    ("tied_topp0.6", tied, 1.0, 0, 0.6, 1),
    ("tied_t0.8_k4_p0.8", tied, 0.8, 4, 0.8, 1),
]
# a processor already removed some tokens (no-repeat n-gram, min length)
holes = scores(3, 48, ninf=[0, 7, 8, 20, 47])
cases += [
    ("holes_k10", holes, 1.0, 10, 1.0, 1),
    ("holes_t0.6_p0.7", holes, 0.6, 0, 0.7, 1),
    ("few_finite_k50", scores(4, 16, ninf=range(3, 16)), 1.0, 50, 0.9, 1),
]
# a vocabulary of a real size, peaked like a trained model's
big = scores(5, 1000, scale=4.0)
cases += [
    ("v1000_k50", big, 1.0, 50, 1.0, 1),
    ("v1000_p0.92", big, 1.0, 0, 0.92, 1),
    ("v1000_t0.9_k40_p0.8", big, 0.9, 40, 0.8, 1),
    ("v1000_beams_t1.2_k50_p0.6", big, 1.2, 50, 0.6, 3),
]

dummy = torch.zeros((1, 1), dtype=torch.long)
for name, x, t, k, p, nb in cases:
    cfg = GenerationConfig(do_sample=True, temperature=t, top_k=k, top_p=p, num_beams=nb)
    warpers = GenerationMixin._get_logits_warper(None, cfg)
    s = torch.tensor(np.asarray(x, dtype=np.float32))[None, :]
    out = warpers(dummy, s.clone())
    prob = torch.softmax(out, dim=-1)
    print("case %s %d %r %d %r %d" % (name, len(x), t, k, p, nb))
    print("in", fmt(x))
    print("out", fmt(out[0].numpy()))
    print("prob", fmt(prob[0].numpy()))
