#!/usr/bin/python3
"""Tiny fairseq checkpoints written like the released BART / BART-LS ones.

A fairseq checkpoint is torch.save(state) of the dict that fairseq's
Trainer.state_dict() builds and checkpoint_utils.save_checkpoint extends
(bart_ls commit 386262dd, fairseq-py/fairseq/trainer.py lines 381-418 and
checkpoint_utils.py lines 109-117): "args" (None: legacy), "cfg"
(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True): a plain dict
whose "model" and "task" are argparse.Namespace objects, because BART is a
legacy model: dataclass/utils.py convert_namespace_to_omegaconf sets
cfg.model = Namespace(**vars(args))), "model" (the state dict), "criterion",
"optimizer_history", "task_state", "extra_state" (metrics, training time,
train_iterator, val_loss, best) and "last_optimizer_state". The argument
values follow fairseq's bart_large_architecture and the BART-LS scripts
(scripts/summarization/ft_summ.sh, scripts/long_denoise/run_pretrain.sh),
with tiny sizes. Nothing of fairseq is imported: this writes the same
structure with Debian's python3-torch and python3-omegaconf.

Writes into OUT (tests/data/fairseq):
  bart/model.pt            tiny BART (d_model 16, 2+2 layers, 2 heads, ffn 32,
                           vocab 1000 = 4 specials + 995 GPT-2 ids + <mask>,
                           max positions 128), float32, cfg + Namespace, with
                           Adam's state, numpy scalars and meters as saved
  bart/dict.txt, encoder.json, vocab.bpe
                           the tokenizer: GPT-2 ids 0..994 (the 256 bytes and
                           the first 739 merges, a closed prefix) in id order,
                           so fairseq id = GPT-2 id + 4, as the HF tiny BART's
  bart_hf/config.json, model.safetensors
                           the same weights under transformers' names (the
                           tests add tests/data/bart/tiny_bart's tokenizer)
  variants/args.pt         the same model, "args" an argparse.Namespace and no
                           "cfg" (fairseq before the hydra configs)
  variants/dictconfig.pt   the same model, "cfg" a pickled omegaconf DictConfig
  variants/evil_system.pt, evil_eval.pt
                           a checkpoint whose extra_state pickles os.system /
                           builtins.eval calls (must be refused, never run)
  variants/prenorm.pt, bs_local.pt
                           arguments lc must refuse (encoder_normalize_before,
                           attention_name bs_local)
  bartls/model.pt          tiny BART-LS: 3 encoder layers of which the top 1
                           pooled, block_size 16 (xformer_config), max source
                           positions 256, float16 as --memory-efficient-fp16
                           saves it; encoder.json / vocab.bpe / dict.txt as bart/

Usage: make_fairseq_ckpt.py OUT GPT2_VOCAB_JSON GPT2_MERGES_TXT
"""
import argparse
import collections
import copy
import json
import os
import struct
import sys

import numpy as np
import torch
from omegaconf import OmegaConf

out, vocab_json, merges_txt = sys.argv[1:4]
NGPT = 995          # GPT-2 ids 0..994: the bytes and the first 739 merges
VOCAB = 4 + NGPT + 1
D, FFN, HEADS = 16, 32, 2


