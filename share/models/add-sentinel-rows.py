#!/usr/bin/python3
"""Gives a T5-layout model trained with vocab_size 32000 a row for each of
the 100 sentinel ids of share/spiece.model (<extra_id_99>..<extra_id_0> =
32000..32099), so that every id the bundled tokenizer can produce is one
the model has: shared.weight [32000, d] -> [32100, d], the new rows zero
(never trained: they score 0 in the tied output layer), and config.json's
vocab_size 32100. Everything else in the file is kept, byte for byte.

usage: add-sentinel-rows.py MODEL_DIR   (rewrites MODEL_DIR/model.safetensors
                                         and MODEL_DIR/config.json in place)"""
import json, os, struct, sys

d = sys.argv[1]
path = os.path.join(d, "model.safetensors")
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
data = raw[8 + n:]
e = hdr["shared.weight"]
rows, dim = e["shape"]
assert e["dtype"] == "F32" and rows == 32000, "already extended, or not a 32000-row model"
extra = 100 * dim * 4
a0, a1 = e["data_offsets"]
out = {}
for k, v in hdr.items():            # the header's order, offsets after the table shifted
    if k == "__metadata__":
        out[k] = v
        continue
    v = dict(v)
    a, b = v["data_offsets"]
    if k == "shared.weight":
        v["shape"] = [rows + 100, dim]
        v["data_offsets"] = [a, b + extra]
    elif a >= a1:
        v["data_offsets"] = [a + extra, b + extra]
    out[k] = v
h = json.dumps(out, separators=(",", ":")).encode()
h += b" " * ((8 - len(h) % 8) % 8)
body = data[:a1] + bytes(extra) + data[a1:]
tmp = path + ".tmp"
with open(tmp, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + body)
os.replace(tmp, path)
cpath = os.path.join(d, "config.json")
txt = open(cpath).read()
assert '"vocab_size": 32000,' in txt
open(cpath, "w").write(txt.replace('"vocab_size": 32000,', '"vocab_size": 32100,'))
