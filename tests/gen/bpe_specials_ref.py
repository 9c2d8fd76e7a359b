#!/usr/bin/python3
"""Goldens for which tokens decoding leaves out and which it decodes apart:
Hugging Face transformers 4.36.2's slow BartTokenizer. Its _decode skips
all_special_ids (the named roles and additional_special_tokens, whatever an
added token's "special" flag says) and decodes the other added tokens, and
the additional special ones after the vocabulary, as texts of their own.

usage: PYTHONPATH=<stubs>:<transformers 4.36.2 src> bpe_specials_ref.py TOKDIR OUT
  TOKDIR  tests/data/bart/tokenizer (bart_small/, bart_added/ are read)
  OUT     tests/data/bart/tokenizer/specials: writes NAME/ (the tokenizer
          files that differ from bart_added's or, for "beyond", bart_small's
          vocabulary) and NAME.decoded, NAME.decoded_keep, the decodes of
          OUT/ids.txt with skip_special_tokens=True (clean-up on) and with
          skip_special_tokens=False and no clean-up.
(the stubs as tests/gen/t5_extra_ref.py says.)

Variants, from bart_added (bart_small plus <new> 1000, [R] 1001, <L> 1002):
  special_unnamed  <new> "special": true, named by no role
  pad_notspecial   <pad> (pad_token) "special": false
  additional       <new> "special": false, in additional_special_tokens
  beyond           the same on bart_small's vocabulary: the added tokens'
                   ids after it (additional special past vocab_size)
  saved            made by transformers: bart_small, add_tokens(["<z>"],
                   special_tokens=True), add_special_tokens(
                   {"additional_special_tokens": ["<q>"]}), add_tokens(
                   ["<w>"]), save_pretrained() (ids 1000, 1001, 1002; its
                   model_max_length int(1e30) as transformers writes it)"""
import json
import os
import shutil
import sys
import warnings

import oracle_compat  # noqa: F401 (patches transformers' AddedToken)
from transformers import BartTokenizer

from decodes import write_decodes

warnings.simplefilter("ignore")
tokdir, out = sys.argv[1], sys.argv[2]
small, added = os.path.join(tokdir, "bart_small"), os.path.join(tokdir, "bart_added")
base = json.load(open(os.path.join(added, "tokenizer_config.json")))


def variant(name, edit, vocab_from):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    c = json.loads(json.dumps(base))
    edit(c)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(c, f, indent=1)
    work = os.path.join(out, "..", "_work_" + name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for fn in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(vocab_from, fn), work)
    shutil.copy(os.path.join(d, "tokenizer_config.json"), work)
    return work


def special(c, tid, flag):
    c["added_tokens_decoder"][tid]["special"] = flag


dirs = {
    "special_unnamed": variant("special_unnamed", lambda c: special(c, "1000", True), added),
    "pad_notspecial": variant("pad_notspecial", lambda c: special(c, "1", False), added),
    "additional": variant("additional",
                          lambda c: c.update(additional_special_tokens=["<new>"]), added),
    "beyond": variant("beyond", lambda c: c.update(additional_special_tokens=["<new>"]), small),
}
tok = BartTokenizer.from_pretrained(small)
tok.add_tokens(["<z>"], special_tokens=True)
tok.add_special_tokens({"additional_special_tokens": ["<q>"]})
tok.add_tokens(["<w>"])
saved = os.path.join(out, "saved")
shutil.rmtree(saved, ignore_errors=True)
tok.save_pretrained(saved)
dirs["saved"] = saved
ids = [list(map(int, line.split())) for line in open(os.path.join(out, "ids.txt"))]
for name, d in dirs.items():
    t = BartTokenizer.from_pretrained(d)
    write_decodes(t, ids, os.path.join(out, name))
    if d != saved:
        shutil.rmtree(d)
