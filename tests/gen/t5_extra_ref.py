#!/usr/bin/python3
"""Goldens for the whitespace around T5's <extra_id_N> markers: Hugging Face
transformers 4.36.2's slow T5Tokenizer (legacy=True, extra_ids=100), whose
markers are AddedTokens with lstrip and rstrip: the text on each side of a
marker loses its str.isspace() characters before sp_model.encode() reads it.

usage: PYTHONPATH=<stubs>:<transformers 4.36.2 src> t5_extra_ref.py MODEL CASES
  MODEL  a sentencepiece model (tests/data/spm/t5like.model, variants/...)
  CASES  texts separated by NUL bytes (tests/data/spm/extra_ws/cases.nul)
prints one line of ids per text (no </s>), as lc-tokenize -d nul -f ids
--no-eos does. The stubs: the oracle's (tests/data/bart's README names
them: huggingface_hub, safetensors, oracle_compat) and an import-only
`tokenizers` package (convert_slow_tokenizer imports its names at module
level; the slow legacy T5Tokenizer never calls them); sentencepiece is
Debian's python3-sentencepiece 0.1.97.

The cases (made by the loop below, kept in cases.nul): each of 21
whitespace strings (none, spaces, TAB, LF, CR LF, VT, FF, U+001C, U+001F,
U+0085, NBSP, U+1680, U+2002, U+2028, U+2029, U+202F, U+3000, and U+200B
and U+180E, which are not str.isspace) on both sides of one marker and of
two; a marker first and last; markers between spaces and U+0085; and
<extra_id_100> and <extra_id_7x>, which are not markers."""
import sys
import warnings

import oracle_compat  # noqa: F401 (patches transformers' AddedToken)
from transformers import T5Tokenizer


def cases():
    ws = ["", " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0",
          "\u1680", "\u2002", "\u2028", "\u2029", "\u202f", "\u3000", "\u200b", "\u180e",
          " \x85 "]
    out = []
    for i, w in enumerate(ws):
        out.append(f"a{w}<extra_id_0>{w}b")
        out.append(f"The{w}<extra_id_{i}>{w}<extra_id_{i+1}>{w}cat sat.")
    out += ["<extra_id_5> lead", "trail <extra_id_99>", " \x85<extra_id_3>\x85 ",
            "x<extra_id_100>y <extra_id_7x> z"]
    return out


warnings.simplefilter("ignore")
tok = T5Tokenizer(vocab_file=sys.argv[1], extra_ids=100, legacy=True)
texts = open(sys.argv[2], encoding="utf-8", newline="").read().split("\0")
assert texts == cases(), "cases.nul is not the cases of this script"
for t in texts:
    print(" ".join(map(str, tok(t, add_special_tokens=False)["input_ids"])))
