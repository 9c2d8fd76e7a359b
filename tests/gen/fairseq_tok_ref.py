#!/usr/bin/python3
"""Goldens for lc's fairseq tokenizer (GPT-2 BPE + fairseq's dict.txt).

Runs the authors' code, unchanged, taken with `git show` from
facebookresearch/bart_ls at commit 386262dd40d601d65d3156dd724ee78078b84d64
(the commit the shared BART-LS oracle used):

  fairseq-py/fairseq/data/encoders/gpt2_bpe_utils.py   get_encoder (imported as is)
  fairseq-py/fairseq/tokenizer.py                      tokenize_line (imported as is)
  fairseq-py/fairseq/data/dictionary.py                Dictionary (imported as is; its
      package imports are stubbed: fairseq.utils.item, data_utils.post_process
      (identity: lc never passes a bpe_symbol), file_io/file_chunker_utils (unused))
  fairseq-py/fairseq/data/encoders/gpt2_bpe.py         GPT2BPE.encode / .decode
  fairseq-py/fairseq/models/bart/hub_interface.py      BARTHubInterface.encode / .decode
      (the functions' source is taken from the files with `ast` and executed
      with `self` an object holding the bpe, the dictionary and
      max_positions = [10**9], so that nothing is truncated)

Inputs: the BART oracle's tokenizer lines (tests/data/bart/tokenizer/lines.txt,
split on "\\n" only) and GPT-2's vocab.json / merges.txt (the same files as
fairseq's encoder.json / vocab.bpe). The dictionaries are built here as
fairseq's are: GPT-2 ids by descending count (ties by id), "ID COUNT" per
line, then the three "madeupword000N 0" lines of the released bart dict.txt.

Writes OUT/dict.txt (every id of the lines), OUT/fairseq.ids.txt (hub
encode(): <s> ids </s>, one line per input line), OUT/fairseq.decoded.txt
(hub decode() of those ids); OUT/dict_partial.txt (the ids of the first
1000 lines), OUT/fairseq_partial.ids.txt (<s> + Dictionary.encode_line(
bpe.encode(line), add_if_not_exist=False), the binarizer's lookup: unknown
ids become <unk>, </s> appended) and OUT/fairseq_partial.decoded.txt (hub
decode(): <unk> stays as the text "<unk>").

Usage: fairseq_tok_ref.py BART_LS_GIT_DIR LINES VOCAB_JSON MERGES_TXT OUT
Needs Debian's python3-regex and python3-torch (Dictionary imports torch).
"""
import ast
import collections
import os
import subprocess
import sys
import tempfile
import types

COMMIT = "386262dd40d601d65d3156dd724ee78078b84d64"
git_dir, lines_path, vocab, merges, out = sys.argv[1:6]


def show(path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:fairseq-py/{path}"],
                          check=True, capture_output=True).stdout.decode()


def func_source(src, cls, name):
    tree = ast.parse(src)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == name:
                    f.decorator_list = []
                    f.returns = None
                    for a in f.args.args:
                        a.annotation = None
                    return ast.unparse(f)
    raise SystemExit(f"{cls}.{name} not found")


root = tempfile.mkdtemp()
pkg = os.path.join(root, "fairseq")
os.makedirs(os.path.join(pkg, "data", "encoders"))
open(os.path.join(pkg, "__init__.py"), "w").close()
open(os.path.join(pkg, "data", "encoders", "__init__.py"), "w").close()
with open(os.path.join(pkg, "data", "__init__.py"), "w") as f:
    f.write("from . import data_utils\n")
with open(os.path.join(pkg, "data", "data_utils.py"), "w") as f:
    f.write("def post_process(sentence, symbol):\n    assert symbol is None\n    return sentence\n")
with open(os.path.join(pkg, "utils.py"), "w") as f:
    f.write("def item(t):\n    return t.item() if hasattr(t, 'item') else t\n")
with open(os.path.join(pkg, "file_io.py"), "w") as f:
    f.write("class PathManager:\n    get_local_path = staticmethod(lambda p: p)\n")
