"""Draft heads for the embedded model, trained on the frozen main model over the training text (CPU-sized):

  train-mtp     an MTP layer in the DeepSeek-V3 layout (num_nextn_predict_layers = 1, stored as layer
                num_hidden_layers: enorm, hnorm, eh_proj, one decoder layer shaped as the last main layer, and
                shared_head.norm; embedding and LM head are the main model's), which Ringmaster's NEXTN path loads.
  train-eagle3  an EAGLE-3 head in the LlamaForCausalLMEagle3 layout SGLang and vLLM load (fc, midlayer.*, norm,
                lm_head over a draft vocabulary of the most frequent training tokens, d2t, t2d), reading the main
                model's layers given by eagle_aux_hidden_state_layer_ids.

Both distil the main model: the loss is KL(main || head) at the position the head predicts. The EAGLE-3 head is
trained over its own chained steps (EAGLE-3's training-time test): step s of row j reads step s-1's output hidden
state, attends to the target-fed rows up to j and its own earlier steps of row j, and predicts the main model's
distribution s positions further. The MTP layer sees the main model's final hidden state and is chained the same
way during evaluation. Called from train_default_model.py (subcommands train-mtp and train-eagle3); see its
docstring. Deterministic given --seed on one thread count (torch.use_deterministic_algorithms).
"""
from __future__ import annotations

import copy
import bz2
import json
import math
import os
import shutil
import tempfile
import time

import numpy as np


def log(*args):
    print(*args, flush=True)


def load_main(model_dir, threads):
    """The shipped main model in float32, frozen, unpacked from model.safetensors.bz2 into a temporary folder."""
    import torch
    from transformers import DeepseekV3ForCausalLM

    torch.set_num_threads(threads)
    tmp = tempfile.mkdtemp(prefix="sotu-main-")
    for f in ("config.json", "generation_config.json"):
        shutil.copy(os.path.join(model_dir, f), tmp)
    cfg = json.load(open(os.path.join(tmp, "config.json")))
    cfg["num_nextn_predict_layers"] = 0  # the main model alone, whatever the shipped config says
    json.dump(cfg, open(os.path.join(tmp, "config.json"), "w"))
    src = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(src + ".bz2"):
        with bz2.open(src + ".bz2", "rb") as a, open(os.path.join(tmp, "model.safetensors"), "wb") as b:
            shutil.copyfileobj(a, b)
    else:
        shutil.copy(src, tmp)
    main = DeepseekV3ForCausalLM.from_pretrained(tmp, dtype=torch.float32)
    shutil.rmtree(tmp)
    main.eval()
    for p in main.parameters():
        p.requires_grad_(False)
    return main


def main_pass(main, x, layer_inputs):
    """One frozen forward: (final normed hidden [B,T,H], logits [B,T,V], the residual stream entering each layer in
    layer_inputs concatenated [B,T,3H]). Input L is the last layer's output before the final norm."""
    import torch

    captured = {}
    hooks = []
    wanted = set(layer_inputs)
    for i, layer in enumerate(main.model.layers):
        if i + 1 in wanted:
            hooks.append(layer.register_forward_hook(
                lambda _m, _inp, out, i=i: captured.__setitem__(i + 1, out[0] if isinstance(out, tuple) else out)))
    if 0 in wanted:
        hooks.append(main.model.embed_tokens.register_forward_hook(
            lambda _m, _inp, out: captured.__setitem__(0, out)))
    with torch.no_grad():
        out = main.model(input_ids=x)
        hidden = out.last_hidden_state
        logits = main.lm_head(hidden)
    for h in hooks:
        h.remove()
    aux = torch.cat([captured[l] for l in layer_inputs], dim=-1) if layer_inputs else None
    return hidden, logits, aux


