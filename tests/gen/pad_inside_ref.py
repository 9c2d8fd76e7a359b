#!/usr/bin/python3
"""Goldens for decoding documents with pad ids inside, BART-LS
(tests/data/bartls/pad) and top-down (tests/data/topdown/pad): random
small models built from the authors' modules in facebookresearch/bart_ls
(commit 386262dd: the BART-LS encoder, and the unofficial top-down one in
fairseq-py/fairseq/models/long_transformers/top_down.py) and fairseq's
decoder layer; greedy ids with fairseq's encoder padding mask (tokens ==
pad) on the cross-attention, as TransformerDecoder applies it.

usage: PYTHONPATH=<bart_ls 386262dd's fairseq-py as an import tree, its
       package __init__ files stubbed to import nothing else> \
       PADIN=1 DECMASK=1 OVERRIDE=JSON /usr/bin/python3 pad_inside_ref.py KIND SEED OUTDIR
KIND: bartls | topdown. OVERRIDE fixes some of the random choices; PADIN
puts pad ids inside the documents; DECMASK decodes with the mask.
Writes OUTDIR/model/{config.json,model.safetensors} (fairseq names),
OUTDIR/in.txt (one document of ids a line), OUTDIR/ref_<i>.f32 (the
reference encoder's rows of document i) or ref_<i>.err, OUTDIR/greedy.txt,
greedy_mask.txt and greedy_nomask.txt (reference greedy ids a document),
OUTDIR/case.json.

The goldens:
  bartls 410, OVERRIDE='{"dec_layers":1}'              -> tests/data/bartls/pad
  topdown 306, OVERRIDE='{"lengths":[40],"dec_layers":1}' -> tests/data/topdown/pad
each OUTDIR/model/*, in.txt and greedy_mask.txt (as greedy.txt).
"""
import argparse
import json
import math
import os
import random
import sys

import torch

import struct

import numpy as np

import fairseq.modules  # noqa: F401
from fairseq.data import Dictionary, data_utils
from fairseq.models.transformer import TransformerConfig, TransformerEncoderBase
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from fairseq.modules import LayerNorm
from fairseq.models.long_transformers.top_down import TopDownTransformerEncoder

def write_safetensors(path, tensors, metadata=None):
    """F32 tensors in sorted-name order after a JSON header (sorted keys,
    "__metadata__" first, compact, padded with spaces to 8 bytes)."""
    names = sorted(tensors)
    header = {"__metadata__": {k: str(v) for k, v in (metadata or {}).items()}}
    blobs, off = [], 0
    for n in names:
        a = np.ascontiguousarray(tensors[n].detach().cpu().numpy(), dtype="<f4")
        b = a.tobytes(order="C")
        header[n] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def fill_params(module, seed, special=None):
    """Weights from one generator seeded `seed`, parameters in sorted name
    order, each one randn draw: Linear weight * fan_in^-0.5 (* special[name]),
    biases * 0.1, LayerNorm weight 1 + 0.1 randn, Embedding randn with the
    padding row 0. Buffers stay as constructed."""
    special = special or {}
    kinds = {}
    for mname, m in module.named_modules():
        pre = (mname + ".") if mname else ""
        if isinstance(m, torch.nn.Linear):
            kinds[pre + "weight"] = ("linear_w", m)
            if m.bias is not None:
                kinds[pre + "bias"] = ("bias", m)
        elif isinstance(m, torch.nn.LayerNorm):
            kinds[pre + "weight"] = ("ln_w", m)
            kinds[pre + "bias"] = ("bias", m)
        elif isinstance(m, torch.nn.Embedding):
            kinds[pre + "weight"] = ("emb", m)
    g = torch.Generator().manual_seed(seed)
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name in sorted(params):
            p = params[name]
            kind, m = kinds[name]
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if kind == "linear_w":
                v = r * (p.shape[1] ** -0.5) * special.get(name, 1.0)
            elif kind == "bias":
                v = r * 0.1
            elif kind == "ln_w":
                v = 1.0 + r * 0.1
            else:
                v = r.clone()
                if m.padding_idx is not None:
                    v[m.padding_idx] = 0.0
            p.copy_(v)


