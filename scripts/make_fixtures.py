#!/usr/bin/env python3
"""Build the golden fixtures in fixtures/golden/: tiny random-weight MoE models saved by transformers,
with reference logits and greedy continuations computed by transformers in float32.

Usage (from the repository root, with the Python reference environment):
    python scripts/make_fixtures.py            # (re)generate every fixture, then verify
    python scripts/make_fixtures.py --verify   # only check the committed fixtures against transformers
    python scripts/make_fixtures.py --only qwen3_moe_basic

Everything is deterministic: fixed seeds, CPU, float32, eager attention and eager experts.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import io
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

import transformers
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig
from transformers.cache_utils import DynamicCache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "fixtures", "golden")

VOCAB = 320
BOS, EOS = 0, 1
SPECIALS = ["<|bos|>", "<|eos|>"]

# Training text for the tiny byte-level BPE tokenizer (written for this project).
CORPUS = """\
The ringmaster stands in the middle of the ring and calls each act in turn. The acrobats climb,
the jugglers throw, and the clowns wait for their cue. Every act has a place in the programme, and
the programme has a place for every act. When an act is ready the ringmaster calls it; when it is
done the next one begins. Nobody waits longer than they must, and nobody goes on before the ring is
clear.

A mixture of experts works in much the same way. A router looks at each token and picks a few
experts to handle it. The experts are small feed-forward networks; each one sees only the tokens
that were sent to it. The outputs are weighted by the router scores and added together. A shared
expert sees every token, and its output is added as well. The router is cheap, the experts are
many, and only a few of them run for any one token.

Attention lets each position look back at the positions before it. The query of one position is
compared with the keys of all earlier positions; the scores are scaled, masked, and turned into
weights by a softmax. The weighted sum of the values is the output. Latent attention compresses the
keys and values into a small latent vector per position, so the cache stays small, and expands them
again when they are needed.

Rotary position embeddings turn pairs of dimensions by an angle that grows with the position. Low
frequencies turn slowly and high frequencies turn fast. To stretch a model to longer contexts, the
slow frequencies are divided by a factor while the fast ones are left alone, with a smooth ramp in
between, and the attention scores are scaled a little to keep their spread the same.

Numbers are stored as thirty-two bit floats, or as sixteen bit halves and brain floats to save
memory. The reference computes in thirty-two bits. Two implementations agree when their outputs
differ by less than one part in ten thousand. A test that checks this on a tiny model catches wrong
signs, swapped halves, missing norms, bad scales, and experts picked in the wrong order.

Tensor parallelism splits every matrix across devices and adds the partial results together. Expert
parallelism places different experts on different devices and sends each token to the device that
holds its experts. Both must give the same answer as one device working alone, up to rounding.

