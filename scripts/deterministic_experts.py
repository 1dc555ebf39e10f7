"""The deterministic experts forward that the embedded model's training scripts register with transformers
(scripts/train_default_model.py for the main and draft models, scripts/train_heads.py for the MTP layer)."""

from __future__ import annotations


def sorted_loop_experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """Training-time experts forward: the same function as transformers' eager DeepseekV3Experts.forward, written
    without index_add_ (atomics on CUDA) so that training is deterministic: token-expert pairs are sorted by
    expert, each expert runs one matmul pair on its contiguous slice, results are put back in order and summed."""
    import torch
    import torch.nn.functional as F

    num_tokens, hidden = hidden_states.shape
    k = top_k_index.shape[-1]
    flat = top_k_index.reshape(-1)
    sorted_ids, perm = torch.sort(flat, stable=True)
    bounds = torch.searchsorted(sorted_ids, torch.arange(self.num_experts + 1, device=flat.device)).tolist()
    x = hidden_states[perm // k]
    outs = []
    for e in range(self.num_experts):
        s, t = bounds[e], bounds[e + 1]
        if t > s:
            gate, up = F.linear(x[s:t], self.gate_up_proj[e]).chunk(2, dim=-1)
            outs.append(F.linear(self.act_fn(gate) * up, self.down_proj[e]))
    y = torch.cat(outs, dim=0).float() * top_k_weights.reshape(-1)[perm].unsqueeze(-1).float()
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel(), device=perm.device)
    return y[inverse].view(num_tokens, k, hidden).sum(dim=1).to(hidden_states.dtype)
