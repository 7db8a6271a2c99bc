"""A stand-in for `transformers` in train.py's dry run (tests/test_train_dryrun.py): the calls
train.py makes, on a toy causal LM that has Qwen3-MoE's parameter names with experts fused
the way transformers 5 keeps them (gate_up_proj [E, 2I, H], down_proj [E, H, I]), and a
from_pretrained that reads the hub layout (per-expert tensors) back into them. It checks
train.py's orchestration and export, not the real model: attention is left out."""
import json
import os
import types

import torch
import torch.nn.functional as F
from torch import nn

from trainlib import export  # train.py puts tools/demo-model on sys.path

__version__ = "0.0-fake"


class _Config(types.SimpleNamespace):
    pass


class AutoConfig:
    @staticmethod
    def from_pretrained(path):
        with open(os.path.join(path, "config.json")) as f:
            c = _Config(**json.load(f))
        c._attn_implementation = "eager"
        return c


class _Norm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class _Linear(nn.Module):
    def __init__(self, out_f, in_f):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(out_f, in_f))

    def forward(self, x):
        return F.linear(x, self.weight)


class _Attn(nn.Module):
    def __init__(self, c):
        super().__init__()
        q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = _Linear(q, c.hidden_size), _Linear(kv, c.hidden_size), _Linear(kv, c.hidden_size), _Linear(c.hidden_size, q)
        self.q_norm, self.k_norm = _Norm(c.head_dim), _Norm(c.head_dim)
        self.heads, self.kv, self.hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim

    def forward(self, x):  # no attention: a per-position gate stands in for it
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.heads, self.hd)).mean((-1, -2), keepdim=False)
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv, self.hd)).mean((-1, -2), keepdim=False)
        v = self.v_proj(x).repeat_interleave(self.heads // self.kv, dim=-1)
        return self.o_proj(v * torch.sigmoid(q * k)[..., None])


class _Mlp(nn.Module):
    def __init__(self, h, i):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = _Linear(i, h), _Linear(i, h), _Linear(h, i)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class _Experts(nn.Module):
    def __init__(self, e, h, i):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.zeros(e, 2 * i, h))
        self.down_proj = nn.Parameter(torch.zeros(e, h, i))
        self.i = i

    def forward(self, x, idx, w):
        out = torch.zeros_like(x)
        for e in range(self.gate_up_proj.shape[0]):
            rows, slot = torch.where(idx == e)
            if rows.numel() == 0:
                continue
            gate, up = F.linear(x[rows], self.gate_up_proj[e]).chunk(2, dim=-1)
            out.index_add_(0, rows, F.linear(F.silu(gate) * up, self.down_proj[e]) * w[rows, slot, None].to(x.dtype))
        return out


class _Moe(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate = _Linear(c.num_experts, c.hidden_size)
        self.experts = _Experts(c.num_experts, c.hidden_size, c.moe_intermediate_size)
        self.k = c.num_experts_per_tok

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        logits = self.gate(x)
        probs = F.softmax(logits.float(), dim=-1)
        w, idx = torch.topk(probs, self.k, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        return self.experts(x, idx, w).view(shape), probs


class _Layer(nn.Module):
    def __init__(self, c, moe):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = _Norm(c.hidden_size), _Norm(c.hidden_size)
        self.self_attn = _Attn(c)
        self.mlp = _Moe(c) if moe else _Mlp(c.hidden_size, c.intermediate_size)

    def forward(self, x, probs):
        x = x + self.self_attn(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        if isinstance(self.mlp, _Moe):
            y, p = self.mlp(h)
            probs.append(p)
            return x + y
        return x + self.mlp(h)


class _Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([_Layer(c, l not in c.mlp_only_layers) for l in range(c.num_hidden_layers)])
        self.norm = _Norm(c.hidden_size)


class Qwen3MoeForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = _Inner(config)
        self.lm_head = _Linear(config.vocab_size, config.hidden_size)
        self.lm_head.weight = self.model.embed_tokens.weight

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def get_output_embeddings(self):
        return self.lm_head

    def tie_weights(self):
        self.lm_head.weight = self.model.embed_tokens.weight

    def set_experts_implementation(self, name):
        self.config._experts_implementation = name

    def forward(self, input_ids, use_cache=False, output_router_logits=False):
        x = self.model.embed_tokens(input_ids)
        probs = []
        for layer in self.model.layers:
            x = layer(x, probs)
        logits = self.lm_head(self.model.norm(x))
        aux = None
        if output_router_logits and probs:
            aux = sum((p.mean(0) ** 2).sum() * p.shape[-1] for p in probs) / len(probs)
        return types.SimpleNamespace(logits=logits, aux_loss=aux)


class AutoModelForCausalLM:
    @staticmethod
    def from_config(config, dtype=None, attn_implementation=None):
        config._attn_implementation = attn_implementation
        return Qwen3MoeForCausalLM(config)

    @staticmethod
    def from_pretrained(path, dtype=None, attn_implementation=None, output_loading_info=False):
        config = AutoConfig.from_pretrained(path)
        model = Qwen3MoeForCausalLM(config)
        index = os.path.join(path, "model.safetensors.index.json")
        files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
        hub = {}
        for f in files:
            hub.update({k: v.float() for k, v in export.read_safetensors(os.path.join(path, f))[1].items()})
        state, used = {}, set()
        for name in model.state_dict():
            if name.endswith("experts.gate_up_proj") or name.endswith("experts.down_proj"):
                prefix, kind = name.rsplit(".", 1)
                e_count = config.num_experts
                if kind == "gate_up_proj":
                    parts = [torch.cat([hub[f"{prefix}.{e}.gate_proj.weight"], hub[f"{prefix}.{e}.up_proj.weight"]]) for e in range(e_count)]
                    used.update(f"{prefix}.{e}.{p}_proj.weight" for e in range(e_count) for p in ("gate", "up"))
                else:
                    parts = [hub[f"{prefix}.{e}.down_proj.weight"] for e in range(e_count)]
                    used.update(f"{prefix}.{e}.down_proj.weight" for e in range(e_count))
                state[name] = torch.stack(parts)
            elif name == "lm_head.weight":
                state[name] = hub["model.embed_tokens.weight"]
            else:
                state[name] = hub[name]
                used.add(name)
        model.load_state_dict(state)
        info = {"missing_keys": [], "unexpected_keys": sorted(set(hub) - used - {"model.embed_tokens.weight"}), "mismatched_keys": [], "error_msgs": []}
        return (model, info) if output_loading_info else model


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path):
        raise OSError("the fake transformers has no tokenizer (train.py records this and goes on)")