def bart_args(**over):
    """The Namespace cfg.model holds for --arch bart_large after
    bart_large_architecture and the ft_summ.sh options (tiny sizes)."""
    a = dict(
        no_progress_bar=False, log_interval=10, log_format="json", seed=3, cpu=False, fp16=False,
        memory_efficient_fp16=True, fp16_init_scale=128, task="summarization",
        criterion="label_smoothed_cross_entropy", optimizer="adam", lr_scheduler="polynomial_decay",
        data="DATA_BIN", source_lang="src", target_lang="tgt", truncate_source=True,
        truncate_target=True, custom_dict="../checkpoints/dict.txt", max_epoch=130,
        update_freq=[4], batch_size=2, lr=[5e-05], clip_norm=0.1, adam_betas="(0.9, 0.98)",
        adam_eps=1e-08, weight_decay=0.0, warmup_updates=500, total_num_update=10000,
        required_seq_len_multiple=1024, checkpoint_activations=True, fast_stat_sync=True,
        label_smoothing=0.1, eval_rouge=True,
        eval_rouge_args='{"beam": 4, "max_len_b": 300, "lenpen": 2.0, "no_repeat_ngram_size": 3, "min_len": 20}',
        arch="bart_large", _name="bart_large",
        encoder_embed_path=None, encoder_embed_dim=D, encoder_ffn_embed_dim=FFN,
        encoder_layers=2, encoder_attention_heads=HEADS, encoder_normalize_before=False,
        encoder_learned_pos=True, decoder_embed_path=None, decoder_embed_dim=D,
        decoder_ffn_embed_dim=FFN, decoder_layers=2, decoder_attention_heads=HEADS,
        decoder_normalize_before=False, decoder_learned_pos=True, attention_dropout=0.1,
        relu_dropout=0.0, dropout=0.1, max_target_positions=128, max_source_positions=128,
        adaptive_softmax_cutoff=None, adaptive_softmax_dropout=0,
        share_decoder_input_output_embed=True, share_all_embeddings=True,
        decoder_output_dim=D, decoder_input_dim=D, no_scale_embedding=True,
        layernorm_embedding=True, activation_fn="gelu", pooler_activation_fn="tanh",
        pooler_dropout=0.0, spectral_norm_classification_head=False,
        restrict_position_embed=False, sliding_window=False, block_attention=False,
        top_down=False, use_xformers=False, attention_name="block_noglobal",
        xformer_config="{}", pooling_layers=0, encoder_layerdrop=0, decoder_layerdrop=0,
        encoder_layers_to_keep=None, decoder_layers_to_keep=None, quant_noise_pq=0,
        quant_noise_pq_block_size=8, quant_noise_scalar=0, no_token_positional_embeddings=False,
        adaptive_input=False, no_cross_attention=False, cross_self_attention=False,
        tie_adaptive_weights=False, checkpoint_activations_offload=False, offload_activations=False,
        min_params_to_wrap=100000000, alibi=False, truncate_alibi=None,
    )
    a.update(over)
    return argparse.Namespace(**a)


def cfg_dict(model_ns):
    """Trainer.state_dict()'s cfg: the sections of FairseqConfig as plain
    data, model and task the legacy Namespaces."""
    return {
        "_name": None,
        "common": {"_name": None, "no_progress_bar": False, "log_interval": 10,
                   "log_format": "json", "log_file": None, "tensorboard_logdir": None,
                   "wandb_project": None, "azureml_logging": False, "seed": 3, "cpu": False,
                   "tpu": False, "bf16": False, "memory_efficient_bf16": False, "fp16": True,
                   "memory_efficient_fp16": True, "fp16_no_flatten_grads": False,
                   "fp16_init_scale": 128, "fp16_scale_window": None,
                   "fp16_scale_tolerance": 0.0, "on_cpu_convert_precision": False,
                   "min_loss_scale": 0.0001, "threshold_loss_scale": None, "amp": False,
                   "user_dir": None, "empty_cache_freq": 0, "all_gather_list_size": 16384,
                   "model_parallel_size": 1, "quantization_config_path": None,
                   "profile": False, "reset_logging": False, "suppress_crashes": False,
                   "use_plasma_view": False, "plasma_path": "/tmp/plasma"},
        "common_eval": {"_name": None, "path": None, "post_process": None, "quiet": False,
                        "model_overrides": "{}", "results_path": None},
        "distributed_training": {"_name": None, "distributed_world_size": 8,
                                 "distributed_backend": "nccl", "ddp_backend": "pytorch_ddp",
                                 "fp16_sharded_ddp": False, "find_unused_parameters": False},
        "dataset": {"_name": None, "num_workers": 4, "skip_invalid_size_inputs_valid_test": True,
                    "max_tokens": None, "batch_size": 2, "required_batch_size_multiple": 8,
                    "required_seq_len_multiple": 1024, "dataset_impl": None,
                    "combine_valid_subsets": True, "valid_subset": "valid"},
        "optimization": {"_name": None, "max_epoch": 130, "max_update": 0,
                         "clip_norm": 0.1, "sentence_avg": False, "update_freq": [4],
                         "lr": [5e-05], "stop_min_lr": -1.0, "use_bmuf": False},
        "checkpoint": {"_name": None, "save_dir": "checkpoints", "restore_file":
                       "../checkpoints/model_100k.pt", "no_epoch_checkpoints": True,
                       "best_checkpoint_metric": "rouge_avg",
                       "maximize_best_checkpoint_metric": True, "no_save_optimizer_state": False,
                       "write_checkpoints_asynchronously": False},
        "bmuf": {"_name": None, "block_lr": 1.0, "block_momentum": 0.875, "global_sync_iter": 50,
                 "warmup_iterations": 500, "use_nbm": False, "average_sync": False,
                 "distributed_world_size": 8},
        "generation": {"_name": None, "beam": 5, "nbest": 1, "max_len_a": 0.0, "max_len_b": 200,
                       "min_len": 1, "lenpen": 1.0, "unkpen": 0.0, "no_repeat_ngram_size": 0,
                       "sampling": False},
        "eval_lm": {"_name": None, "output_word_probs": False, "context_window": 0},
        "interactive": {"_name": None, "buffer_size": 0, "input": "-"},
        "model": model_ns,
        "task": copy.copy(model_ns),
        "criterion": {"_name": "label_smoothed_cross_entropy", "label_smoothing": 0.1,
                      "report_accuracy": False, "ignore_prefix_size": 0, "sentence_avg": False},
        "optimizer": {"_name": "adam", "adam_betas": "(0.9, 0.98)", "adam_eps": 1e-08,
                      "weight_decay": 0.0, "use_old_adam": False, "fp16_adam_stats": False,
                      "tpu": False, "lr": [5e-05]},
        "lr_scheduler": {"_name": "polynomial_decay", "warmup_updates": 500,
                         "force_anneal": None, "end_learning_rate": 0.0, "power": 1.0,
                         "total_num_update": 10000.0, "lr": [5e-05]},
        "scoring": {"_name": "bleu", "pad": 1, "eos": 2, "unk": 3},
        "bpe": None,
        "tokenizer": None,
        "ema": {"_name": None, "store_ema": False, "ema_decay": 0.9999, "ema_start_update": 0,
                "ema_seed_model": None, "ema_update_freq": 1, "ema_fp32": False},
        "simul_type": None,
    }