one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 32 64 128 256 512 1024 2048 4096 8192
the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.
"""

TEXT_PROMPT = "The router picks a few experts for each token, and the ringmaster calls the next act."


# --------------------------------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------------------------------

COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    rms_norm_eps=1e-6,
    max_position_embeddings=256,
    bos_token_id=BOS,
    eos_token_id=EOS,
    pad_token_id=None,
    hidden_act="silu",
    initializer_range=0.1,
)



def open_reference(path, mode="rt"):
    """Reference outputs are stored gzip-compressed (reference.json.gz), with no timestamp, so a
    rerun that records the same values writes the same bytes."""
    if "w" in mode:
        return io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8")
    return gzip.open(path, mode, encoding="utf-8")

def v2(**kw):
    base = dict(COMMON, model_type="deepseek_v2", num_attention_heads=8, num_key_value_heads=8,
                intermediate_size=32, moe_intermediate_size=8, n_routed_experts=8, num_experts_per_tok=2,
                kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8)
    base.update(kw)
    return base


def v3(**kw):
    base = dict(COMMON, model_type="deepseek_v3", num_attention_heads=8, num_key_value_heads=8,
                intermediate_size=32, moe_intermediate_size=8, n_routed_experts=8, num_experts_per_tok=2,
                kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8,
                num_nextn_predict_layers=0)
    base.update(kw)
    return base


def dsa(model_type, **kw):
    """DeepSeek Sparse Attention (deepseek_v32, glm_moe_dsa): MLA with q-LoRA plus the lightning indexer;
    index_topk far below the prompt length, so most queries attend to a strict subset of the positions."""
    base = dict(COMMON, model_type=model_type, num_attention_heads=8, num_key_value_heads=8,
                intermediate_size=32, moe_intermediate_size=8, n_routed_experts=8, num_experts_per_tok=2,
                q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8,
                index_n_heads=8, index_head_dim=16, index_topk=8, num_nextn_predict_layers=0)
    base.update(kw)
    return base


def qwen(**kw):
    base = dict(COMMON, model_type="qwen3_moe", num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                intermediate_size=32, moe_intermediate_size=8, num_experts=8, num_experts_per_tok=2)
    base.update(kw)
    return base


VARIANTS = [
    dict(
        name="deepseek_v2_basic",
        seed=101,
        about="MLA without q-LoRA; softmax greedy top-2 of 8; one dense layer then one MoE layer; 1 shared "
              "expert; no RoPE scaling; norm_topk_prob false; routed_scaling_factor 1.",
        config=v2(num_hidden_layers=2, q_lora_rank=None, first_k_dense_replace=1, n_shared_experts=1,
                  topk_method="greedy", norm_topk_prob=False, routed_scaling_factor=1.0,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="deepseek_v2_qlora_yarn_group",
        seed=102,
        about="MLA with q-LoRA; YaRN factor 4 over original 64 positions with mscale 1.0 != mscale_all_dim "
              "0.707 (attention_factor != 1 and softmax-scale correction), written in the OLD spelling "
              "(rope_scaling with 'type' + top-level rope_theta); group_limited_greedy (4 groups, 2 kept), "
              "top-3; every layer MoE (first_k_dense_replace 0); 2 shared experts; routed_scaling_factor 2.5; "
              "4 heads, nope 16 / rope 8 / v 12, kv_lora 24, q_lora 24; prompt + generation run past position 64.",
        config=v2(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=24,
                  kv_lora_rank=24, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=12,
                  first_k_dense_replace=0, n_shared_experts=2, num_experts_per_tok=3,
                  topk_method="group_limited_greedy", n_group=4, topk_group=2, norm_topk_prob=False,
                  routed_scaling_factor=2.5, moe_layer_freq=1,
                  rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                   "mscale": 1.0, "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1,
                                   "rope_theta": 10000.0}),
        old_rope_spelling=True,
        prompt_len=32, new_tokens=40,
    ),
    dict(
        name="deepseek_v3_basic",
        seed=103,
        about="MLA with q-LoRA; sigmoid noaux_tc routing with random non-zero e_score_correction_bias, "
              "4 groups of 2 experts, 2 groups kept (group score = sum of top-2), top-2, norm_topk_prob true, "
              "routed_scaling_factor 2.5; first layer dense; 1 shared expert; rope_interleave true; q_lora 24, v 12.",
        config=v3(num_hidden_layers=3, q_lora_rank=24, v_head_dim=12, first_k_dense_replace=1,
                  n_shared_experts=1, n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5,
                  rope_interleave=True, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        score_bias=True,
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="deepseek_v3_yarn_nolora",
        seed=104,
        about="MLA without q-LoRA; YaRN in the transformers-5 spelling (rope_parameters) factor 4, "
              "original 64, mscale 0.8 / mscale_all_dim 1.0, beta_fast 16; attention_bias true (biases on "
              "kv_a_proj_with_mqa and o_proj); rope_interleave FALSE (rotate-half layout); sigmoid noaux_tc "
              "with bias, 2 groups of 4, 1 kept, top-3, norm_topk_prob false, routed_scaling_factor 1.5; "
              "nope 12 / rope 8 / v 8; 2 shared experts; rms_norm_eps 1e-2 (large on purpose: kv_a_layernorm "
              "must keep its fixed 1e-6, which is visible at this size).",
        config=v3(num_hidden_layers=2, q_lora_rank=None, qk_nope_head_dim=12, first_k_dense_replace=1,
                  rms_norm_eps=1e-2,
                  n_shared_experts=2, n_group=2, topk_group=1, num_experts_per_tok=3, norm_topk_prob=False,
                  routed_scaling_factor=1.5, attention_bias=True, rope_interleave=False,
                  rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                   "mscale": 0.8, "mscale_all_dim": 1.0, "beta_fast": 16, "beta_slow": 1,
                                   "rope_theta": 10000.0}),
        score_bias=True,
        prompt_len=24, new_tokens=48,
    ),
    dict(
        name="qwen3_moe_basic",
        seed=105,
        about="GQA 4 query heads / 2 kv heads, head_dim 16; per-head q_norm/k_norm; decoder_sparse_step 2 "
              "with mlp_only_layers [1], so only layer 3 of 4 is MoE; softmax top-2 of 8 with "
              "norm_topk_prob true; tied embeddings (no lm_head.weight in the file).",
        config=qwen(num_hidden_layers=4, decoder_sparse_step=2, mlp_only_layers=[1], norm_topk_prob=True,
                    tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="qwen3_moe_untied",
        seed=116,
        about="8 query heads / 2 kv heads (groups of 4) with head_dim 12 != hidden/heads; attention_bias true "
              "(q/k/v/o biases); rope_theta 1e6; every layer MoE (decoder_sparse_step 1); top-3 of 8 with "
              "norm_topk_prob false; untied lm_head.",
        config=qwen(num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, head_dim=12,
                    decoder_sparse_step=1, mlp_only_layers=[], num_experts_per_tok=3, norm_topk_prob=False,
                    attention_bias=True, tie_word_embeddings=False,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="deepseek_v3_bf16",
        seed=103,
        about="Same model and prompt as deepseek_v3_basic, weights rounded to and stored as bfloat16 "
              "(e_score_correction_bias stays float32, as in real DeepSeek-V3 checkpoints). The reference is "
              "computed in float32 from the rounded weights.",
        config="deepseek_v3_basic",
        score_bias=True,
        dtype=torch.bfloat16,
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="qwen3_moe_f16",
        seed=105,
        about="Same model and prompt as qwen3_moe_basic, weights rounded to and stored as float16. The "
              "reference is computed in float32 from the rounded weights.",
        config="qwen3_moe_basic",
        dtype=torch.float16,
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="deepseek_v2_sharded",
        seed=108,
        about="Saved as 2 safetensors shards + model.safetensors.index.json, weights stored as bfloat16 "
              "(reference in float32 from the rounded weights). DeepSeek-V2 with q-LoRA, "
              "mlp_bias true (biases on the dense MLP and shared experts, not on routed experts), "
              "greedy top-2, 2 shared experts, routed_scaling_factor 1.5, rope_theta 50000.",
        config=v2(num_hidden_layers=2, q_lora_rank=32, first_k_dense_replace=1, n_shared_experts=2,
                  topk_method="greedy", norm_topk_prob=False, routed_scaling_factor=1.5, mlp_bias=True,
                  rope_parameters={"rope_type": "default", "rope_theta": 50000.0}),
        shards=2,
        dtype=torch.bfloat16,
        prompt_len=24, new_tokens=24,
    ),
    dict(
        name="deepseek_v32_dsa",
        seed=121,
        about="DeepSeek-V3.2: DeepSeek-V3 MLA (q_lora 24) plus the lightning indexer (8 heads x 16 dims, "
              "rotary in halves on its first 8 dims, LayerNorm k_norm with bias) with index_topk 8, far "
              "below the 32-token prompt: every query past position 7 attends to 8 of its positions. "
              "Sigmoid noaux_tc routing with bias, 4 groups of 2, 2 kept, top-2; first layer dense.",
        config=dsa("deepseek_v32", num_hidden_layers=2, first_k_dense_replace=1, n_shared_experts=1,
                   n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        score_bias=True,
        prompt_len=32, new_tokens=24,
    ),
    dict(
        name="glm_moe_dsa_shared",
        seed=129,
        about="GLM-5: the DSA indexer with interleaved rotary (8 heads x 16 dims), index_topk 8 below the "
              "32-token prompt; indexer_types full / shared / full, so layer 1 has no indexer and reuses "
              "layer 0's selection; one group, top-2 of 8 with bias; first layer dense; v_head_dim 12.",
        config=dsa("glm_moe_dsa", num_hidden_layers=3, first_k_dense_replace=1, n_shared_experts=1,
                   n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5, v_head_dim=12,
                   indexer_types=["full", "shared", "full"],
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        score_bias=True,
        prompt_len=32, new_tokens=24,
    ),
]

DSA_TYPES = ("deepseek_v32", "glm_moe_dsa")


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------

def f32_json(x) -> str:
    """JSON for a float32 array: nested lists, each number in the shortest form that round-trips to the
    same float32."""
    a = np.asarray(x, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite value in reference output")
    if a.ndim == 1:
        return "[" + ",".join(np.format_float_positional(v, unique=True, trim="-") if 1e-4 <= abs(v) < 1e6
                              else np.format_float_scientific(v, unique=True, trim="-") for v in a) + "]"
    return "[" + ",\n".join(f32_json(r) for r in a) + "]"


def build_tokenizer(path_dir: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS], trainer=trainer)
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    assert tok.token_to_id(SPECIALS[0]) == BOS and tok.token_to_id(SPECIALS[1]) == EOS
    tok.save(os.path.join(path_dir, "tokenizer.json"))
    with open(os.path.join(path_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": SPECIALS[0],
                   "eos_token": SPECIALS[1], "add_bos_token": False, "add_eos_token": False,
                   "clean_up_tokenization_spaces": False, "model_max_length": 256}, f, indent=2)
        f.write("\n")
    return tok


def make_config(spec: dict):
    cfg = spec["config"]
    if isinstance(cfg, str):
        cfg = next(v for v in VARIANTS if v["name"] == cfg)["config"]
    cfg = copy.deepcopy(cfg)
    model_type = cfg.pop("model_type")
    return AutoConfig.for_model(model_type, **cfg)


def randomize(model, seed: int, std: float, score_bias: bool):
    """Deterministic re-initialisation: linear/embedding weights N(0, std) (untied lm_head 3*std), norm weights 1 + N(0, 0.2),
    biases N(0, 0.05), e_score_correction_bias N(0, 0.05) when requested (transformers zeroes it)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda t: t[0]):
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            elif name == "lm_head.weight":
                p.copy_(3 * std * torch.randn(p.shape, generator=g))  # larger logits, clearer argmax
            else:
                p.copy_(std * torch.randn(p.shape, generator=g))
        for name, b in sorted(model.named_buffers(), key=lambda t: t[0]):
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.05 * torch.randn(b.shape, generator=g) if score_bias else torch.zeros_like(b))