def rms_norm(x, w, eps):
    import torch

    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def build_mtp(main_cfg):
    """enorm, hnorm, eh_proj and a one-layer DeepseekV3Model whose layer is shaped as the main model's last layer
    (its norm is shared_head.norm; its embedding is unused)."""
    import torch
    from transformers import DeepseekV3Model

    cfg = copy.deepcopy(main_cfg)
    cfg.num_hidden_layers = 1
    cfg.first_k_dense_replace = 0 if main_cfg.num_hidden_layers - 1 >= main_cfg.first_k_dense_replace else 1
    h = cfg.hidden_size

    class Mtp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enorm = torch.nn.Parameter(torch.ones(h))
            self.hnorm = torch.nn.Parameter(torch.ones(h))
            self.eh_proj = torch.nn.Linear(2 * h, h, bias=False)
            torch.nn.init.normal_(self.eh_proj.weight, std=cfg.initializer_range)
            self.block = DeepseekV3Model(cfg)
            # The training script's deterministic experts (sorted per expert, no index_add_).
            from deterministic_experts import sorted_loop_experts_forward
            from transformers.integrations.moe import ExpertsInterface

            ExpertsInterface.register("sorted_loop", sorted_loop_experts_forward)
            self.block.set_experts_implementation("sorted_loop")
            self.block.embed_tokens.weight.requires_grad_(False)
            self.eps = cfg.rms_norm_eps

        def forward(self, embeds, hidden):
            x = torch.cat([rms_norm(embeds, self.enorm, self.eps), rms_norm(hidden, self.hnorm, self.eps)], -1)
            return self.block(inputs_embeds=self.eh_proj(x)).last_hidden_state

    return Mtp()


def rope_tables(positions, head_dim, theta):
    import torch

    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    ang = positions.float()[:, None] * inv[None, :]
    emb = torch.cat([ang, ang], -1)
    return emb.cos(), emb.sin()


def rotate(x, cos, sin):
    import torch

    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def build_eagle3(hidden, heads, kv_heads, head_dim, inter, draft_vocab, eps, theta, std):
    import torch

    lin = lambda i, o: torch.nn.Linear(i, o, bias=False)

    class Eagle3(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lin(3 * hidden, hidden)
            self.input_layernorm = torch.nn.Parameter(torch.ones(hidden))
            self.hidden_norm = torch.nn.Parameter(torch.ones(hidden))
            self.post_attention_layernorm = torch.nn.Parameter(torch.ones(hidden))
            self.norm = torch.nn.Parameter(torch.ones(hidden))
            self.q_proj = lin(2 * hidden, heads * head_dim)
            self.k_proj = lin(2 * hidden, kv_heads * head_dim)
            self.v_proj = lin(2 * hidden, kv_heads * head_dim)
            self.o_proj = lin(heads * head_dim, hidden)
            self.gate_proj = lin(hidden, inter)
            self.up_proj = lin(hidden, inter)
            self.down_proj = lin(inter, hidden)
            self.lm_head = lin(hidden, draft_vocab)
            for m in self.modules():
                if isinstance(m, torch.nn.Linear):
                    torch.nn.init.normal_(m.weight, std=std)

        def qkv(self, embeds, h, positions):
            x = torch.cat([rms_norm(embeds, self.input_layernorm, eps), rms_norm(h, self.hidden_norm, eps)], -1)
            b, r, _ = x.shape
            q = self.q_proj(x).view(b, r, heads, head_dim).transpose(1, 2)
            k = self.k_proj(x).view(b, r, kv_heads, head_dim).transpose(1, 2)
            v = self.v_proj(x).view(b, r, kv_heads, head_dim).transpose(1, 2)
            cos, sin = rope_tables(positions, head_dim, theta)
            group = heads // kv_heads
            k = rotate(k, cos, sin).repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
            return rotate(q, cos, sin), k, v

        def finish(self, h, ctx):
            b, _, r, _ = ctx.shape
            h = h + self.o_proj(ctx.transpose(1, 2).reshape(b, r, heads * head_dim))
            y = rms_norm(h, self.post_attention_layernorm, eps)
            h = h + self.down_proj(torch.nn.functional.silu(self.gate_proj(y)) * self.up_proj(y))
            return h, self.lm_head(rms_norm(h, self.norm, eps))

        def steps(self, embed, tokens, aux, depth):
            """Training-time test over rows j = 0..R-1 (R = tokens' length - depth): step s reads token j + s,
            the target's aux features of position j (s = 1) or step s - 1's output, sits at position j + s - 1,
            attends to the step-1 keys of rows 0..j and to its own earlier steps of row j; returns each step's
            draft-vocabulary logits [B, R, Vd] (predicting token j + s + 1)."""
            rows = tokens.shape[1] - depth
            scale = 1.0 / math.sqrt(head_dim)
            pos = torch.arange(rows)
            causal = torch.ones(rows, rows, dtype=torch.bool).tril()
            h = self.fc(aux[:, :rows])
            keys, values, out = [], [], []
            for s in range(1, depth + 1):
                q, k, v = self.qkv(embed(tokens[:, s:s + rows]), h, pos + (s - 1))
                keys.append(k)
                values.append(v)
                first = (q @ keys[0].transpose(-1, -2)) * scale
                first = first.masked_fill(~causal, float("-inf"))
                own = [(q * kk).sum(-1, keepdim=True) * scale for kk in keys[1:]]
                w = torch.softmax(torch.cat([first] + own, -1), -1)
                ctx = w[..., :rows] @ values[0]
                for r, vv in enumerate(values[1:]):
                    ctx = ctx + w[..., rows + r:rows + r + 1] * vv
                h, logits = self.finish(h, ctx)
                out.append(logits)
            return out

    return Eagle3()


def windows(stream, seq_len, batch, seed):
    rng = np.random.default_rng(seed)
    while True:
        offset = int(rng.integers(0, seq_len))
        n = (len(stream) - offset - 1) // seq_len
        order = rng.permutation(n)
        for b in range(len(order) // batch):
            idx = order[b * batch:(b + 1) * batch]
            yield np.stack([stream[offset + i * seq_len: offset + i * seq_len + seq_len + 1] for i in idx])


def kl_loss(head_logits, target_logits):
    import torch.nn.functional as F

    return F.kl_div(F.log_softmax(head_logits.float(), -1).flatten(0, -2),
                    F.log_softmax(target_logits.float(), -1).flatten(0, -2), log_target=True, reduction="batchmean")


def lr_at(step, total, peak):
    warm = max(1, int(0.05 * total))
    if step < warm:
        return peak * (step + 1) / warm
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm))))


