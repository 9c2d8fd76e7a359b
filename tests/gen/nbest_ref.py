#!/usr/bin/python3
"""Goldens for num_return_sequences with beam search: Hugging Face
transformers 4.36.2's model.generate() (beam_search + BeamSearchScorer,
num_beam_hyps_to_keep) on the oracle's tiny BART (tests/data/bart/tiny_bart,
float32, CPU, one thread), for the inputs of tests/data/bart/goldens.

usage: PYTHONPATH=<transformers 4.36.2 and torch> nbest_ref.py tests/data/bart \
           > tests/data/sampling/bart_nbest.txt

Output lines:
  LEN beams=K nret=N max=M lp=X ngram=G early=E forced=F : IDS | IDS ... : SCORE ...
one per (input, setting): the N sequences in the order generate() returns
them, each the ids after the decoder start token up to and with the first
eos (padding removed), and sequences_scores. forced=1 keeps the model's
forced_bos/eos_token_id (0 and 2), forced=0 sets them to None."""
import os
import sys

import numpy as np
import torch
from transformers import BartForConditionalGeneration

torch.set_grad_enabled(False)
torch.set_num_threads(1)
data = sys.argv[1]
model = BartForConditionalGeneration.from_pretrained(os.path.join(data, "tiny_bart")).eval()
eos = model.config.eos_token_id

settings = [
    # K, N, max_new, length_penalty, no_repeat_ngram, early_stopping, forced
    (4, 2, 24, 2.0, 3, True, 0),
    (4, 4, 24, 2.0, 3, True, 0),
    (4, 3, 16, 1.0, 0, False, 0),
    (3, 3, 12, 0.5, 2, "never", 0),
    (5, 5, 10, 1.0, 0, False, 1),
]
for L in ("len0001", "len0007", "len0100", "len1000"):
    ids = np.fromfile(os.path.join(data, "goldens", L, "input_ids.i32"), dtype="<i4")
    x = torch.tensor(ids, dtype=torch.long)[None, :]
    for K, N, M, lp, ng, early, forced in settings:
        kw = {} if forced else {"forced_bos_token_id": None, "forced_eos_token_id": None}
        out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), num_beams=K,
                             num_return_sequences=N, max_new_tokens=M, length_penalty=lp,
                             no_repeat_ngram_size=ng, early_stopping=early, do_sample=False,
                             output_scores=True, return_dict_in_generate=True, **kw)
        seqs = []
        for row in out.sequences.tolist():
            row = row[1:]
            if eos in row:
                row = row[:row.index(eos) + 1]
            seqs.append(" ".join(map(str, row)))
        scores = " ".join(format(float(s), ".9g") for s in out.sequences_scores.tolist())
        e = early if isinstance(early, str) else str(early).lower()
        print("%s beams=%d nret=%d max=%d lp=%g ngram=%d early=%s forced=%d : %s : %s"
              % (L, K, N, M, lp, ng, e, forced, " | ".join(seqs), scores))