def load_f32(path: str, **kw):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager",
                                                experts_implementation="eager", **kw).eval()


@torch.no_grad()
def greedy(model, prompt: list[int], n: int):
    """Pure argmax decoding with the KV cache: no EOS stop, no EOS suppression."""
    cache = DynamicCache(config=model.config)
    ids = torch.tensor([prompt])
    out = model(input_ids=ids, past_key_values=cache, use_cache=True)
    logits = out.logits[0, -1]
    new, margins = [], []
    for step in range(n):
        top2 = torch.topk(logits, 2)
        margins.append(float(top2.values[0] - top2.values[1]))
        nxt = int(torch.argmax(logits))
        new.append(nxt)
        last_logits = logits
        if step + 1 < n:
            out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
            logits = out.logits[0, -1]
    return new, last_logits, min(margins)


def divisors(cfg) -> dict:
    degrees = (1, 2, 4, 8)
    heads = cfg.num_attention_heads
    inter = [cfg.intermediate_size, cfg.moe_intermediate_size]
    if cfg.model_type == "qwen3_moe":
        kv = cfg.num_key_value_heads
        tp = [d for d in degrees if heads % d == 0 and all(i % d == 0 for i in inter)
              and (kv % d == 0 or d % kv == 0)]
        experts = cfg.num_experts
    else:
        inter.append(cfg.moe_intermediate_size * cfg.n_shared_experts)
        tp = [d for d in degrees if heads % d == 0 and all(i % d == 0 for i in inter)]
        experts = cfg.n_routed_experts
    ep = [d for d in degrees if experts % d == 0]
    note = "tensor parallel degrees divide attention heads and all MLP intermediate sizes"
    if cfg.model_type == "qwen3_moe":
        note += "; kv heads are split when tp <= kv heads and replicated otherwise"
    return {"tp_degrees": tp, "ep_degrees": ep, "note": note}