gen = torch.Generator().manual_seed(20240601)


def randn(*shape, std=1.0):
    return torch.randn(*shape, generator=gen) * std


def ln(sd, name):
    sd[name + ".weight"] = randn(D, std=1.0)      # zero-mean: no "copy the input" attractor
    sd[name + ".bias"] = randn(D, std=0.1)


def attn(sd, name):
    for p, std in (("k_proj", 0.3), ("v_proj", 0.25), ("q_proj", 0.3), ("out_proj", 0.25)):
        sd[f"{name}.{p}.weight"] = randn(D, D, std=std)
        sd[f"{name}.{p}.bias"] = randn(D, std=0.1)


def ffn(sd, name):
    sd[name + ".fc1.weight"] = randn(FFN, D, std=D ** -0.5)
    sd[name + ".fc1.bias"] = randn(FFN, std=0.1)
    sd[name + ".fc2.weight"] = randn(D, FFN, std=FFN ** -0.5)
    sd[name + ".fc2.bias"] = randn(D, std=0.1)
    ln(sd, name + ".final_layer_norm")


def model_state(enc_layers, pooled, src_pos, tgt_pos):
    """fairseq BARTModel.state_dict() order; the three tied embeddings one tensor."""
    sd = collections.OrderedDict()
    emb = randn(VOCAB, D, std=0.5)
    sd["encoder.version"] = torch.Tensor([3])
    sd["encoder.embed_tokens.weight"] = emb
    sd["encoder.embed_positions.weight"] = randn(src_pos + 2, D, std=0.5)
    ln(sd, "encoder.layernorm_embedding")
    for i in range(enc_layers):
        pre = f"encoder.layers.{i}"
        attn(sd, pre + ".self_attn")
        ln(sd, pre + ".self_attn_layer_norm")
        if i >= enc_layers - pooled:
            attn(sd, pre + ".pool_attn")
        ffn(sd, pre)
    sd["decoder.version"] = torch.Tensor([3])
    sd["decoder.embed_tokens.weight"] = emb
    sd["decoder.embed_positions.weight"] = randn(tgt_pos + 2, D, std=0.5)
    ln(sd, "decoder.layernorm_embedding")
    for i in range(2):
        pre = f"decoder.layers.{i}"
        attn(sd, pre + ".self_attn")
        ln(sd, pre + ".self_attn_layer_norm")
        attn(sd, pre + ".encoder_attn")
        ln(sd, pre + ".encoder_attn_layer_norm")
        ffn(sd, pre)
    sd["decoder.output_projection.weight"] = emb
    return sd