def optimizer(params, lr):
    import torch

    params = [p for p in params if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    rest = [p for p in params if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95))


def read_stream(data, split):
    return np.fromfile(os.path.join(data, f"{split}.bin"), dtype=np.uint16).astype(np.int64)


def greedy_accept(propose, main, stream, k, positions, context, seed):
    """Mean accept length (accepted drafts + 1 per verify pass) of greedy chains of k at evenly spaced held-out
    positions: the head proposes k tokens after `context` tokens, the main model's greedy tokens decide."""
    import torch

    starts = np.linspace(0, len(stream) - context - k - 2, positions).astype(np.int64)
    hist = [0] * (k + 1)
    for s in starts:
        x = torch.from_numpy(stream[s:s + context][None])
        draft = propose(x, k)
        full = torch.cat([x, torch.tensor([draft])], 1)
        with torch.no_grad():
            tgt = main(input_ids=full).logits[0, context - 1:].argmax(-1).tolist()
        a = 0
        while a < k and draft[a] == tgt[a]:
            a += 1
        hist[a] += 1
    mean = sum(i * c for i, c in enumerate(hist)) / len(starts)
    return 1 + mean, hist


def cmd_train_mtp(args):
    import torch

    t0 = time.time()
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    main = load_main(args.model, args.threads)
    cfg = main.config
    mtp = build_mtp(cfg)
    train, held = read_stream(args.data, "train"), read_stream(args.data, "validation")
    opt = optimizer(mtp.parameters(), args.lr)
    gates = [m for m in mtp.modules() if hasattr(m, "e_score_correction_bias")]
    for g in gates:
        g.register_forward_hook(lambda m, _inp, out: setattr(
            m, "_loads", torch.bincount(out[2].reshape(-1), minlength=m.e_score_correction_bias.numel()).float()))
    history = []
    batches = windows(train, args.seq_len, args.batch_size, args.seed)
    embed = main.model.embed_tokens
    mtp.train()
    for step in range(args.steps):
        x = torch.from_numpy(next(batches))
        hidden, logits, _ = main_pass(main, x[:, :-1], [])
        # Row j pairs token j + 1 with h_j and predicts the main model's distribution at j + 1.
        out = mtp(embed(x[:, 1:-1]), hidden[:, :-1])
        loss = kl_loss(main.lm_head(out), logits[:, 1:])
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(mtp.parameters(), 1.0)
        opt.step()
        balance(gates, mtp, args, step)
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            history.append({"step": step + 1, "kl": loss.item(), "elapsed_s": time.time() - t0})
            log(f"[mtp] step {step + 1}/{args.steps} kl {loss.item():.4f} t {time.time() - t0:.0f}s")
    mtp.eval()

    def propose(x, k):
        with torch.no_grad():
            hidden, _, _ = main_pass(main, x, [])
            toks, hs, draft = x[:, 1:], hidden[:, :-1], []
            for _ in range(k):
                out = mtp(embed(toks), hs)
                nxt = int(main.lm_head(out[:, -1]).argmax())
                draft.append(nxt)
                # Chain: the next row pairs the drafted token with the layer's own output hidden state.
                toks = torch.cat([toks, torch.tensor([[nxt]])], 1)
                hs = torch.cat([hs, out[:, -1:]], 1)
            return draft

    accept, hist = greedy_accept(propose, main, read_stream(args.data, "test"), args.eval_k, args.eval_positions,
                                 args.eval_context, args.seed)
    log(f"[mtp] held-out greedy accept length with k={args.eval_k}: {accept:.3f} {hist}")
    save_mtp(mtp, cfg, args, {"history": history, "accept_length": accept, "accept_histogram": hist,
                              "wall_time_s": time.time() - t0})


