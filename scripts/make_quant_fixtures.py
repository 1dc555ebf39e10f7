#!/usr/bin/env python3
"""Build the quantized fixtures in fixtures/quantized/: a tiny bf16 DeepSeek-V3 model (the source) and its
DeepSeek block-scaled FP8 and ModelOpt NVFP4 versions, each with transformers references.

The quantized checkpoints are written here, independently of Ringmaster, in the public formats:
  fp8    config.json quantization_config {quant_method fp8, fmt e4m3, activation_scheme dynamic,
         weight_block_size [128, 128]}; per linear `weight` F8_E4M3 [out, in] and `weight_scale_inv`
         F32 [ceil(out/128), ceil(in/128)].
  nvfp4  config.json quantization_config {quant_method modelopt, quant_algo NVFP4, config_groups, ignore}
         and hf_quant_config.json; per linear `weight` U8 [out, in/2] (element 2i in the low nibble),
         `weight_scale` F8_E4M3 [out, in/16], `weight_scale_2` and `input_scale` F32 scalars.
with the same arithmetic as `ringmaster model quantize` (all in float32; see its Quantizers class), so the
Java tests can check that the command reproduces these files byte for byte.

References: the weights are dequantized exactly as the formats define (FP8: W = e4m3 * scale_inv per
zero-padded 128x128 block, as DeepSeek's inference/fp8_cast_bf16.py does, but kept in float32 instead of
being rounded to bf16; NVFP4: W = e2m1 * (e4m3 weight_scale * weight_scale_2), the scale product first),
loaded into the transformers model of the source checkpoint, and run in float32 with eager kernels.
transformers' own FP8 loader is not used: it derives the block size from the scale shape, which is wrong for
matrices that end in a partial block.

Usage (from the repository root, with the Python reference environment of scripts/make_fixtures.py):
    python scripts/make_quant_fixtures.py            # (re)generate, then verify
    python scripts/make_quant_fixtures.py --verify   # only recompute the references and compare
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
from safetensors.torch import save_file

import transformers
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402

OUT = os.path.join(mf.REPO, "fixtures", "quantized")
SEED = 131
PROMPT_LEN = 12
NEW_TOKENS = 12
FP8_BLOCK = 128
NVFP4_GROUP = 16
PRODUCER_VERSION = "ringmaster"

# Sizes chosen so FP8 blocks end partially in both dimensions (dense intermediate 144 = 128 + 16) and every
# quantized input dimension is a multiple of the NVFP4 group (16).
SOURCE_CONFIG = dict(
    mf.COMMON, num_attention_heads=8, num_key_value_heads=8, num_hidden_layers=2, first_k_dense_replace=1,
    intermediate_size=144, moe_intermediate_size=16, n_routed_experts=8, num_experts_per_tok=2,
    n_shared_experts=1, n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5,
    q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8,
    num_nextn_predict_layers=0, rope_interleave=True, tie_word_embeddings=True,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0})

# name -> (format, exclude patterns as given to `ringmaster model quantize --exclude`)
VARIANTS = {
    "deepseek_v3_fp8": ("fp8", []),
    # GLM-5-style: attention and the dense layer stay bf16, the MoE layer's experts are NVFP4.
    "deepseek_v3_nvfp4": ("nvfp4", ["*self_attn*", "model.layers.0.mlp"]),
}


# --------------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------------

F32 = np.float32



def open_reference(path, mode="rt"):
    """Reference outputs are stored gzip-compressed (reference.json.gz), with no timestamp, so a
    rerun that records the same values writes the same bytes."""
    if "w" in mode:
        return io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8")
    return gzip.open(path, mode, encoding="utf-8")

def to_e4m3(x: np.ndarray) -> np.ndarray:
    """float32 -> e4m3fn codes (uint8), round to nearest even (PyTorch's cast)."""
    return torch.from_numpy(np.ascontiguousarray(x, dtype=F32)).to(torch.float8_e4m3fn).view(torch.uint8).numpy()


def from_e4m3(codes: np.ndarray) -> np.ndarray:
    return torch.from_numpy(np.ascontiguousarray(codes, dtype=np.uint8)).view(torch.float8_e4m3fn).float().numpy()


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=F32)


def to_e2m1(x: np.ndarray) -> np.ndarray:
    """float32 (already within +-6) -> e2m1 codes, ties to the even code; NaN -> 0; negatives that round
    to zero keep the sign (code 8)."""
    mag = np.abs(x)
    bounds = [(mag <= 0.25), (mag < 0.75), (mag <= 1.25), (mag < 1.75), (mag <= 2.5), (mag < 3.5), (mag <= 5.0),
              (mag > 5.0)]
    code = np.select(bounds, list(range(8)), default=0).astype(np.uint8)
    return np.where(x < 0, code | 8, code).astype(np.uint8)