# --------------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------------

def make_variant(spec: dict, tok):
    name = spec["name"]
    out_dir = os.path.join(OUT, name)
    print(f"== {name}", flush=True)
    torch.manual_seed(spec["seed"])
    cfg = make_config(spec)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", experts_implementation="eager")
    model = model.float().eval()
    randomize(model, spec["seed"], COMMON["initializer_range"], spec.get("score_bias", False))

    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    dtype = spec.get("dtype", torch.float32)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        # Re-load in the storage dtype (for bf16 this keeps e_score_correction_bias in float32), then save.
        stored = AutoModelForCausalLM.from_pretrained(tmp, dtype=dtype)
        total = sum(t.numel() * t.element_size() for t in stored.state_dict().values())
        shard = {"max_shard_size": int(total * 0.6)} if spec.get("shards") else {}
        stored.save_pretrained(out_dir, **shard)
    n_files = len([f for f in os.listdir(out_dir) if f.endswith(".safetensors")])
    assert n_files == spec.get("shards", 1), f"{name}: {n_files} safetensors files"
    gen = GenerationConfig(bos_token_id=BOS, eos_token_id=EOS, do_sample=False)
    gen.save_pretrained(out_dir)

    # config.json: record fixture facts; optionally rewrite RoPE in the pre-5 spelling.
    cfg_path = os.path.join(out_dir, "config.json")
    with open(cfg_path) as f:
        cj = json.load(f)
    if spec.get("old_rope_spelling"):
        rp = cj.pop("rope_parameters")
        cj["rope_theta"] = rp.pop("rope_theta")
        rp.pop("rope_type", None)
        rp["type"] = "yarn"
        cj["rope_scaling"] = rp
    cj["fixture_info"] = {"name": name, **divisors(stored.config)}
    with open(cfg_path, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
        f.write("\n")
    build_tokenizer(out_dir)

    # Reference: reload what is on disk in float32 (rounded weights for the bf16/f16 variants).
    ref_model = load_f32(out_dir)
    rng = np.random.default_rng(spec["seed"])
    prompt = [int(x) for x in rng.integers(2, VOCAB, size=spec["prompt_len"])]
    with torch.no_grad():
        logits = ref_model(input_ids=torch.tensor([prompt])).logits[0].float()
        if dtype == torch.float32:
            # The saved directory (config spelling included) must describe the model that was built.
            built = model(input_ids=torch.tensor([prompt])).logits[0]
            assert float((built - logits).abs().max()) < 1e-6, f"{name}: reload changed the model"
    new, last_logits, margin = greedy(ref_model, prompt, spec["new_tokens"])
    # Cross-check against generate(); with min_new_tokens = max_new_tokens, EOS is suppressed there, so
    # the two agree as long as EOS is never the argmax (asserted below).
    with torch.no_grad():
        gen_ids = ref_model.generate(torch.tensor([prompt]), do_sample=False, min_new_tokens=spec["new_tokens"],
                                     max_new_tokens=spec["new_tokens"], bos_token_id=BOS, eos_token_id=EOS)
    gen_new = gen_ids[0, len(prompt):].tolist()
    assert EOS not in new, f"{name}: EOS is an argmax; semantics of ignore_eos would differ"
    assert gen_new == new, f"{name}: generate() {gen_new} != manual greedy {new}"
    assert torch.equal(torch.argmax(logits[-1]), torch.tensor(new[0]))

    dsa_lines = []
    if ref_model.config.model_type in DSA_TYPES:
        dsa_lines = dsa_facts(name, out_dir, ref_model, prompt, spec["new_tokens"], new)

    text_ids = tok.encode(TEXT_PROMPT).ids
    ref_path = os.path.join(out_dir, "reference.json.gz")
    with open_reference(ref_path, "w") as f:
        f.write("{\n")
        f.write(f'"name": {json.dumps(name)},\n')
        f.write(f'"transformers_version": {json.dumps(transformers.__version__)},\n')
        f.write(f'"torch_version": {json.dumps(torch.__version__)},\n')
        f.write(f'"stored_dtype": {json.dumps(str(dtype).replace("torch.", ""))},\n')
        f.write('"compute_dtype": "float32",\n')
        f.write(f'"about": {json.dumps(spec["about"])},\n')
        f.write(f'"prompt_ids": {json.dumps(prompt)},\n')
        f.write(f'"greedy_ids": {json.dumps(new)},\n')
        f.write(f'"greedy_min_top2_margin": {margin:.6g},\n')
        f.write(f'"text_prompt": {json.dumps(TEXT_PROMPT)},\n')
        f.write(f'"text_prompt_ids": {json.dumps(text_ids)},\n')
        for line in dsa_lines:
            f.write(line)
        f.write(f'"logits_shape": {json.dumps(list(logits.shape))},\n')
        f.write(f'"greedy_logits_last": {f32_json(last_logits.numpy())},\n')
        f.write(f'"logits": {f32_json(logits.numpy())}\n')
        f.write("}\n")
    print(f"   greedy {new[:8]}... min top-2 margin {margin:.4g}", flush=True)


@torch.no_grad()
def selection_margin(model, prompt: list[int], n: int) -> float:
    """Smallest gap, over every indexer call of a prefill plus greedy decode, between the index_topk-th
    best and the next index score among a query's causal positions (how far the selection is from a tie;
    0 would make it depend on the top-k implementation)."""
    margins = []
    originals = {}
    for mod in model.modules():
        if type(mod).__name__.endswith("Indexer"):
            originals[mod] = mod.forward

            def scored(*args, _mod=mod, **kw):
                # Recompute the scores the way forward does, then select with the original.
                hs, q_resid, pos_emb, mask = args[0], args[1], args[2], args[3]
                idx = originals[_mod](*args, **kw)
                keys = kw["past_key_values"].layers[_mod.layer_idx].indexer_keys
                b, s_len, _ = hs.shape
                q = _mod.wq_b(q_resid).view(b, s_len, _mod.n_heads, _mod.head_dim)
                cos, sin = pos_emb
                r = _mod.qk_rope_head_dim
                q_rot, q_pass = torch.split(q, [r, _mod.head_dim - r], dim=-1)
                # Rotate q as the model does (keys come rotated from the cache): reuse a dummy k.
                dummy = torch.zeros_like(q_rot[:, :, :1])
                if type(_mod).__name__.startswith("Glm"):
                    from transformers.models.deepseek_v3.modeling_deepseek_v3 import apply_rotary_pos_emb_interleave as rot
                else:
                    from transformers.models.deepseek_v3.modeling_deepseek_v3 import apply_rotary_pos_emb as rot
                q_rot, _ = rot(q_rot, dummy, cos, sin, unsqueeze_dim=2)
                q = torch.cat([q_rot, q_pass], dim=-1)
                sc = F.relu(torch.matmul(q.float(), keys.transpose(-1, -2).float().unsqueeze(1)) * _mod.softmax_scale)
                w = _mod.weights_proj(hs).float() * (_mod.n_heads ** -0.5)
                scores = torch.matmul(w.unsqueeze(-2), sc).squeeze(-2)[0]  # [S, T]
                past = keys.shape[1] - s_len
                for i in range(s_len):
                    causal = scores[i, : past + i + 1]
                    if causal.numel() > _mod.index_topk:
                        top = torch.sort(causal, descending=True).values
                        margins.append(float(top[_mod.index_topk - 1] - top[_mod.index_topk]))
                return idx

            mod.forward = scored
    try:
        greedy(model, prompt, n)
    finally:
        for mod, fwd in originals.items():
            mod.forward = fwd
    return min(margins)


def dsa_facts(name: str, out_dir: str, model, prompt: list[int], n: int, new: list[int]) -> list[str]:
    """Checks that the fixture's attention is really sparse (the greedy continuation under dense
    attention, index_topk >= every context, is different, or at least its logits move far) and that no
    selection is near a tie; returns the reference.json lines that record it."""
    dense = load_f32(out_dir, index_topk=10**6)
    dense_new, _, _ = greedy(dense, prompt, n)
    with torch.no_grad():
        dl = dense(input_ids=torch.tensor([prompt])).logits[0]
        sl = model(input_ids=torch.tensor([prompt])).logits[0]
    moved = float((dl - sl).abs().max())
    margin = selection_margin(model, prompt, n)
    assert margin > 1e-4, f"{name}: an indexer selection is within {margin:.3g} of a tie; change the seed"
    assert moved > 1e-2, f"{name}: dense attention moves the logits by only {moved:.3g}"
    print(f"   dense greedy {'DIFFERS' if dense_new != new else 'same'}; dense moves logits by {moved:.3g}; "
          f"min selection margin {margin:.3g}", flush=True)
    return [f'"dense_greedy_ids": {json.dumps(dense_new)},\n',
            f'"greedy_differs_from_dense": {json.dumps(dense_new != new)},\n',
            f'"dense_logits_max_abs_diff": {moved:.6g},\n',
            f'"index_selection_min_margin": {margin:.6g},\n']


# --------------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------------

def verify_variant(name: str) -> bool:
    d = os.path.join(OUT, name)
    with open_reference(os.path.join(d, "reference.json.gz")) as f:
        ref = json.load(f)
    ok = True
    want = torch.tensor(ref["logits"], dtype=torch.float32)
    want_last = torch.tensor(ref["greedy_logits_last"], dtype=torch.float32)
    # 1) eager/eager float32 reload: must reproduce the stored values (bit-for-bit in practice)
    # 2) default kernels (sdpa attention, grouped_mm experts): must agree within 1e-4
    for label, model in (("eager", load_f32(d)),
                         ("default", AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval())):
        with torch.no_grad():
            got = model(input_ids=torch.tensor([ref["prompt_ids"]])).logits[0]
        diff = float((got - want).abs().max())
        new, last, _ = greedy(model, ref["prompt_ids"], len(ref["greedy_ids"]))
        diff_last = float((last - want_last).abs().max())
        good = diff <= 1e-4 and diff_last <= 1e-4 and new == ref["greedy_ids"]
        ok &= good
        print(f"   {name:32s} {label:8s} max|dlogits| {diff:.3g}  max|dlast| {diff_last:.3g}  "
              f"greedy {'same' if new == ref['greedy_ids'] else 'DIFFERENT'}  {'OK' if good else 'FAIL'}")
    from transformers import AutoTokenizer
    tk = AutoTokenizer.from_pretrained(d)
    tids = tk(ref["text_prompt"], add_special_tokens=False)["input_ids"]
    if tids != ref["text_prompt_ids"] or tk.decode(tids) != ref["text_prompt"]:
        print(f"   {name}: tokenizer round trip FAILED")
        ok = False
    return ok


@torch.no_grad()
def sensitivity(name: str):
    """Show that the features a fixture claims to exercise matter: re-run the prompt with one feature
    changed and report how far the logits move (they must move far more than the 1e-4 tolerance)."""
    d = os.path.join(OUT, name)
    with open_reference(os.path.join(d, "reference.json.gz")) as f:
        ref = json.load(f)
    want = torch.tensor(ref["logits"])
    cfg = AutoConfig.from_pretrained(d)
    mt = cfg.model_type
    rope = dict(cfg.rope_parameters)
    muts = {}
    if mt in ("deepseek_v2", "deepseek_v3"):
        if cfg.routed_scaling_factor != 1.0:
            muts["routed_scaling_factor=1"] = dict(routed_scaling_factor=1.0)
        muts["kv_a_layernorm ignored"] = "kv_norm"
        if cfg.rms_norm_eps != 1e-6:
            muts["kv_a_layernorm with config eps"] = "kv_eps"
    if mt == "deepseek_v2" and cfg.topk_method == "group_limited_greedy":
        muts["no group limit (greedy)"] = dict(topk_method="greedy")
    if mt == "deepseek_v3":
        muts["all groups kept"] = dict(topk_group=cfg.n_group)
        muts["norm_topk_prob flipped"] = dict(norm_topk_prob=not cfg.norm_topk_prob)
        muts["rope_interleave flipped"] = dict(rope_interleave=not cfg.rope_interleave)
        muts["e_score_correction_bias = 0"] = "zero_bias"
    if mt == "qwen3_moe":
        muts["norm_topk_prob flipped"] = dict(norm_topk_prob=not cfg.norm_topk_prob)
        muts["q_norm/k_norm ignored"] = "qk_norm"
    if rope.get("rope_type") == "yarn":
        muts["YaRN -> plain RoPE"] = dict(rope_parameters={"rope_type": "default", "rope_theta": rope["rope_theta"]})
        muts["YaRN mscale_all_dim=0"] = dict(rope_parameters={**rope, "mscale_all_dim": 0})
    for label, m in muts.items():
        model = load_f32(d, **(m if isinstance(m, dict) else {}))
        for mod_name, mod in model.named_modules():
            if m == "zero_bias" and hasattr(mod, "e_score_correction_bias"):
                mod.e_score_correction_bias.zero_()
            if m == "kv_norm" and mod_name.endswith("kv_a_layernorm"):
                mod.weight.fill_(1.0)
            if m == "kv_eps" and mod_name.endswith("kv_a_layernorm"):
                mod.variance_epsilon = cfg.rms_norm_eps
            if m == "qk_norm" and (mod_name.endswith("q_norm") or mod_name.endswith("k_norm")):
                mod.weight.fill_(1.0)
        got = model(input_ids=torch.tensor([ref["prompt_ids"]])).logits[0]
        print(f"   {name:32s} {label:30s} max|dlogits| {float((got - want).abs().max()):.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify", action="store_true", help="only verify existing fixtures")
    ap.add_argument("--only", nargs="*", help="variant names")
    ap.add_argument("--sensitivity", action="store_true",
                    help="after verifying, show how much each exercised feature moves the logits")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    names = args.only or [v["name"] for v in VARIANTS]
    if not args.verify:
        os.makedirs(OUT, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            tok = build_tokenizer(tmp)
        for spec in VARIANTS:
            if spec["name"] in names:
                make_variant(spec, tok)
    print("== verify")
    ok = all([verify_variant(n) for n in names])
    if args.sensitivity:
        print("== sensitivity")
        for n in names:
            sensitivity(n)
    print("ALL OK" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