def balance(gates, model, args, step):
    """Auxiliary-loss-free load balancing as in the main training: bias += gamma * sign(mean load - load)."""
    import torch

    for g in gates:
        loads = getattr(g, "_loads", None)
        if loads is None:
            continue
        with torch.no_grad():
            g.e_score_correction_bias += args.bias_gamma * lr_at(step, args.steps, args.lr) / args.lr * torch.sign(
                loads.mean() - loads)
        g._loads = None


def save_mtp(mtp, cfg, args, log_record):
    """Adds the layer to the model directory as model.layers.<L>.* in model.safetensors and sets
    num_nextn_predict_layers to 1 in config.json."""
    import torch
    from safetensors.torch import load_file, save_file

    L = cfg.num_hidden_layers
    p = f"model.layers.{L}."
    tensors = {}
    for name, t in mtp.block.layers[0].state_dict().items():
        tensors[p + name] = t
    tensors[p + "enorm.weight"] = mtp.enorm.detach()
    tensors[p + "hnorm.weight"] = mtp.hnorm.detach()
    tensors[p + "eh_proj.weight"] = mtp.eh_proj.weight.detach()
    tensors[p + "shared_head.norm.weight"] = mtp.block.norm.weight.detach()
    out = {}
    for name, t in tensors.items():
        if ".experts.gate_up_proj" in name or ".experts.down_proj" in name:
            continue
        out[name] = t.float() if name.endswith("e_score_correction_bias") else t.to(torch.bfloat16)
    # Experts one tensor per projection, as DeepSeek-V3 and the main model store them.
    experts = mtp.block.layers[0].mlp.experts
    inter = experts.down_proj.shape[-1]
    for e in range(experts.gate_up_proj.shape[0]):
        gu = experts.gate_up_proj[e].detach()
        out[f"{p}mlp.experts.{e}.gate_proj.weight"] = gu[:inter].to(torch.bfloat16).contiguous()
        out[f"{p}mlp.experts.{e}.up_proj.weight"] = gu[inter:].to(torch.bfloat16).contiguous()
        out[f"{p}mlp.experts.{e}.down_proj.weight"] = experts.down_proj[e].detach().to(torch.bfloat16).contiguous()
    os.makedirs(args.out, exist_ok=True)
    weights = os.path.join(args.out, "model.safetensors")
    src = os.path.join(args.model, "model.safetensors")
    if os.path.exists(src + ".bz2"):
        with bz2.open(src + ".bz2", "rb") as a, open(weights + ".main", "wb") as b:
            shutil.copyfileobj(a, b)
        base = load_file(weights + ".main")
        os.remove(weights + ".main")
    else:
        base = load_file(src)
    base = {k: v for k, v in base.items() if not k.startswith(p)}
    base.update({k: v.contiguous() for k, v in out.items()})
    save_file(base, weights, metadata={"format": "pt"})
    with open(weights, "rb") as a, bz2.BZ2File(weights + ".bz2", "wb", compresslevel=9) as b:
        shutil.copyfileobj(a, b)
    cfg_path = os.path.join(args.out, "config.json")
    if os.path.abspath(args.out) != os.path.abspath(args.model):
        shutil.copy(os.path.join(args.model, "config.json"), cfg_path)
    c = json.load(open(cfg_path))
    c["num_nextn_predict_layers"] = 1
    with open(cfg_path, "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "mtp_training_log.json"), "w") as f:
        json.dump({"args": vars(args) | {"fn": None}, **log_record}, f, indent=1)
    log(f"[mtp] wrote {len(out)} tensors as layer {L} into {weights}(.bz2)")


def cmd_train_eagle3(args):
    import torch
    from safetensors.torch import save_file

    t0 = time.time()
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    main = load_main(args.model, args.threads)
    cfg = main.config
    L = cfg.num_hidden_layers
    aux_ids = [int(v) for v in args.aux_layer_ids.split(",")]
    inputs = [i + 1 for i in aux_ids]
    train = read_stream(args.data, "train")
    counts = np.bincount(train, minlength=cfg.vocab_size)
    hot = np.sort(np.argsort(-counts, kind="stable")[:args.draft_vocab_size])
    coverage = counts[hot].sum() / counts.sum()
    log(f"[eagle3] draft vocabulary: {len(hot)} tokens covering {coverage:.1%} of the training tokens")
    hot_t = torch.from_numpy(hot)
    head = build_eagle3(cfg.hidden_size, args.heads, args.kv_heads, cfg.hidden_size // args.heads,
                        args.intermediate_size, len(hot), cfg.rms_norm_eps, 10000.0, 0.02)
    opt = optimizer(head.parameters(), args.lr)
    embed = main.model.embed_tokens
    batches = windows(train, args.seq_len, args.batch_size, args.seed)
    history = []
    weights = [0.8 ** s for s in range(args.depth)]
    head.train()
    for step in range(args.steps):
        x = torch.from_numpy(next(batches))
        _, logits, aux = main_pass(main, x[:, :-1], inputs)
        outs = head.steps(embed, x[:, :-1], aux, args.depth)
        rows = outs[0].shape[1]
        loss = 0
        for s, o in enumerate(outs, start=1):
            # Step s of row j predicts the main model's distribution at position j + s, over the draft vocabulary.
            loss = loss + weights[s - 1] * kl_loss(o, logits[:, s:s + rows][..., hot_t])
        loss = loss / sum(weights)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            history.append({"step": step + 1, "kl": loss.item(), "elapsed_s": time.time() - t0})
            log(f"[eagle3] step {step + 1}/{args.steps} kl {loss.item():.4f} t {time.time() - t0:.0f}s")
    head.eval()

    def propose(x, k):
        with torch.no_grad():
            _, _, aux = main_pass(main, x, inputs)
            return chain_eagle3(head, embed, x, aux, k, hot)

    accept, hist = greedy_accept(propose, main, read_stream(args.data, "test"), args.eval_k, args.eval_positions,
                                 args.eval_context, args.seed)
    log(f"[eagle3] held-out greedy accept length with k={args.eval_k}: {accept:.3f} {hist}")
    os.makedirs(args.out, exist_ok=True)
    d2t = torch.from_numpy(hot - np.arange(len(hot))).long()
    t2d = torch.zeros(cfg.vocab_size, dtype=torch.bool)
    t2d[hot_t] = True
    m = "midlayer."
    tensors = {
        "fc.weight": head.fc.weight, m + "input_layernorm.weight": head.input_layernorm,
        m + "hidden_norm.weight": head.hidden_norm, m + "self_attn.q_proj.weight": head.q_proj.weight,
        m + "self_attn.k_proj.weight": head.k_proj.weight, m + "self_attn.v_proj.weight": head.v_proj.weight,
        m + "self_attn.o_proj.weight": head.o_proj.weight,
        m + "post_attention_layernorm.weight": head.post_attention_layernorm,
        m + "mlp.gate_proj.weight": head.gate_proj.weight, m + "mlp.up_proj.weight": head.up_proj.weight,
        m + "mlp.down_proj.weight": head.down_proj.weight, "norm.weight": head.norm,
        "lm_head.weight": head.lm_head.weight,
    }
    out = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in tensors.items()}
    out["d2t"], out["t2d"] = d2t, t2d
    path = os.path.join(args.out, "model.safetensors")
    save_file(out, path, metadata={"format": "pt"})
    with open(path, "rb") as a, bz2.BZ2File(path + ".bz2", "wb", compresslevel=9) as b:
        shutil.copyfileobj(a, b)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": cfg.hidden_size,
        "intermediate_size": args.intermediate_size, "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads, "head_dim": cfg.hidden_size // args.heads, "num_hidden_layers": 1,
        "hidden_act": "silu", "rms_norm_eps": cfg.rms_norm_eps, "rope_theta": 10000.0,
        "max_position_embeddings": cfg.max_position_embeddings, "vocab_size": cfg.vocab_size,
        "draft_vocab_size": len(hot), "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": aux_ids},
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "training_log.json"), "w") as f:
        json.dump({"args": vars(args) | {"fn": None}, "draft_vocab_coverage": coverage, "history": history,
                   "accept_length": accept, "accept_histogram": hist, "wall_time_s": time.time() - t0}, f, indent=1)
    log(f"[eagle3] wrote {path}(.bz2) and config.json")