def quantize_fp8_block(w: np.ndarray):
    rows, cols = w.shape
    br, bc = -(-rows // FP8_BLOCK), -(-cols // FP8_BLOCK)
    codes = np.zeros((rows, cols), dtype=np.uint8)
    scale_inv = np.zeros((br, bc), dtype=F32)
    for i in range(br):
        for j in range(bc):
            blk = w[i * FP8_BLOCK:(i + 1) * FP8_BLOCK, j * FP8_BLOCK:(j + 1) * FP8_BLOCK]
            amax = F32(np.max(np.abs(blk)))
            s = F32(1) if amax == 0 else F32(amax / F32(448))
            scale_inv[i, j] = s
            q = np.clip(blk / s, F32(-448), F32(448)).astype(F32)
            codes[i * FP8_BLOCK:(i + 1) * FP8_BLOCK, j * FP8_BLOCK:(j + 1) * FP8_BLOCK] = to_e4m3(q)
    return codes, scale_inv


def dequantize_fp8_block(codes: np.ndarray, scale_inv: np.ndarray) -> np.ndarray:
    rows, cols = codes.shape
    s = np.repeat(np.repeat(scale_inv, FP8_BLOCK, axis=0), FP8_BLOCK, axis=1)[:rows, :cols]
    return (from_e4m3(codes) * s).astype(F32)


def quantize_nvfp4(w: np.ndarray, amax: np.float32):
    rows, cols = w.shape
    groups = cols // NVFP4_GROUP
    if amax == 0:
        return (np.zeros((rows, cols // 2), np.uint8), np.zeros((rows, groups), np.uint8), F32(1))
    enc = F32(min(F32(F32(448 * 6) / amax), np.finfo(F32).max))
    dec = F32(F32(1) / enc)
    blocks = w.reshape(rows, groups, NVFP4_GROUP)
    gmax = np.max(np.abs(blocks), axis=-1)
    scale_codes = to_e4m3(np.minimum((gmax / F32(6)).astype(F32) * enc, F32(448)).astype(F32))
    with np.errstate(divide="ignore", invalid="ignore"):
        encode = (F32(1) / (from_e4m3(scale_codes) * dec)).astype(F32)
        x = np.clip((blocks * encode[..., None]).astype(F32), F32(-6), F32(6))
    codes = to_e2m1(x).reshape(rows, cols)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed, scale_codes, dec


def dequantize_nvfp4(packed: np.ndarray, scale_codes: np.ndarray, scale2: np.float32) -> np.ndarray:
    rows = packed.shape[0]
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(rows, -1)
    s = (from_e4m3(scale_codes) * F32(scale2)).astype(F32)
    return (E2M1[codes] * np.repeat(s, NVFP4_GROUP, axis=1)).astype(F32)


# --------------------------------------------------------------------------------------------------
# Which modules are quantized (as `ringmaster model quantize` decides)
# --------------------------------------------------------------------------------------------------

def glob_match(pattern: str, name: str) -> bool:
    import re
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, name) is not None


def excluded(module: str, patterns: list[str]) -> bool:
    for p in patterns:
        if p == module or module.startswith(p + "."):
            return True
        if ("*" in p or "?" in p) and glob_match(p, module):
            return True
    return False


def linear_modules(tensors: dict) -> list[str]:
    """2-D `.weight` tensors of the decoder that are linear layers (not norms, not the embedding)."""
    out = []
    for name, t in tensors.items():
        if name.endswith(".weight") and t.ndim == 2 and name != "model.embed_tokens.weight":
            out.append(name[: -len(".weight")])
    return sorted(out)


def always_kept(module: str) -> bool:
    return module == "lm_head" or module.endswith(".mlp.gate")


def load_source_tensors(src: str) -> dict:
    """The source weights as numpy (bf16 viewed as uint16 by safetensors.numpy -> widen)."""
    from safetensors import safe_open
    out = {}
    with safe_open(os.path.join(src, "model.safetensors"), framework="pt") as f:
        for k in f.keys():
            out[k] = f.get_tensor(k).float().numpy()
    return out


def quantize_dir(src: str, dst: str, fmt: str, patterns: list[str]):
    tensors = load_source_tensors(src)
    from safetensors import safe_open
    with safe_open(os.path.join(src, "model.safetensors"), framework="pt") as f:
        raw = {k: f.get_tensor(k) for k in f.keys()}
    modules = linear_modules(tensors)
    quantized = [m for m in modules if not always_kept(m) and not excluded(m, patterns)]
    kept = [m for m in modules if m not in quantized]
    out = {}
    for name, t in raw.items():
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        if module not in quantized:
            out[name] = t
            continue
        w = tensors[name]
        if fmt == "fp8":
            codes, scale_inv = quantize_fp8_block(w)
            out[name] = torch.from_numpy(codes).view(torch.float8_e4m3fn)
            out[module + ".weight_scale_inv"] = torch.from_numpy(scale_inv)
        else:
            amax = F32(np.max(np.abs(w)))
            for a, b in ((".gate_proj", ".up_proj"), (".up_proj", ".gate_proj")):
                if module.endswith(a) and module[: -len(a)] + b in quantized:
                    amax = max(amax, F32(np.max(np.abs(tensors[module[: -len(a)] + b + ".weight"]))))
            packed, scales, scale2 = quantize_nvfp4(w, amax)
            out[name] = torch.from_numpy(packed)
            out[module + ".weight_scale"] = torch.from_numpy(scales).view(torch.float8_e4m3fn)
            out[module + ".weight_scale_2"] = torch.tensor(float(scale2), dtype=torch.float32)
            out[module + ".input_scale"] = torch.tensor(1.0, dtype=torch.float32)
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    save_file(out, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
    for f in os.listdir(src):
        if f not in ("config.json", "model.safetensors", "reference.json.gz"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    if fmt == "fp8":
        q = {"activation_scheme": "dynamic", "fmt": "e4m3"}
        if patterns:
            q["modules_to_not_convert"] = [m for m in kept if not always_kept(m)]
        q.update({"quant_method": "fp8", "weight_block_size": [FP8_BLOCK, FP8_BLOCK]})
    else:
        group = {"dynamic": False, "num_bits": 4, "type": "float", "group_size": NVFP4_GROUP}
        q = {"config_groups": {"group_0": {"input_activations": dict(group), "weights": dict(group),
                                           "targets": ["Linear"]}},
             "ignore": kept, "quant_algo": "NVFP4",
             "producer": {"name": "modelopt", "version": PRODUCER_VERSION}, "quant_method": "modelopt"}
        hf = {"producer": {"name": "modelopt", "version": PRODUCER_VERSION},
              "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": NVFP4_GROUP,
                               "exclude_modules": kept}}
        with open(os.path.join(dst, "hf_quant_config.json"), "w") as f:
            json.dump(hf, f, indent=2)
            f.write("\n")
    cfg["quantization_config"] = q
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def dequantized_state(d: str) -> dict:
    """Every tensor of a quantized directory as float32 torch tensors, quantized linears dequantized."""
    from safetensors import safe_open
    with safe_open(os.path.join(d, "model.safetensors"), framework="pt") as f:
        raw = {k: f.get_tensor(k) for k in f.keys()}
    out = {}
    for name, t in raw.items():
        if not name.endswith(".weight"):
            continue
        module = name[: -len(".weight")]
        if t.dtype == torch.float8_e4m3fn:
            w = dequantize_fp8_block(t.view(torch.uint8).numpy(), raw[module + ".weight_scale_inv"].numpy())
        elif t.dtype == torch.uint8:
            w = dequantize_nvfp4(t.numpy(), raw[module + ".weight_scale"].view(torch.uint8).numpy(),
                                 F32(raw[module + ".weight_scale_2"].item()))
        else:
            continue
        out[name] = torch.from_numpy(w)
    return out


# --------------------------------------------------------------------------------------------------
# Fixtures and references
# --------------------------------------------------------------------------------------------------

def make_source(tok_dir: str):
    d = os.path.join(OUT, "deepseek_v3_source")
    torch.manual_seed(SEED)
    cfg = dict(SOURCE_CONFIG)
    cfg = AutoConfig.for_model("deepseek_v3", **cfg)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", experts_implementation="eager")
    model = model.float().eval()
    mf.randomize(model, SEED, mf.COMMON["initializer_range"], True)
    if os.path.isdir(d):
        shutil.rmtree(d)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        stored = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.bfloat16)
        stored.save_pretrained(d)
    GenerationConfig(bos_token_id=mf.BOS, eos_token_id=mf.EOS, do_sample=False).save_pretrained(d)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_dir, f), os.path.join(d, f))
    return d


def fuse_experts(state: dict, current: dict) -> dict:
    """Per-expert checkpoint names -> transformers 5's fused in-memory expert parameters
    (experts.gate_up_proj [E, 2I, H], gate rows first; experts.down_proj [E, H, I])."""
    import re
    out, fused = {}, {}
    for k, v in state.items():
        m = re.fullmatch(r"(.*\.experts)\.(\d+)\.(gate|up|down)_proj\.weight", k)
        if not m:
            out[k] = v
            continue
        prefix, e, part = m.group(1), int(m.group(2)), m.group(3)
        key = prefix + (".down_proj" if part == "down" else ".gate_up_proj")
        if key not in fused:
            fused[key] = current[key].clone()
        t = fused[key]
        if part == "down":
            t[e] = v
        else:
            inter = t.shape[1] // 2
            t[e, (0 if part == "gate" else inter):(inter if part == "gate" else 2 * inter)] = v
    out.update(fused)
    return out


@torch.no_grad()
def reference(name: str, state: dict):
    """Logits and greedy continuation of the source architecture with `state` replacing its weights."""
    src = os.path.join(OUT, "deepseek_v3_source")
    model = mf.load_f32(src)
    state = fuse_experts(state, model.state_dict())
    missing = [k for k in state if k not in model.state_dict()]
    assert not missing, f"{name}: tensors not in the model: {missing[:3]}"
    model.load_state_dict(state, strict=False)
    rng = np.random.default_rng(SEED)
    prompt = [int(x) for x in rng.integers(2, mf.VOCAB, size=PROMPT_LEN)]
    logits = model(input_ids=torch.tensor([prompt])).logits[0].float()
    new, last, margin = mf.greedy(model, prompt, NEW_TOKENS)
    assert mf.EOS not in new, f"{name}: EOS is an argmax"
    return prompt, logits, new, last, margin


def write_reference(d: str, name: str, about: str):
    state = dequantized_state(d) if name != "deepseek_v3_source" else {}
    prompt, logits, new, last, margin = reference(name, state)
    with open_reference(os.path.join(d, "reference.json.gz"), "w") as f:
        f.write("{\n")
        f.write(f'"name": {json.dumps(name)},\n')
        f.write(f'"transformers_version": {json.dumps(transformers.__version__)},\n')
        f.write(f'"torch_version": {json.dumps(torch.__version__)},\n')
        f.write('"compute_dtype": "float32",\n')
        f.write(f'"about": {json.dumps(about)},\n')
        f.write(f'"prompt_ids": {json.dumps(prompt)},\n')
        f.write(f'"greedy_ids": {json.dumps(new)},\n')
        f.write(f'"greedy_min_top2_margin": {margin:.6g},\n')
        f.write(f'"logits_shape": {json.dumps(list(logits.shape))},\n')
        f.write(f'"greedy_logits_last": {mf.f32_json(last.numpy())},\n')
        f.write(f'"logits": {mf.f32_json(logits.numpy())}\n')
        f.write("}\n")
    print(f"   {name}: greedy {new} min top-2 margin {margin:.4g}", flush=True)


ABOUT = {
    "deepseek_v3_source": "bf16 source of the quantized fixtures: DeepSeek-V3, q-LoRA 32, one dense layer "
                          "(intermediate 144) then one MoE layer (8 experts of 16, top-2, 1 shared), tied embeddings.",
    "deepseek_v3_fp8": "deepseek_v3_source in DeepSeek block-scaled FP8 (every decoder linear except the router); "
                       "reference from the weights dequantized in float32.",
    "deepseek_v3_nvfp4": "deepseek_v3_source in ModelOpt NVFP4, attention and layer 0 excluded (--exclude "
                         "'*self_attn*,model.layers.0.mlp'); reference from the weights dequantized in float32.",
}


def verify() -> bool:
    ok = True
    for name in ["deepseek_v3_source", *VARIANTS]:
        d = os.path.join(OUT, name)
        with open_reference(os.path.join(d, "reference.json.gz")) as f:
            ref = json.load(f)
        state = dequantized_state(d) if name != "deepseek_v3_source" else {}
        prompt, logits, new, last, _ = reference(name, state)
        diff = float((logits - torch.tensor(ref["logits"])).abs().max())
        good = prompt == ref["prompt_ids"] and new == ref["greedy_ids"] and diff <= 1e-5
        if name in VARIANTS:
            with tempfile.TemporaryDirectory() as tmp:
                fmt, patterns = VARIANTS[name]
                quantize_dir(os.path.join(OUT, "deepseek_v3_source"), tmp, fmt, patterns)
                with open(os.path.join(tmp, "model.safetensors"), "rb") as a, \
                        open(os.path.join(d, "model.safetensors"), "rb") as b:
                    same = a.read() == b.read()
            good &= same
            print(f"   {name}: re-quantized weights {'identical' if same else 'DIFFERENT'}")
        print(f"   {name:24s} max|dlogits| {diff:.3g} greedy {'same' if new == ref['greedy_ids'] else 'DIFFERENT'}"
              f" {'OK' if good else 'FAIL'}")
        ok &= good
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify", action="store_true", help="only verify the committed fixtures")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    if not args.verify:
        os.makedirs(OUT, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            mf.build_tokenizer(tmp)
            src = make_source(tmp)
        write_reference(src, "deepseek_v3_source", ABOUT["deepseek_v3_source"])
        for name, (fmt, patterns) in VARIANTS.items():
            d = os.path.join(OUT, name)
            quantize_dir(src, d, fmt, patterns)
            write_reference(d, name, ABOUT[name])
    print("== verify")
    ok = verify()
    print("ALL OK" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