torch.set_num_threads(1)

kind, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(out + "/model", exist_ok=True)
R = random.Random(seed * 7919 + (1 if kind == "topdown" else 0))
over = json.loads(os.environ.get("OVERRIDE", "{}"))


def pick(name, choices):
    return over.get(name, R.choice(choices))


heads = pick("heads", [1, 2, 4])
hd = pick("head_dim", [4, 8, 12, 16])
C = heads * hd
ffn = pick("ffn", [16, 48, 96])
vocab_words = pick("vocab_words", [60, 150])
dec_layers = pick("dec_layers", [0, 1, 2])
maxpos = pick("maxpos", [4096, 3000, 2500])

d = Dictionary()
for i in range(vocab_words):
    d.add_symbol("w%d" % len(d))
V = len(d)


def base_args():
    return dict(
        encoder_embed_dim=C, encoder_ffn_embed_dim=ffn, encoder_attention_heads=heads,
        encoder_normalize_before=False, encoder_learned_pos=True, encoder_layerdrop=0.0,
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.0, relu_dropout=0.0,
        activation_fn="gelu", max_source_positions=maxpos, no_scale_embedding=True,
        layernorm_embedding=True, adaptive_input=False, no_token_positional_embeddings=False,
        quant_noise_pq=0.0, quant_noise_pq_block_size=8, checkpoint_activations=False,
        offload_activations=False, export=False, alibi=False, min_params_to_wrap=100000000,
        decoder_embed_dim=C, decoder_ffn_embed_dim=ffn, decoder_attention_heads=heads,
        decoder_normalize_before=False, decoder_learned_pos=True, decoder_layers=max(dec_layers, 1),
        cross_self_attention=False, max_target_positions=1024,
    )


cfg = {"heads": heads, "head_dim": hd, "d_model": C, "ffn": ffn, "vocab": V, "dec_layers": dec_layers,
       "maxpos": maxpos, "kind": kind, "seed": seed}