def chain_eagle3(head, embed, x, aux, k, hot):
    """Greedy chain of k draft tokens after context x, as the engine runs it: rows 0..n-2 read the target's aux
    features of positions 0..n-2 with tokens 1..n-1; each further row reads the drafted token and the previous
    row's output hidden state, attending to every earlier row."""
    import torch

    n = x.shape[1]
    h = head.fc(aux[:, :n - 1])
    q, kk, vv = head.qkv(embed(x[:, 1:]), h, torch.arange(n - 1))
    keys, values = kk, vv
    scale = 1.0 / math.sqrt(q.shape[-1])
    causal = torch.ones(n - 1, n - 1, dtype=torch.bool).tril()
    w = torch.softmax(((q @ keys.transpose(-1, -2)) * scale).masked_fill(~causal, float("-inf")), -1)
    hs, logits = head.finish(h, w @ values)
    draft = []
    last_h, last_logits = hs[:, -1:], logits[:, -1]
    for i in range(k):
        tok = int(hot[int(last_logits.argmax())])
        draft.append(tok)
        if i + 1 == k:
            break
        q, kk, vv = head.qkv(embed(torch.tensor([[tok]])), last_h, torch.tensor([n - 1 + i]))
        keys = torch.cat([keys, kk], 2)
        values = torch.cat([values, vv], 2)
        w = torch.softmax((q @ keys.transpose(-1, -2)) * scale, -1)
        last_h, lg = head.finish(last_h, w @ values)
        last_logits = lg[:, -1]
    return draft


