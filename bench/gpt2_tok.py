"""bench/gpt2_tok.py VOCAB MERGES TEXT line|doc: seconds for transformers'
GPT2Tokenizer (the reference lc-tokenize's BPE matches) to encode TEXT, one
encode() per line or one for the whole text. The text is read as Python
reads invalid UTF-8 with errors="replace", which is what lc-tokenize does.
Used by bench/tokenize.sh when transformers can be imported."""
import sys
import time

from transformers import GPT2Tokenizer
from transformers.utils import logging

logging.set_verbosity_error()   # the whole text is longer than GPT-2's 1024 positions
vocab, merges, path, mode = sys.argv[1:5]
with open(path, "rb") as f:
    text = f.read().decode("utf-8", errors="replace")
tok = GPT2Tokenizer(vocab, merges)
t0 = time.perf_counter()
if mode == "line":
    n = sum(len(tok.encode(line)) for line in text.split("\n"))
else:
    n = len(tok.encode(text))
print("%.3f %d" % (time.perf_counter() - t0, n))
