#!/usr/bin/python3
"""Goldens for where generate() takes its settings from a model directory:
Hugging Face transformers 4.36.2's model.generate() with no generation
argument (or one, as lc-decode's command line gives it) on copies of the
oracle's tiny BART (tests/data/bart/tiny_bart, float32, CPU, one thread)
whose generation_config.json and config.json are edited as each case says.

Cases (generation_config.json written whole, config.json edited):
  minboth    min_length 8 and min_new_tokens 2 (eos 744, a token the model
             likes, so that the minimums matter): both processors apply
  minlen_cli min_length 8 in the file, generate(min_new_tokens=2): the file's
             min_length still applies (lc-decode --min-new 2)
  minnew_big min_length 3 and min_new_tokens 6 in the file
  mincli_big min_length 8 in the file, generate(min_new_tokens=12)
  frommodel  the file says "_from_model_config": true (tiny BART's own) and
             config.json has no_repeat_ngram_size 2 and max_length 17:
             generate() rebuilds its settings from config.json
  frommodel_beams  "_from_model_config": true with num_beams 4 in the file
             only: config.json's (none: 1 beam) wins
  noeos      no eos_token_id in the file: generate() takes none (not
             config.json's) and runs to max_new_tokens 45, past the 2s
  noeos_beams  the same with 3 beams
  bosstart   no decoder_start_token_id: generate() starts with bos_token_id 0
  minmax_cli generate(max_new_tokens=5, min_new_tokens=10): it warns and
             stops at 5 (lc-decode --max-new 5 --min-new 10)
  eoslist    eos_token_id [2, 846]: generate() stops at either
  eoslist_min  eos_token_id [744, 846] and min_new_tokens 6: both are
             forbidden before the 6th token
  eoslist_beams  eos_token_id [2, 846], 3 beams: either closes a
             hypothesis, which ends with the first, 2

BartConfig's own (no generation_config.json: the settings are made from
config.json, as from one that says "_from_model_config"; max_length 12):
  cfg_noforcedeos     config.json without forced_eos_token_id: BartConfig
                      fills in 2, the last token is forced
  cfg_noforcedeos_fm  the same with the tiny BART's generation_config.json
                      ("_from_model_config": true) left in place
  cfg_forcedeos_null  forced_eos_token_id null: none
  cfg_nobos           config.json without forced_bos_token_id: none
  cfg_forcebos        the same with the old CNN checkpoints'
                      "force_bos_token_to_be_generated": true: bos_token_id
  cfg_nulleos         eos_token_id null (max_length 60): no stop at the 2s
  cfg_nullstart       decoder_start_token_id null: starts with bos_token_id

usage: PYTHONPATH=<transformers 4.36.2 and torch> genfiles_ref.py \
           tests/data/bart/tiny_bart DIR > tests/data/sampling/genfiles.txt
DIR: a scratch directory for the edited copies (the test makes the same).

Output lines: CASE INPUT : IDS (after the decoder start token, to and with
the first eos), for INPUT = len0007 and len0100 of tests/data/bart/goldens."""
import json
import os
import shutil
import sys
import warnings

import numpy as np
import torch
from transformers import BartForConditionalGeneration

torch.set_grad_enabled(False)
torch.set_num_threads(1)
warnings.simplefilter("ignore")
src, scratch = sys.argv[1], sys.argv[2]
goldens = os.path.join(os.path.dirname(src.rstrip("/")), "goldens")

DELETE = object()  # a config.json edit that removes the key
base_gen = {"bos_token_id": 0, "decoder_start_token_id": 2, "forced_bos_token_id": 0,
            "pad_token_id": 1, "max_new_tokens": 24, "transformers_version": "4.36.2"}
cases = [
    ("minboth", dict(base_gen, eos_token_id=744, min_length=8, min_new_tokens=2), {}, {}),
    ("minlen_cli", dict(base_gen, eos_token_id=744, min_length=8), {}, {"min_new_tokens": 2}),
    ("minnew_big", dict(base_gen, eos_token_id=744, min_length=3, min_new_tokens=6), {}, {}),
    ("mincli_big", dict(base_gen, eos_token_id=744, min_length=8), {}, {"min_new_tokens": 12}),
    ("frommodel", None, {"no_repeat_ngram_size": 2, "max_length": 17}, {}),
    ("frommodel_beams", "beams4", {"max_length": 17}, {}),
    ("noeos", {"decoder_start_token_id": 2, "max_new_tokens": 45}, {}, {}),
    ("noeos_beams", {"decoder_start_token_id": 2, "max_new_tokens": 45, "num_beams": 3}, {}, {}),
    ("bosstart", {"bos_token_id": 0, "eos_token_id": 2, "max_new_tokens": 12}, {}, {}),
    ("minmax_cli", dict(base_gen, eos_token_id=2), {},
     {"max_new_tokens": 5, "min_new_tokens": 10}),
    ("eoslist", dict(base_gen, eos_token_id=[2, 846]), {}, {}),
    ("eoslist_min", dict(base_gen, eos_token_id=[744, 846], min_new_tokens=6), {}, {}),
    ("eoslist_beams", dict(base_gen, eos_token_id=[2, 846], num_beams=3), {}, {}),
    ("cfg_noforcedeos", "delete", {"forced_eos_token_id": DELETE, "max_length": 12}, {}),
    ("cfg_noforcedeos_fm", None, {"forced_eos_token_id": DELETE, "max_length": 12}, {}),
    ("cfg_forcedeos_null", "delete", {"forced_eos_token_id": None, "max_length": 12}, {}),
    ("cfg_nobos", "delete", {"forced_bos_token_id": DELETE, "max_length": 12}, {}),
    ("cfg_forcebos", "delete", {"forced_bos_token_id": DELETE, "max_length": 12,
                                "force_bos_token_to_be_generated": True}, {}),
    ("cfg_nulleos", "delete", {"eos_token_id": None, "max_length": 60}, {}),
    ("cfg_nullstart", "delete", {"decoder_start_token_id": None, "max_length": 12}, {}),
]

for name, gen, cfg_edit, kwargs in cases:
    d = os.path.join(scratch, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    if os.path.exists(os.path.join(d, "pytorch_model.bin")):
        os.remove(os.path.join(d, "pytorch_model.bin"))
    gpath = os.path.join(d, "generation_config.json")
    if gen == "delete":
        os.remove(gpath)
    elif gen == "beams4":
        g = json.load(open(gpath))
        g["num_beams"] = 4
        json.dump(g, open(gpath, "w"), indent=2)
    elif gen is not None:
        json.dump(gen, open(gpath, "w"), indent=2)
    if cfg_edit:
        cpath = os.path.join(d, "config.json")
        c = json.load(open(cpath))
        for k, v in cfg_edit.items():
            if v is DELETE:
                c.pop(k, None)
            else:
                c[k] = v
        json.dump(c, open(cpath, "w"), indent=2)
    model = BartForConditionalGeneration.from_pretrained(d).eval()
    eos = model.generation_config.eos_token_id
    for inp in ("len0007", "len0100"):
        ids = np.fromfile(os.path.join(goldens, inp, "input_ids.i32"), dtype="<i4")
        x = torch.tensor(ids[None, :].astype(np.int64))
        out = model.generate(x, attention_mask=torch.ones_like(x), **kwargs)[0].tolist()[1:]
        ends = [i for i, t in enumerate(out) if t in (eos if isinstance(eos, list) else [eos])]
        if ends:
            out = out[:ends[0] + 1]
        print(name, inp, ":", " ".join(map(str, out)))