def training_state(sd, with_optimizer):
    params = [k for k in sd if not k.endswith(".version") and k not in (
        "decoder.embed_tokens.weight", "decoder.output_projection.weight")]
    meters = collections.OrderedDict()
    meters["default"] = [(0, "wall", "StopwatchMeter", {"sum": 12.5, "n": 3, "round": 0})]
    meters["train"] = [
        (0, "loss", "AverageMeter", {"val": 3.25, "sum": 32.5, "count": 10, "round": 3}),
        (10, "ups", "TimeMeter", {"init": 0, "start": 1650000000.0, "n": 100, "round": 2}),
        (20, "loss_scale", "AverageMeter", {"val": np.float64(128.0), "sum": 1280.0,
                                            "count": 10, "round": 4}),
    ]
    state = {
        "criterion": None,
        "optimizer_history": [{
            "criterion_name": "LabelSmoothedCrossEntropyCriterion",
            "optimizer_name": "MemoryEfficientFP16Optimizer",
            "lr_scheduler_state": {"best": np.float64(3.0625)},
            "num_updates": 100,
        }],
        "task_state": {},
        "extra_state": {
            "metrics": meters,
            "previous_training_time": 1234.5,
            "train_iterator": {"version": 2, "epoch": 3, "iterations_in_epoch": 0,
                               "shuffle": True},
            "val_loss": 3.1,
            "best": np.float64(3.0),
        },
    }
    if with_optimizer:
        state["last_optimizer_state"] = {
            "state": {i: {"step": 100, "exp_avg": torch.zeros_like(sd[k]).float(),
                          "exp_avg_sq": torch.full_like(sd[k], 1e-6).float()}
                      for i, k in enumerate(params)},
            "param_groups": [{"lr": 5e-05, "betas": (0.9, 0.98), "eps": 1e-08,
                              "weight_decay": 0.0, "amsgrad": False,
                              "params": list(range(len(params)))}],
            "loss_scale": 128.0,
        }
    return state


def save(path, state):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(state, path)
    print(f"{path}: {os.path.getsize(path)} bytes", file=sys.stderr)


