#!/usr/bin/env python3
"""
train_ref.py -- PyTorch autograd golden for lc's training backward pass.

A small float64 LOCOST (written for this test, following the semantics
listed in tests/data/locost: the oracle README) with every parameter a
leaf tensor: S4D kernels from (log_dt, inv_A_real, A_imag, B, C) in
complex128, the bidirectional convolution as a direct (Toeplitz) sum --
deliberately not an FFT, so the C code's FFT backward is checked against
an independent path -- the T5 decoder teacher-forced, and the summed
cross-entropy over labels that are not the pad id.

    /usr/bin/python3 tests/gen/train_ref.py tests/data/locost tests/data/train/grads.safetensors

writes input.source, input.target (I32), loss (F32, 1) and grad.NAME
(F32) for every parameter of the model directory's model.safetensors.
"""
import json
import math
import struct
import sys

import numpy as np
import torch


def read_st(path):
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    hdr = json.loads(blob[8:8 + n])
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        a = np.frombuffer(blob[8 + n + b:8 + n + e], dtype="<f4").reshape(v["shape"])
        out[k] = torch.tensor(a.astype(np.float64), requires_grad=True)
    return out


def write_st(path, items):
    hdr, off, datas = {}, 0, []
    for name, arr in items:
        arr = np.ascontiguousarray(arr)
        dt = {np.dtype("float32"): "F32", np.dtype("int32"): "I32"}[arr.dtype]
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        datas.append(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(datas))


def rms(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def kernels(P, p, L):
    dt = torch.exp(P[p + "kernel.log_dt"])                          # [H]
    A = torch.complex(-torch.exp(P[p + "kernel.inv_A_real"]), P[p + "kernel.A_imag"])
    B = torch.complex(P[p + "kernel.B"][..., 0], P[p + "kernel.B"][..., 1])
    C = torch.complex(P[p + "kernel.C"][..., 0], P[p + "kernel.C"][..., 1])   # [nch, H, N2]
    dtA = dt[:, None] * A
    coef = B * C * (torch.exp(dtA) - 1) / A                          # [nch, H, N2]
    l = torch.arange(L, dtype=torch.float64)
    z = torch.exp(dtA[:, :, None] * l)                               # [H, N2, L]
    return 2 * torch.einsum("chn,hnl->chl", coef, z).real           # [nch, H, L]


def conv(k, K):
    # k [L, H]; y[t] = sum_{s<=t} K0[t-s] k[s] + sum_{s>=t} K1[s-t] k[s]
    L = k.shape[0]
    t = torch.arange(L)
    diff = t[:, None] - t[None, :]                                   # t - s
    M0 = K[0][:, diff.clamp(min=0)] * (diff >= 0)                    # [H, L, L]
    M1 = K[1][:, (-diff).clamp(min=0)] * (diff <= 0)
    return torch.einsum("hts,sh->th", M0 + M1, k)


def bucket(rp, nb, md):
    me = nb // 2
    if rp < me:
        return rp
    v = me + int(math.log(rp / me) / math.log(md / me) * (nb - me))
    return min(v, nb - 1)


def forward(P, cfg, src, tgt):
    eps, d = cfg["layer_norm_epsilon"], cfg["d_model"]
    nh, dkv = cfg["num_heads"], cfg["d_kv"]
    E = P["shared.weight"]
    x = E[src]
    L = len(src)
    for i in range(cfg["num_layers"]):
        p = "encoder.block.%d.layer.0.ssm_layer." % i
        u = rms(x, P["encoder.block.%d.layer.0.layer_prenorm.weight" % i], eps)
        k = u @ P[p + "k_proj.weight"].T + P[p + "k_proj.bias"]
        q = u @ P[p + "q_proj.weight"].T + P[p + "q_proj.bias"]
        y = conv(k, kernels(P, p, L)) + P[p + "D"] * k
        x = x + (q * y) @ P[p + "output_linear.weight"].T + P[p + "output_linear.bias"]
        f = "encoder.block.%d.layer.1." % i
        n = rms(x, P[f + "layer_norm.weight"], eps)
        h = gelu_new(n @ P[f + "DenseReluDense.wi_0.weight"].T) * (n @ P[f + "DenseReluDense.wi_1.weight"].T)
        x = x + h @ P[f + "DenseReluDense.wo.weight"].T
    enc = rms(x, P["encoder.final_layer_norm.weight"], eps)

    T = len(tgt)
    din = [cfg["decoder_start_token_id"]] + [t if t >= 0 else 0 for t in tgt[:-1]]
    x = E[din]
    rb = P["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    idx = torch.tensor([[bucket(max(i - j, 0), cfg["relative_attention_num_buckets"],
                                cfg["relative_attention_max_distance"]) for j in range(T)]
                        for i in range(T)])
    bias = rb[idx].permute(2, 0, 1)                                  # [nh, T, T]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)

    def attn(xq, xkv, pre, b):
        Q = (xq @ P[pre + "q.weight"].T).view(-1, nh, dkv).transpose(0, 1)
        K = (xkv @ P[pre + "k.weight"].T).view(-1, nh, dkv).transpose(0, 1)
        V = (xkv @ P[pre + "v.weight"].T).view(-1, nh, dkv).transpose(0, 1)
        S = Q @ K.transpose(1, 2)
        if b is not None:
            S = (S + b).masked_fill(mask, float("-inf"))
        o = torch.softmax(S, -1) @ V
        return o.transpose(0, 1).reshape(xq.shape[0], nh * dkv) @ P[pre + "o.weight"].T

    for i in range(cfg["num_decoder_layers"]):
        b = "decoder.block.%d." % i
        h = rms(x, P[b + "layer.0.layer_norm.weight"], eps)
        x = x + attn(h, h, b + "layer.0.SelfAttention.", bias)
        x = x + attn(rms(x, P[b + "layer.1.layer_norm.weight"], eps), enc, b + "layer.1.EncDecAttention.", None)
        n = rms(x, P[b + "layer.2.layer_norm.weight"], eps)
        h = gelu_new(n @ P[b + "layer.2.DenseReluDense.wi_0.weight"].T) * (n @ P[b + "layer.2.DenseReluDense.wi_1.weight"].T)
        x = x + h @ P[b + "layer.2.DenseReluDense.wo.weight"].T
    hf = rms(x, P["decoder.final_layer_norm.weight"], eps) * d ** -0.5
    logits = hf @ E.T
    lab = torch.tensor(tgt)
    keep = (lab >= 0) & (lab != cfg["pad_token_id"])
    lp = torch.log_softmax(logits, -1)
    return -(lp[keep.nonzero()[:, 0], lab[keep]]).sum()


def main():
    mdir, out = sys.argv[1], sys.argv[2]
    cfg = json.load(open(mdir + "/config.json"))
    P = read_st(mdir + "/model.safetensors")
    rng = np.random.RandomState(8)
    src = [int(v) for v in rng.randint(3, cfg["vocab_size"], size=47)] + [1]
    tgt = [int(v) for v in rng.randint(3, cfg["vocab_size"], size=11)] + [1]
    tgt[4] = 0   # a pad label: ignored
    loss = forward(P, cfg, src, tgt)
    loss.backward()
    items = [("input.source", np.array(src, dtype=np.int32)),
             ("input.target", np.array(tgt, dtype=np.int32)),
             ("loss", np.array([loss.item()], dtype=np.float32))]
    for k in sorted(P):
        items.append(("grad." + k, P[k].grad.numpy().astype(np.float32)))
    write_st(out, items)
    print("loss %.8f, %d gradients -> %s" % (loss.item(), len(P), out))


if __name__ == "__main__":
    main()
