#!/usr/bin/python3
"""Goldens for added tokens that are not special (transformers' "legacy added
tokens"): Hugging Face transformers 4.36.2's slow BartTokenizer on
tests/data/bart/tokenizer/bart_added (bart_small's vocabulary plus <new>,
[R] (rstrip) and <L> (lstrip), "special": false in tokenizer_config.json).
Its _decode makes each such token a text of its own and joins the texts
with spaces (spaces_between_special_tokens).

usage: PYTHONPATH=<the oracle's stubs>:<transformers 4.36.2 src> \\
           bpe_added_ref.py DIR CASES OUTPREFIX
CASES: texts separated by NUL bytes (tests/data/bart/tokenizer/added.nul,
made by cases() below). Writes OUTPREFIX.ids (with <s> and </s>),
OUTPREFIX.decoded (decode(ids, skip_special_tokens=True): the tokenizer's
clean-up on) and OUTPREFIX.decoded_keep (skip_special_tokens=False,
clean_up_tokenization_spaces=False), a line per text."""
import sys
import warnings

import oracle_compat  # noqa: F401 (patches transformers' AddedToken)
from transformers import BartTokenizer


def cases():
    return ["x<new>y", "a [R]  b", "c  <L>d", "x <new> y", "<new>", "<new><new>", "[R][R] z",
            "q <L><L> r", "<new> starts", "ends <new>", "\u00e9<new>\u00fc", "tab\t<L>\tz",
            "<s>inside</s> <new> <mask> it", "don't <new> stop . ok", "a<new>b[R]c<L>d",
            "  <new>  "]


warnings.simplefilter("ignore")
tok = BartTokenizer.from_pretrained(sys.argv[1])
texts = open(sys.argv[2], encoding="utf-8", newline="").read().split("\0")
assert texts == cases(), "the cases file is not this script's cases"
with open(sys.argv[3] + ".ids", "w") as fi, open(sys.argv[3] + ".decoded", "w") as fd, \
        open(sys.argv[3] + ".decoded_keep", "w") as fk:
    for t in texts:
        ids = tok(t)["input_ids"]
        fi.write(" ".join(map(str, ids)) + "\n")
        fd.write(tok.decode(ids, skip_special_tokens=True) + "\n")
        fk.write(tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
                 + "\n")