def write_tokenizer(d):
    enc = json.load(open(vocab_json, encoding="utf-8"))
    inv = {v: k for k, v in enc.items()}
    with open(os.path.join(d, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump({inv[i]: i for i in range(NGPT)}, f, ensure_ascii=False)
    with open(merges_txt, encoding="utf-8") as f:
        merges = f.read().split("\n")
    with open(os.path.join(d, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("\n".join(merges[:1 + NGPT - 256]) + "\n")
    with open(os.path.join(d, "dict.txt"), "w", encoding="utf-8") as f:
        for i in range(NGPT):
            f.write(f"{i} {1000000 - i}\n")


def write_safetensors(path, tensors):
    header, off, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for k in sorted(tensors):
        b = tensors[k].contiguous().float().numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(tensors[k].shape),
                     "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# --------------------------------------------------------------- BART
sd = model_state(2, 0, 128, 128)
args = bart_args()
state = {"args": None, "cfg": cfg_dict(args), "model": sd}
state.update(training_state(sd, True))
save(os.path.join(out, "bart", "model.pt"), state)
write_tokenizer(os.path.join(out, "bart"))

hf = os.path.join(out, "bart_hf")
os.makedirs(hf, exist_ok=True)
hft = {"model.shared.weight": sd["encoder.embed_tokens.weight"]}
for k, v in sd.items():
    if not k.endswith(".version") and "embed_tokens" not in k and "output_projection" not in k:
        hft["model." + k] = v
write_safetensors(os.path.join(hf, "model.safetensors"), hft)
with open(os.path.join(hf, "config.json"), "w") as f:
    json.dump({"architectures": ["BartForConditionalGeneration"], "model_type": "bart",
               "d_model": D, "encoder_layers": 2, "decoder_layers": 2,
               "encoder_attention_heads": HEADS, "decoder_attention_heads": HEADS,
               "encoder_ffn_dim": FFN, "decoder_ffn_dim": FFN, "vocab_size": VOCAB,
               "max_position_embeddings": 128, "activation_function": "gelu",
               "scale_embedding": False, "pad_token_id": 1, "bos_token_id": 0,
               "eos_token_id": 2, "decoder_start_token_id": 2, "tie_word_embeddings": True,
               # as fairseq's checkpoint, which lc decodes with no forced eos:
               # without the key BartConfig forces 2 at the length limit
               "forced_eos_token_id": None},
              f, indent=2, sort_keys=True)

# ----------------------------------------------------------- variants
v = os.path.join(out, "variants")
old = {"args": bart_args(), "model": sd}
old.update(training_state(sd, False))
del old["task_state"]
save(os.path.join(v, "args.pt"), old)

mdict = vars(bart_args()).copy()
dc_cfg = cfg_dict(None)
dc_cfg["model"] = mdict
dc_cfg["task"] = {"_name": "summarization", "data": "DATA_BIN", "source_lang": "src"}
dc = {"args": None, "cfg": OmegaConf.create(dc_cfg), "model": sd}
dc.update(training_state(sd, False))
save(os.path.join(v, "dictconfig.pt"), dc)


class Call:
    """Pickles as a call of fn(arg): what a hostile checkpoint holds."""
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def __reduce__(self):
        return (self.fn, (self.arg,))


import builtins  # noqa: E402
small = collections.OrderedDict([("encoder.version", torch.Tensor([3]))])
for name, fn, arg in (("evil_system.pt", os.system, "echo pwned"),
                      ("evil_eval.pt", builtins.eval, "1+1")):
    st = {"args": None, "cfg": cfg_dict(bart_args()), "model": small}
    st.update(training_state(small, False))
    st["extra_state"]["hook"] = Call(fn, arg)
    save(os.path.join(v, name), st)
for name, over in (("prenorm.pt", {"encoder_normalize_before": True}),
                   ("bs_local.pt", {"use_xformers": True, "attention_name": "bs_local",
                                    "pooling_layers": 1})):
    # refused at the arguments: a one-tensor state dict is enough
    st = {"args": None, "cfg": cfg_dict(bart_args(**over)),
          "model": collections.OrderedDict([("encoder.embed_tokens.weight", randn(8, D))])}
    save(os.path.join(v, name), st)

# ------------------------------------------------------------ BART-LS
ls = os.path.join(out, "bartls")
sdl = model_state(3, 1, 256, 128)
sdl = collections.OrderedDict((k, v.half()) for k, v in sdl.items())
emb = sdl["encoder.embed_tokens.weight"]
sdl["decoder.embed_tokens.weight"] = sdl["decoder.output_projection.weight"] = emb
# build_decoder sets args.use_xformers = False on the very Namespace that
# cfg.model is, so the released checkpoints say False even though the
# encoder was built with block attention
lsa = bart_args(encoder_layers=3, pooling_layers=1, max_source_positions=256,
                xformer_config='{"block_size": 16}', use_xformers=False)
st = {"args": None, "cfg": cfg_dict(lsa), "model": sdl}
st.update(training_state(sdl, False))
save(os.path.join(ls, "model.pt"), st)
write_tokenizer(ls)

# ------------------------------------------------- fuzz seeds (optional)
# tests/fuzz/seeds/fuzz_fairseq: the same checkpoints' pickles with a
# one-tensor state dict (small enough to fuzz), Adam's state dropped
if len(sys.argv) > 4:
    seeds = sys.argv[4]
    os.makedirs(seeds, exist_ok=True)
    tiny = collections.OrderedDict([("encoder.embed_tokens.weight", randn(6, D)),
                                    ("encoder.version", torch.Tensor([3]))])
    for src, name in ((os.path.join(out, "bart", "model.pt"), "cfg_namespace.pt"),
                      (os.path.join(v, "args.pt"), "args.pt"),
                      (os.path.join(v, "dictconfig.pt"), "dictconfig.pt"),
                      (os.path.join(ls, "model.pt"), "bartls.pt")):
        st = torch.load(src)
        st["model"] = tiny
        st.pop("last_optimizer_state", None)
        save(os.path.join(seeds, name), st)
        # the pickle alone (the fuzz target zips it with storages "0".."7")
        import zipfile
        with zipfile.ZipFile(os.path.join(seeds, name)) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            with open(os.path.join(seeds, name[:-3] + ".pkl"), "wb") as f:
                f.write(z.read(pkl))