hf = {
    "activation_function": "gelu", "bos_token_id": 0, "d_model": C,
    "decoder_attention_heads": heads, "decoder_ffn_dim": ffn, "decoder_layers": dec_layers,
    "decoder_start_token_id": 2, "encoder_attention_heads": heads, "encoder_ffn_dim": ffn,
    "eos_token_id": 2, "is_encoder_decoder": True, "max_decoder_position_embeddings": 1024,
    "max_position_embeddings": maxpos, "pad_token_id": 1, "scale_embedding": False, "vocab_size": V,
}
emb = torch.nn.Embedding(V, C, padding_idx=1)
if kind == "bartls":
    layers = pick("layers", [1, 2, 3, 4])
    pl = pick("pooling_layers", list(range(0, layers + 1)))
    bs = pick("block_size", [1, 2, 3, 4, 7, 8, 16, 24, 32, 64, 100])
    k = pick("pool_kernel", [1, 2, 3, 5, 8, 12, 18, 18, 18, 25])
    s = pick("pool_stride", [1, 2, 5, 7, 12, 12, 20])
    p = pick("pool_padding", list(range(0, k // 2 + 1)))
    a = base_args()
    a.update(encoder_layers=layers, use_xformers=os.environ.get("USEXF", "1") == "1", attention_name="block_noglobal",
             xformer_config=json.dumps({"block_size": bs}), pooling_layers=pl)
    tc = TransformerConfig.from_namespace(argparse.Namespace(**a))
    enc = TransformerEncoderBase(tc, d, emb)
    for l in enc.layers:
        if hasattr(l, "top_pool"):
            l.top_pool = torch.nn.AvgPool1d(k, stride=s, padding=p)
            l.top_pool_mask = torch.nn.AvgPool1d(k, stride=s, padding=p, count_include_pad=False)
    cfg.update(layers=layers, pooling_layers=pl, block_size=bs, pool_kernel=k, pool_stride=s, pool_padding=p)
    hf.update(architectures=["BartLSForConditionalGeneration"], model_type="bart_ls", encoder_layers=layers,
              block_size=bs, pooling_layers=pl, pool_kernel=k, pool_stride=s, pool_padding=p)
    special = {"layers.%d.pool_attn.%s.weight" % (i, w): 3.0 for i in range(layers) for w in ("k_proj", "v_proj")}
    pad_mult = bs
else:
    n1 = pick("n1", [0, 1, 2, 3])
    n2 = pick("n2", [0, 1, 2])
    n3 = pick("n3", [0, 1, 2] if n1 else [1, 2])
    w = pick("window", [1, 2, 5, 8, 16, 31, 32, 33, 64])
    k = pick("pool_kernel", [32, 32, 1, 4, 10, 17, 40])
    s = pick("pool_stride", [24, 24, 1, 3, 8, 16, 50])
    ada = pick("adapool", [0, 0, 1])
    a = base_args()
    a.update(encoder_layers=n1 + n3, use_xformers=False, attention_name="block_noglobal",
             xformer_config="{}", pooling_layers=0, window_size=w, encoder_n1=n1, encoder_n2=n2,
             encoder_n3=n3)
    ns = argparse.Namespace(**a)
    enc = TopDownTransformerEncoder(ns, d, emb)
    if ada:
        enc.pool_tagger = torch.nn.Linear(C, 1)

        class AdaPool(torch.nn.Module):
            # lc-encode(1): p = sigmoid(x.w + b), segment = sum p x / sum p over AvgPool's windows
            def forward(self, x):  # C x B x T
                t = x.permute(1, 2, 0)  # B x T x C
                pr = torch.sigmoid(enc.pool_tagger(t))  # B x T x 1
                num = torch.nn.functional.avg_pool1d((t * pr).permute(0, 2, 1), k, s)  # B x C x S
                den = torch.nn.functional.avg_pool1d(pr.permute(0, 2, 1), k, s)
                return (num / den).permute(1, 0, 2)  # C x B x S
        enc.top_pool = AdaPool()
    else:
        enc.top_pool = torch.nn.AvgPool1d(k, stride=s)
    cfg.update(n1=n1, n2=n2, n3=n3, window=w, pool_kernel=k, pool_stride=s, adapool=ada)
    hf.update(architectures=["BartTopDownForConditionalGeneration"], model_type="bart_topdown",
              encoder_layers=n1 + n3, bottom_up_layers=n1, segment_layers=n2, top_down_layers=n3,
              window_size=w, pool_kernel=k, pool_stride=s, pool_type="adapool" if ada else "avg")
    special = {}
    pad_mult = None
enc.eval()
fill_params(enc, seed + 100, special=special)
if kind == "topdown" and ada:
    with torch.no_grad():
        enc.pool_tagger.weight.mul_(2.0)

# decoder (BART's, fairseq layers)
dtc = TransformerConfig.from_namespace(argparse.Namespace(**dict(base_args(), encoder_layers=1, use_xformers=False,
                                                             attention_name="block_noglobal", xformer_config="{}",
                                                             pooling_layers=0)))
from fairseq.modules import LearnedPositionalEmbedding  # noqa: E402
dec = torch.nn.Module()
dec.embed_positions = LearnedPositionalEmbedding(1026, C, 1)
dec.layernorm_embedding = LayerNorm(C)
dec.layers = torch.nn.ModuleList([TransformerDecoderLayerBase(dtc) for _ in range(dec_layers)])
dec.eval()
fill_params(dec, seed + 200, special={"layers.%d.encoder_attn.%s.weight" % (i, w): 3.0 for i in range(dec_layers) for w in ("v_proj", "out_proj")})

sd = {"encoder." + kk: v for kk, v in enc.state_dict().items()}
sd.update({"decoder." + kk: v for kk, v in dec.state_dict().items()})
if R.random() < 0.5:
    sd["decoder.embed_tokens.weight"] = sd["encoder.embed_tokens.weight"]
write_safetensors(out + "/model/model.safetensors", sd, {})
with open(out + "/model/config.json", "w") as f:
    json.dump(hf, f, indent=1, sort_keys=True)

# lengths
if kind == "bartls":
    base = [1, 2, 31, 32, 33, bs - 1, bs, bs + 1, 2 * bs + 1, k, k + 1]
else:
    base = [1, 31, 32, 33, w - 1, w, w + 1, k - 1, k, k + 1, k + s, 2 * w + 1]
base += [R.randint(100, 600), R.randint(1500, 2500), maxpos]
lengths = sorted(set(L for L in base if 1 <= L <= maxpos))
if "lengths" in over:
    lengths = over["lengths"]
if len(lengths) > 9:  # keep it cheap: keep the boundary ones + one long
    longs = [L for L in lengths if L > 600]
    lengths = [L for L in lengths if L <= 600] + [R.choice(longs)] if longs else lengths
cfg["lengths"] = lengths
g = torch.Generator().manual_seed(seed + 300)
docs = []
for L in lengths:
    t = torch.randint(4, V, (L,), generator=g, dtype=torch.long)
    t[0] = 0
    if L >= 2:
        t[-1] = 2
    if os.environ.get("PADIN") and L >= 2:
        m = torch.rand(L, generator=g) < 0.15
        t[m] = 1
        if torch.rand(1, generator=g).item() < 0.4:
            t[0] = 1
        if torch.rand(1, generator=g).item() < 0.4:
            t[-max(1, L // 5):] = 1
    docs.append(t)
with open(out + "/in.txt", "w") as f:
    for t in docs:
        f.write(" ".join(str(int(x)) for x in t) + "\n")


def encode(t):
    L = len(t)
    if kind == "bartls":
        src = data_utils.collate_tokens([t], 1, pad_to_multiple=pad_mult)
    else:
        src = t.unsqueeze(0)
        if L < k:
            src = torch.cat([src, torch.ones(1, k - L, dtype=torch.long)], 1)
    with torch.no_grad():
        r = enc(src)
    return r["encoder_out"][0][:, 0][:L], r


def greedy(encout, toks, maxnew=12, usemask=None):
    eo = encout.unsqueeze(1)  # T x 1 x C
    mask = torch.zeros(1, eo.shape[0], dtype=torch.bool)
    if usemask if usemask is not None else os.environ.get("DECMASK"):
        mask = (toks == 1).unsqueeze(0)
    ids = [2]
    with torch.no_grad():
        while len(ids) < maxnew + 1:
            prev = torch.tensor([ids])
            x = emb(prev) + dec.embed_positions(prev)
            x = dec.layernorm_embedding(x).transpose(0, 1)
            n = len(ids)
            fm = torch.triu(torch.full((n, n), float("-inf")), 1)
            for l in dec.layers:
                x, _, _ = l(x, eo, mask, self_attn_mask=fm)
            logits = x[-1, 0] @ emb.weight.t()
            nxt = int(torch.argmax(logits))
            ids.append(nxt)
            if nxt == 2:
                break
    return ids[1:]


gl = []
gnm = []
gm = []
for i, t in enumerate(docs):
    try:
        o, _ = encode(t)
        with open(out + "/ref_%d.f32" % i, "wb") as f:
            f.write(o.contiguous().numpy().astype("<f4").tobytes())
        gl.append(" ".join(map(str, greedy(o, t))) if dec_layers else "")
        gnm.append(" ".join(map(str, greedy(o, t, usemask=False))) if dec_layers else "")
        gm.append(" ".join(map(str, greedy(o, t, usemask=True))) if dec_layers else "")
    except Exception as e:  # noqa: BLE001
        with open(out + "/ref_%d.err" % i, "w") as f:
            f.write("%s: %s\n" % (type(e).__name__, str(e).strip().split("\n")[0]))
        gl.append("ERR")
with open(out + "/greedy.txt", "w") as f:
    f.write("\n".join(gl) + "\n")
with open(out + "/greedy_nomask.txt", "w") as f:
    f.write("\n".join(gnm) + "\n")
with open(out + "/greedy_mask.txt", "w") as f:
    f.write("\n".join(gm) + "\n")
with open(out + "/case.json", "w") as f:
    json.dump(cfg, f, sort_keys=True)
print(json.dumps(cfg, sort_keys=True))
