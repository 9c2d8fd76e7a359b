#!/usr/bin/python3
"""PyTorch float32 LOCOST encoder (reference path: FFT size 2L, full-length
kernels), for `make bench` to compare lc-encode against on the same weights.
usage: locost_torch.py MODEL_DIR L THREADS [DEVICE]   -> prints "seconds";
with DEVICE cuda, on the GPU, twice: the first run's seconds and the
second's (the first includes CUDA's and cuFFT's start)."""
import json, math, struct, sys, time
import numpy as np
import torch

d, L, nt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dev = sys.argv[4] if len(sys.argv) > 4 else "cpu"
torch.set_num_threads(nt)
cfg = json.load(open(d + "/config.json"))
blob = open(d + "/model.safetensors", "rb").read()
hl = struct.unpack("<Q", blob[:8])[0]
hdr = json.loads(blob[8:8 + hl])
W = {}
for k, v in hdr.items():
    if k == "__metadata__":
        continue
    b, e = v["data_offsets"]
    W[k] = torch.from_numpy(np.frombuffer(blob, "<f4", (e - b) // 4, 8 + hl + b).reshape(v["shape"]).copy()).to(dev)
eps = cfg.get("layer_norm_epsilon", 1e-6)

def rms(x, w):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))

def kernels(p, L):
    dt = torch.exp(W[p + "kernel.log_dt"])
    A = torch.complex(-torch.exp(W[p + "kernel.inv_A_real"]), W[p + "kernel.A_imag"])
    dtA = dt[:, None] * A
    B, C = W[p + "kernel.B"], W[p + "kernel.C"]
    coef = torch.complex(C[..., 0], C[..., 1]) * torch.complex(B[..., 0], B[..., 1])[None] * ((torch.exp(dtA) - 1) / A)[None]
    K = torch.empty(2, dtA.shape[0], L, device=dev)
    for s in range(0, L, 256):
        l = torch.arange(s, min(L, s + 256), dtype=torch.float32, device=dev)
        K[:, :, s:s + len(l)] = 2 * torch.einsum("chn,hnl->chl", coef, torch.exp(dtA[:, :, None] * l)).real
    return K[0], K[1]

ids = torch.randint(3, cfg["vocab_size"], (L,), device=dev)

def encode():
    with torch.no_grad():
        h = W["shared.weight"][ids]
        for i in range(cfg["num_layers"]):
            p = "encoder.block.%d.layer." % i
            s = p + "0.ssm_layer."
            u = rms(h, W[p + "0.layer_prenorm.weight"])
            k = u @ W[s + "k_proj.weight"].T + W[s + "k_proj.bias"]
            q = u @ W[s + "q_proj.weight"].T + W[s + "q_proj.bias"]
            K0, K1 = kernels(s, L)
            g = torch.zeros(K0.shape[0], 2 * L, device=dev)
            g[:, :L] = K0
            g[:, 0] += K1[:, 0]
            g[:, L + 1:] = torch.flip(K1[:, 1:], dims=[-1])
            y = torch.fft.irfft(torch.fft.rfft(k.T, n=2 * L) * torch.fft.rfft(g, n=2 * L), n=2 * L)[:, :L].T
            y = q * (y + k * W[s + "D"])
            h = h + y @ W[s + "output_linear.weight"].T + W[s + "output_linear.bias"]
            n = rms(h, W[p + "1.layer_norm.weight"])
            f = p + "1.DenseReluDense."
            a = n @ W[f + "wi_0.weight"].T
            a = 0.5 * a * (1 + torch.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
            h = h + (a * (n @ W[f + "wi_1.weight"].T)) @ W[f + "wo.weight"].T
        h = rms(h, W["encoder.final_layer_norm.weight"])
    if dev != "cpu":
        torch.cuda.synchronize()

if dev != "cpu":
    # TF32 off: fp32 products in fp32, as lc
    torch.backends.cuda.matmul.allow_tf32 = False
for run in range(2 if dev != "cpu" else 1):
    t0 = time.time()
    encode()
    print("%.3f" % (time.time() - t0))
