#!/usr/bin/python3
"""Writes tests/data/lsg/pytorch_model.bin from tests/data/lsg/model.safetensors
(the oracle's converted LSG-BART), as transformers' save_pretrained with
safe_serialization=False writes it: torch.save of the state dict, the tied
embeddings (model.shared, encoder/decoder embed_tokens, lm_head) as one
storage under all four names. Run once with Debian's python3-torch; the
test reads both files and must get the same numbers from each."""
import json, struct, sys
import numpy as np
import torch

d = sys.argv[1] if len(sys.argv) > 1 else "tests/data/lsg"
raw = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
sd = {}
for k, v in hdr.items():
    if k == "__metadata__":
        continue
    assert v["dtype"] == "F32"
    a, b = v["data_offsets"]
    sd[k] = torch.from_numpy(np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").copy()).reshape(v["shape"])
shared = sd["model.shared.weight"]
for alias in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"):
    sd[alias] = shared
torch.save(sd, d + "/pytorch_model.bin")