with open(os.path.join(pkg, "file_chunker_utils.py"), "w") as f:
    f.write("Chunker = find_offsets = None\n")
for p in ["fairseq/tokenizer.py", "fairseq/data/dictionary.py",
          "fairseq/data/encoders/gpt2_bpe_utils.py"]:
    with open(os.path.join(root, p), "w") as f:
        f.write(show(p))
sys.path.insert(0, root)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from fairseq.data.dictionary import Dictionary  # noqa: E402
from fairseq.data.encoders.gpt2_bpe_utils import get_encoder  # noqa: E402

ns = {"np": np, "torch": torch}
gpt2_src = show("fairseq/data/encoders/gpt2_bpe.py")
hub_src = show("fairseq/models/bart/hub_interface.py")
for cls, name, src in [("GPT2BPE", "encode", gpt2_src), ("GPT2BPE", "decode", gpt2_src),
                       ("BARTHubInterface", "encode", hub_src),
                       ("BARTHubInterface", "decode", hub_src)]:
    exec(func_source(src, cls, name).replace(f"def {name}(", f"def {cls}_{name}("), ns)

bpe = types.SimpleNamespace(bpe=get_encoder(vocab, merges))
bpe.encode = lambda x: ns["GPT2BPE_encode"](bpe, x)
bpe.decode = lambda x: ns["GPT2BPE_decode"](bpe, x)

with open(lines_path, encoding="utf-8") as f:
    lines = f.read().split("\n")
if lines and lines[-1] == "":
    lines.pop()



def write_dict(path, lines):
    count = collections.Counter()
    for line in lines:
        count.update(int(t) for t in bpe.encode(line).split())
    with open(path, "w", encoding="utf-8") as f:
        for tok, c in sorted(count.items(), key=lambda x: (-x[1], x[0])):
            f.write(f"{tok} {c}\n")
        for i in range(3):
            f.write(f"madeupword{i:04d} 0\n")
    return Dictionary.load(path)


os.makedirs(out, exist_ok=True)
# 1. a dictionary of every id the lines have: the hub's encode()/decode() as they are
#    (its encode_line adds unknown symbols: the assert checks that none was added)
d = write_dict(os.path.join(out, "dict.txt"), lines)
n = len(d)
hub = types.SimpleNamespace(bpe=bpe, task=types.SimpleNamespace(source_dictionary=d),
                            max_positions=[10**9])
with open(os.path.join(out, "fairseq.ids.txt"), "w", encoding="utf-8") as fi, \
        open(os.path.join(out, "fairseq.decoded.txt"), "w", encoding="utf-8",
             newline="\n") as fd:
    for line in lines:
        ids = ns["BARTHubInterface_encode"](hub, line)
        fi.write(" ".join(str(int(i)) for i in ids) + "\n")
        text = ns["BARTHubInterface_decode"](hub, ids)
        assert isinstance(text, str)
        fd.write(text + "\n")
assert len(d) == n
# 2. a dictionary of the first 1000 lines' ids: the rest meet unknown ids, looked up
#    as fairseq-preprocess's binarizer does (encode_line(add_if_not_exist=False):
#    <unk>, then </s>), with the hub's <s> in front; decoded by the hub's decode()
dp = write_dict(os.path.join(out, "dict_partial.txt"), lines[:1000])
hub.task.source_dictionary = dp
with open(os.path.join(out, "fairseq_partial.ids.txt"), "w", encoding="utf-8") as fi, \
        open(os.path.join(out, "fairseq_partial.decoded.txt"), "w", encoding="utf-8",
             newline="\n") as fd:
    for line in lines:
        ids = torch.cat([torch.IntTensor([dp.bos()]),
                         dp.encode_line(bpe.encode(line), add_if_not_exist=False)]).long()
        fi.write(" ".join(str(int(i)) for i in ids) + "\n")
        fd.write(ns["BARTHubInterface_decode"](hub, ids) + "\n")
print(f"{len(lines)} lines, dictionaries of {len(d)} and {len(dp)} symbols", file=sys.stderr)
