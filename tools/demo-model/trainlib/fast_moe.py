"""The model train.py trains: Qwen3-MoE's forward as transformers computes it (RMSNorm,
QK-norm, RoPE, grouped-query causal attention, a softmax router with renormalised top-k,
SiLU-gated experts, tied LM head), written for training speed. transformers' reference
expert loop picks each expert's rows with a data-dependent gather (a host sync per expert
and layer, ~0.4 M tokens/s on an H200); here every expert runs on every row as two
GEMMs per layer and the routing weights, zero outside the top-k, mask the result. That is
the same function (an unchosen expert is multiplied by 0; gradients reach the router only
through the chosen ones), at 4x the expert FLOPs of the demo's tiny experts, which an
H200 does not notice.

Parameter names are the Hub's, except that each layer's experts are stacked
(`mlp.experts.gate_proj` [E, I, H], `up_proj` [E, I, H], `down_proj` [E, H, I]);
`hub_tensors()` splits them into the per-expert tensors every loader reads. train.py
checks the claim of equality on every run: transformers loads the exported checkpoint
and its fp32 logits must equal this model's (see `equivalence`)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class RmsNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def _linear(out_f, in_f):
    return nn.Linear(in_f, out_f, bias=False)


def rope_tables(seq_len, head_dim, theta, device):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim))
    freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=device), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def causal_attention(q, k, v):
    """q [B, Hq, T, D], k/v [B, Hkv, T, D]; grouped query heads share key-value heads in order."""
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, is_causal=True)
    t = q.shape[2]  # torch < 2.0 (the CPU tests' Debian torch)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return F.softmax(scores.float(), dim=-1).to(v.dtype) @ v


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        h = c["hidden_size"]
        self.q_proj, self.k_proj = _linear(self.heads * self.head_dim, h), _linear(self.kv_heads * self.head_dim, h)
        self.v_proj, self.o_proj = _linear(self.kv_heads * self.head_dim, h), _linear(h, self.heads * self.head_dim)
        self.q_norm, self.k_norm = RmsNorm(self.head_dim, c["rms_norm_eps"]), RmsNorm(self.head_dim, c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        o = causal_attention(q, k, v)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, -1))


class DenseMlp(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = _linear(inter, h), _linear(inter, h), _linear(h, inter)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x)), None


class StackedExperts(nn.Module):
    def __init__(self, e, h, inter):
        super().__init__()
        self.gate_proj = nn.Parameter(torch.empty(e, inter, h))
        self.up_proj = nn.Parameter(torch.empty(e, inter, h))
        self.down_proj = nn.Parameter(torch.empty(e, h, inter))

    def forward(self, x, weights):
        """x [N, H], weights [N, E] (zero outside each row's top-k) -> [N, H]."""
        e, inter, h = self.gate_proj.shape
        gate = F.linear(x, self.gate_proj.reshape(e * inter, h))
        up = F.linear(x, self.up_proj.reshape(e * inter, h))
        act = (F.silu(gate) * up).view(-1, e, inter) * weights.unsqueeze(-1).to(gate.dtype)
        return F.linear(act.reshape(-1, e * inter), self.down_proj.permute(1, 0, 2).reshape(h, e * inter))


class SparseMoe(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.top_k, self.renormalize = c["num_experts_per_tok"], c["norm_topk_prob"]
        self.gate = _linear(c["num_experts"], c["hidden_size"])
        self.experts = StackedExperts(c["num_experts"], c["hidden_size"], c["moe_intermediate_size"])

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        logits = self.gate(flat)
        probs = F.softmax(logits.float(), dim=-1)
        top, idx = torch.topk(probs, self.top_k, dim=-1)
        if self.renormalize:
            top = top / top.sum(-1, keepdim=True)
        weights = torch.zeros_like(probs).scatter(1, idx, top)
        return self.experts(flat, weights).view(shape), logits


class DecoderLayer(nn.Module):
    def __init__(self, c, moe):
        super().__init__()
        h, eps = c["hidden_size"], c["rms_norm_eps"]
        self.input_layernorm, self.post_attention_layernorm = RmsNorm(h, eps), RmsNorm(h, eps)
        self.self_attn = Attention(c)
        self.mlp = SparseMoe(c) if moe else DenseMlp(h, c["intermediate_size"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        y, router_logits = self.mlp(self.post_attention_layernorm(x))
        return x + y, router_logits


class Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        dense = set(c["mlp_only_layers"])
        self.layers = nn.ModuleList(DecoderLayer(c, i not in dense and (i + 1) % c["decoder_sparse_step"] == 0) for i in range(c["num_hidden_layers"]))
        self.norm = RmsNorm(c["hidden_size"], c["rms_norm_eps"])


def load_balancing_loss(router_logits, num_experts, top_k):
    """transformers' Switch-style auxiliary loss over every MoE layer's router logits."""
    logits = torch.cat([r.float() for r in router_logits], dim=0)
    probs = F.softmax(logits, dim=-1)
    _, idx = torch.topk(probs, top_k, dim=-1)
    tokens_per_expert = F.one_hot(idx, num_experts).float().mean(0)
    return (tokens_per_expert * probs.mean(0).unsqueeze(0)).sum() * num_experts


class FastQwen3Moe(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        if not cfg.get("tie_word_embeddings"):
            raise ValueError("the demo model ties its embeddings; FastQwen3Moe has no separate LM head")
        self.cfg = cfg
        self.model = Inner(cfg)
        self._rope = {}

    def _tables(self, t, device):
        key = (t, device)
        if key not in self._rope:
            self._rope[key] = rope_tables(t, self.cfg["head_dim"], self.cfg["rope_theta"], device)
        return self._rope[key]

    def forward(self, input_ids, router_loss=False):
        """(logits [B, T, V], load-balancing loss or None)."""
        cos, sin = self._tables(input_ids.shape[1], input_ids.device)
        x = self.model.embed_tokens(input_ids)
        routers = []
        for layer in self.model.layers:
            x, r = layer(x, cos, sin)
            if r is not None:
                routers.append(r)
        logits = F.linear(self.model.norm(x), self.model.embed_tokens.weight)
        aux = load_balancing_loss(routers, self.cfg["num_experts"], self.cfg["num_experts_per_tok"]) if router_loss and routers else None
        return logits, aux

    def hub_tensors(self):
        """{Hub name: bf16 CPU tensor}: per-expert tensors, no lm_head (tied)."""
        out = {}
        for name, p in self.state_dict().items():
            t = p.detach().to("cpu", torch.bfloat16)
            prefix, _, kind = name.rpartition(".")
            if prefix.endswith("mlp.experts"):
                for e in range(t.shape[0]):
                    out[f"{prefix}.{e}.{kind}.weight"] = t[e].contiguous()
            else:
                out[name] = t.contiguous()
        return out

    def load_hub_tensors(self, tensors):
        """The inverse of hub_tensors (tests, and reloading a shipped checkpoint)."""
        state = {}
        for name, p in self.state_dict().items():
            prefix, _, kind = name.rpartition(".")
            if prefix.endswith("mlp.experts"):
                state[name] = torch.stack([tensors[f"{prefix}.{e}.{kind}.weight"] for e in range(p.shape[0])])
            else:
                state[name] = tensors[name]
        self.load_state_dict({k: v.float() for k, v in state.items()})


def init_weights(model, num_layers, seed):
    """Seeded init independent of any library version: norms 1, everything else N(0, 0.02),
    output projections (o_proj, down_proj) scaled by 1/sqrt(2 * layers)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.fill_(1.0)
                continue
            std = 0.02 / math.sqrt(2 * num_layers) if ("o_proj" in name or "down_proj" in name) else 0.02
            p.copy_(torch.randn(p.shape, generator=g) * std)


def bf16_rounded(model):
    """A copy whose parameters are the bf16-rounded values (what the checkpoint holds), fp32."""
    twin = FastQwen3Moe(model.cfg)
    twin.load_state_dict({k: v.detach().to(torch.bfloat16).float() for k, v in model.state_dict().items()})
    return twin.to(next(model.parameters()).device).eval()


def equivalence(model, hf_logits_fn, ids):
    """Norm-wise relative error between transformers' logits and this model's (fp32, the
    shipped bf16 weights) on ids [B, T]; train.py refuses a run above EQUIVALENCE_TOLERANCE."""
    twin = bf16_rounded(model)
    with torch.no_grad():
        ours = twin(ids)[0].float()
        theirs = hf_logits_fn(ids).float()
    return ((ours - theirs).norm() / theirs.norm()).item()


EQUIVALENCE_TOLERANCE = 1e-4
