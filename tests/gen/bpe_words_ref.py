#!/usr/bin/python3
"""Goldens for the added tokens' split (lib/text/bpe.c: encode_parts) on
hostile added tokens: Hugging Face transformers 4.36.2's slow
BartTokenizer over a ten-token byte-level vocabulary whose config adds
<mask> (lstrip, single_word), <z> (rstrip, single_word), " <w>" (a space
in it; lstrip, rstrip, single_word), "ab " (rstrip) and "<z>a"
(single_word, a longer token over <z>): strips that empty a neighbour,
tokens joined to text in chains, a stripped token that is no longer one.

And tok2: the same vocabulary, <z> (rstrip) and " <w>" alone, no
single_word: after <z>, white space that holds the start of " <w>".

And random: 2,000 texts of 1 to 9 pieces drawn (seed 7) from letters,
white space, the tokens and parts of them, over tok.

usage: PYTHONPATH=<stubs>:<transformers 4.36.2 src> bpe_words_ref.py OUT
  OUT  tests/data/bart/tokenizer/words: writes tok/ and tok2/ (vocab.json,
       merges.txt, tokenizer_config.json), cases.nul, cases.ids,
       cases2.nul, cases2.ids, random.nul and random.ids
(the stubs as tests/gen/t5_extra_ref.py says.)"""
import json
import os
import random
import sys
import warnings

import oracle_compat  # noqa: F401 (patches transformers' AddedToken)
from transformers import BartTokenizer

warnings.simplefilter("ignore")
out = sys.argv[1]
tok = os.path.join(out, "tok")
VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "a": 4, "b": 5, "ab": 6, "\u0120": 7,
         "\u0120a": 8, "<mask>": 9}
ADDED = {"9": {"content": "<mask>", "lstrip": True, "single_word": True},
         "10": {"content": "<z>", "rstrip": True, "single_word": True},
         "11": {"content": " <w>", "lstrip": True, "rstrip": True, "single_word": True},
         "12": {"content": "ab ", "rstrip": True},
         "13": {"content": "<z>a", "single_word": True}}
CASES = ["x<mask>y <z>a  ab  <w>b <w> <z>\t<mask>", "<z><z><z>a", " <w> <w>  <w>x",
         "ab  ab ab<z> a", "a <mask> <mask>b<mask>", "<z>a<z> a <z>aa", "\t<w>\t", "ab <w>ab",
         "<mask>", "a\u2003<mask>\u2003b", "<z> ", "b<z>  <z>b"]
ADDED2 = {"10": {"content": "<z>", "rstrip": True}, "11": {"content": " <w>"}}
CASES2 = ["<z>  <w>", "<z> <w>", "a<z>\t\t <w>b", " <w><z>  <w> <w>"]


def golden(tok, added, cases, name):
    os.makedirs(tok, exist_ok=True)
    json.dump(VOCAB, open(os.path.join(tok, "vocab.json"), "w"))
    with open(os.path.join(tok, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\na b\n\u0120 a\n")
    json.dump({"tokenizer_class": "BartTokenizer", "added_tokens_decoder": added},
              open(os.path.join(tok, "tokenizer_config.json"), "w"), indent=1)
    t = BartTokenizer.from_pretrained(tok)
    with open(os.path.join(out, name + ".nul"), "w", encoding="utf-8", newline="") as f:
        f.write("\0".join(cases))
    with open(os.path.join(out, name + ".ids"), "w") as f:
        for c in cases:
            f.write(" ".join(map(str, t(c)["input_ids"])) + "\n")


ATOMS = ["a", "b", "ab", " ", "  ", "\t", "<z>", "<w>", " <w>", "ab ", "<mask>", "<z>a", "\u00e9",
         "\u2003", "<", "z>", "x", "<s>", "\n"]
rng = random.Random(7)
RANDOM = ["".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 9))) for _ in range(2000)]
golden(tok, ADDED, CASES, "cases")
golden(tok, ADDED, RANDOM, "random")
golden(os.path.join(out, "tok2"), ADDED2, CASES2, "cases2")