def add_parsers(sub):
    m = sub.add_parser("train-mtp", help="train an MTP layer for the shipped main model (CPU)")
    e = sub.add_parser("train-eagle3", help="train an EAGLE-3 head for the shipped main model (CPU)")
    for p in (m, e):
        p.add_argument("--data", default=".cache/sotu-data")
        p.add_argument("--model", default="models/sotu-moe", help="the main model (its weights stay frozen)")
        p.add_argument("--seed", type=int, default=1790)
        p.add_argument("--threads", type=int, default=2)
        p.add_argument("--seq-len", type=int, default=256)
        p.add_argument("--batch-size", type=int, default=8)
        p.add_argument("--lr", type=float, default=2e-3)
        p.add_argument("--log-every", type=int, default=10)
        p.add_argument("--eval-k", type=int, default=3, help="draft length of the held-out acceptance check")
        p.add_argument("--eval-positions", type=int, default=256)
        p.add_argument("--eval-context", type=int, default=256)
    m.add_argument("--out", default="models/sotu-moe", help="model directory the layer is added to")
    m.add_argument("--steps", type=int, default=300)
    m.add_argument("--bias-gamma", type=float, default=1e-2)
    m.set_defaults(fn=cmd_train_mtp)
    e.add_argument("--out", default="models/sotu-moe/eagle3")
    e.add_argument("--steps", type=int, default=300)
    e.add_argument("--depth", type=int, default=3, help="chained steps of the training-time test")
    e.add_argument("--aux-layer-ids", default="1,3,5", help="main layers whose outputs the head reads")
    e.add_argument("--draft-vocab-size", type=int, default=1024)
    e.add_argument("--heads", type=int, default=4)
    e.add_argument("--kv-heads", type=int, default=2)
    e.add_argument("--intermediate-size", type=int, default=256)
    e.set_defaults(fn=cmd_train_eagle3)
