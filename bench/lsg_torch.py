#!/usr/bin/python3
"""PyTorch float32 LSG-BART encoder: the LSG authors' own modeling_lsg_bart.py
(on Hugging Face transformers 4.36.2, which must be importable), for
bench/lsg.sh to compare lc-encode against on the same weights.

usage: lsg_torch.py [--modeling FILE] [--dump FILE] [--ids FILE] MODEL_DIR L THREADS [REPEATS]
  -> prints "lsg_torch<TAB>L<TAB>seconds<TAB>peak_MiB"

The authors' file is not part of lc: its path is given with --modeling or in
BENCH_LSG_MODELING (the LSG converter copies it into every model directory)
and it is imported from there.  MODEL_DIR holds config.json and
model.safetensors (Hugging Face names), read by from_pretrained; any weight
missing from the file (other than the tied aliases of model.shared.weight) or
not used by the model is an error.  The input is bos 0, L-2 ids drawn in
[4, vocab) with a fixed seed, eos 2 (or, with --ids, the whitespace-separated
ids in FILE); attention_mask is all ones.  seconds is the best of REPEATS
(default 3) calls of model.model.encoder under torch.no_grad() in eval mode;
peak_MiB is the process's peak RSS (ru_maxrss), weights and loading included.
--dump writes last_hidden_state[0] ([num_global_tokens + L, d_model], global
rows first) as raw little-endian float32.  For sparsity_type lsh,
torch.manual_seed(0) comes before each run (lsh draws torch.randn)."""
import importlib.util, os, resource, sys, time, warnings
import numpy as np
import torch

args, opt = sys.argv[1:], {"--modeling": os.environ.get("BENCH_LSG_MODELING")}
while len(args) > 1 and args[0] in ("--modeling", "--dump", "--ids"):
    opt[args[0]] = args[1]
    args = args[2:]
if len(args) not in (3, 4) or not opt["--modeling"]:
    sys.exit("usage: lsg_torch.py [--modeling FILE] [--dump FILE] [--ids FILE] MODEL_DIR L THREADS [REPEATS]\n"
             "  (--modeling or BENCH_LSG_MODELING: the authors' modeling_lsg_bart.py)")
d, L, nt = args[0], int(args[1]), int(args[2])
reps = int(args[3]) if len(args) == 4 else 3
torch.set_num_threads(nt)

from transformers.utils import logging
logging.set_verbosity_error()
warnings.simplefilter("ignore", FutureWarning)  # the file subclasses the deprecated PretrainedBartModel
spec = importlib.util.spec_from_file_location("modeling_lsg_bart", opt["--modeling"])
lsg = importlib.util.module_from_spec(spec)
sys.modules["modeling_lsg_bart"] = lsg
spec.loader.exec_module(lsg)

cfg = lsg.LSGBartConfig.from_pretrained(d)
model, info = lsg.LSGBartForConditionalGeneration.from_pretrained(d, config=cfg, output_loading_info=True)
bad = info["missing_keys"] + info["unexpected_keys"] + [k[0] for k in info["mismatched_keys"]]
if bad:   # HF already leaves out the tied aliases of model.shared.weight and final_logits_bias
    sys.exit("lsg_torch.py: %s: missing/unexpected/mismatched weights: %s" % (d, " ".join(bad)))
model.eval()

if "--ids" in opt:
    ids = [int(t) for t in open(opt["--ids"]).read().split()]
else:
    rng = np.random.default_rng(1234)
    ids = [0] + rng.integers(4, cfg.vocab_size, size=max(L - 2, 0)).tolist() + [2]
ids = torch.tensor(ids[:L], dtype=torch.long)[None]
mask = torch.ones_like(ids)
best = None
with torch.no_grad():
    for _ in range(reps):
        if cfg.sparsity_type == "lsh":
            torch.manual_seed(0)
        t0 = time.perf_counter()
        out = model.model.encoder(input_ids=ids, attention_mask=mask, return_dict=True)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
if "--dump" in opt:
    out.last_hidden_state[0].numpy().astype("<f4").tofile(opt["--dump"])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("lsg_torch\t%d\t%.3f\t%.0f" % (ids.shape[1], best, peak))
