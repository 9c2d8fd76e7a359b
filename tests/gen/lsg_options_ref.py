#!/usr/bin/python3
"""Goldens for the LSG options the oracle leaves at their defaults, made by
running the authors' modeling_lsg_bart.py (ccdv-ai/convert_checkpoint_to_lsg
c56734b) on transformers 4.36.2 with Debian's python3-torch:
mask_first_token, pass_global_tokens_to_decoder false with and without
pool_with_global, and 4 global tokens, on the oracle's converted tiny model
(sparsity_type norm) at L = 33 (dense) and 100 (sparse, padded to 128),
and block geometries other than the oracle's (block, sparse block and
sparsity factor 16/8/4, 64/32/8, 8/8/8, 32/64/2, with 1 to 3 global tokens)
at L = 100 and 1000.

usage: PYTHONPATH=<transformers 4.36.2 and stubs> lsg_options_ref.py MODELING_PY DATA_LSG OUT [VARIANT...]
  MODELING_PY  the authors' modeling_lsg_bart.py (not part of lc)
  DATA_LSG     tests/data/lsg (model.safetensors, norm/config.json, norm/len*/input_ids.i32)
  OUT          where <variant>/<len>/{enc_out.f32,logits.f32,greedy_ids.i32} go
Every call passes attention_mask, as generate() does; with mask_first_token
the authors' encoder zeroes its first entry in place, so the decoder's
cross-attention skips that row too."""
import importlib.util, json, os, shutil, sys, tempfile
import numpy as np
import torch

modeling, data, out = sys.argv[1:4]
try:
    import oracle_compat  # noqa: F401  (the oracle's shims for Debian's torch 1.13)
except ImportError:
    pass
spec = importlib.util.spec_from_file_location("modeling_lsg_bart", modeling)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
torch.set_grad_enabled(False)

ONE = ("len0001", "len0033")
SHORT = ("len0033", "len0100")
LONG = ("len0100", "len1000")
variants = {
    "mask_first": ({"mask_first_token": True}, SHORT),
    "noglobal_pool": ({"pass_global_tokens_to_decoder": False, "pool_with_global": True}, SHORT),
    "noglobal": ({"pass_global_tokens_to_decoder": False, "pool_with_global": False}, SHORT),
    "g4": ({"num_global_tokens": 4}, SHORT),
    "g4_mask_first": ({"num_global_tokens": 4, "mask_first_token": True}, SHORT),
    # block geometries other than the oracle's 32/32/2: a sparse block smaller
    # than the block, a larger factor, a block of one slot per block (odd
    # step 1), several global tokens
    "b16s8f4_norm": ({"block_size": 16, "sparse_block_size": 8, "sparsity_factor": 4,
                      "sparsity_type": "norm", "num_global_tokens": 3}, LONG),
    "b16s8f4_bos_pooling": ({"block_size": 16, "sparse_block_size": 8, "sparsity_factor": 4,
                             "sparsity_type": "bos_pooling"}, LONG),
    "b64s32f8_stride": ({"block_size": 64, "sparse_block_size": 32, "sparsity_factor": 8,
                         "sparsity_type": "stride"}, LONG),
    "b64s32f8_block_stride": ({"block_size": 64, "sparse_block_size": 32, "sparsity_factor": 8,
                               "sparsity_type": "block_stride", "num_global_tokens": 2}, LONG),
    "b8s8f8_pooling": ({"block_size": 8, "sparse_block_size": 8, "sparsity_factor": 8,
                        "sparsity_type": "pooling"}, LONG),
    "b32s64f2_pooling": ({"block_size": 32, "sparse_block_size": 64, "sparsity_factor": 2,
                          "sparsity_type": "pooling"}, LONG),
    # a one-token document whose only row mask_first_token masks, without
    # the global rows: the decoder still reads it (every key masked: a
    # uniform softmax); and lsh where it draws nothing (factor 1: the keys
    # as they are; factor = sparse block: bos_pooling)
    "mask_first_noglobal": ({"mask_first_token": True, "pass_global_tokens_to_decoder": False},
                            ONE),
    "b32s32f1_lsh": ({"sparsity_type": "lsh", "sparsity_factor": 1}, LONG),
    "b32s8f8_lsh": ({"sparsity_type": "lsh", "sparse_block_size": 8, "sparsity_factor": 8}, LONG),
}
base = json.load(open(os.path.join(data, "norm", "config.json")))
dec_in = torch.from_numpy(np.fromfile(os.path.join(data, "decoder_input_ids.i32"), "<i4").astype(np.int64))[None]
only = sys.argv[4:]          # variant names to (re)make; all by default
for name, (kw, lens) in variants.items():
    if only and name not in only:
        continue
    tmp = tempfile.mkdtemp()
    cfg = dict(base, **kw)
    json.dump(cfg, open(os.path.join(tmp, "config.json"), "w"))
    shutil.copy(os.path.join(data, "model.safetensors"), tmp)
    model = mod.LSGBartForConditionalGeneration.from_pretrained(tmp).eval()
    gc = model.generation_config
    gc.forced_bos_token_id = gc.forced_eos_token_id = None
    for L in lens:
        ids = torch.from_numpy(np.fromfile(os.path.join(data, "norm", L, "input_ids.i32"), "<i4").astype(np.int64))[None]
        d = os.path.join(out, name, L)
        os.makedirs(d, exist_ok=True)
        mask = torch.ones_like(ids)
        enc = model.model.encoder(input_ids=ids, attention_mask=mask, return_dict=True).last_hidden_state
        enc[0].numpy().astype("<f4").tofile(os.path.join(d, "enc_out.f32"))
        mask = torch.ones_like(ids)
        logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec_in).logits
        logits[0].numpy().astype("<f4").tofile(os.path.join(d, "logits.f32"))
        mask = torch.ones_like(ids)
        g = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=24, num_beams=1,
                           do_sample=False, generation_config=gc)
        g[0].numpy().astype("<i4").tofile(os.path.join(d, "greedy_ids.i32"))
        print(name, L, tuple(enc.shape), g[0].tolist()[:8])
    shutil.rmtree(tmp)
