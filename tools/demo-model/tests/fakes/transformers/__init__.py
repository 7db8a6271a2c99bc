"""A stand-in for `transformers` in train.py's dry run (tests/test_train_dryrun.py): the calls
train.py makes (from_pretrained on a Hub-layout checkpoint, the experts switch, the
tokenizer that the real run also loads), on an independent plain implementation of the
Qwen3-MoE forward: per-expert loops over the rows that chose each expert, explicit
masked attention. train.py's export check compares its logits with trainlib.fast_moe's,
so the dry run also proves the fast, dense-masked formulation equal to the sparse one."""
import json
import math
import os
import types

import torch
import torch.nn.functional as F
from torch import nn

from trainlib import export  # train.py puts tools/demo-model on sys.path

__version__ = "0.0-fake"


def _rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _rope(x, theta):
    """x [T, heads, D] -> rotated by position (the rotate-half convention)."""
    t, _, d = x.shape
    half = d // 2
    ang = torch.arange(t, dtype=torch.float64)[:, None] / theta ** (torch.arange(half, dtype=torch.float64) * 2 / d)
    c, s = ang.cos().float()[:, None, :], ang.sin().float()[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * c - b * s, b * c + a * s], dim=-1)


class Qwen3MoeForCausalLM(nn.Module):
    def __init__(self, config, tensors):
        super().__init__()
        self.config = config
        self.w = nn.ParameterDict({k.replace(".", "/"): nn.Parameter(v.float(), requires_grad=False) for k, v in tensors.items()})

    def _p(self, name):
        return self.w[name.replace(".", "/")]

    def set_experts_implementation(self, name):
        self.config._experts_implementation = name

    def _attention(self, i, x):
        c, pre = self.config, f"model.layers.{i}.self_attn."
        t = x.shape[0]
        q = (x @ self._p(pre + "q_proj.weight").T).view(t, c.num_attention_heads, c.head_dim)
        k = (x @ self._p(pre + "k_proj.weight").T).view(t, c.num_key_value_heads, c.head_dim)
        v = (x @ self._p(pre + "v_proj.weight").T).view(t, c.num_key_value_heads, c.head_dim)
        q, k = _rope(_rms(q, self._p(pre + "q_norm.weight"), c.rms_norm_eps), c.rope_theta), _rope(_rms(k, self._p(pre + "k_norm.weight"), c.rms_norm_eps), c.rope_theta)
        group = c.num_attention_heads // c.num_key_value_heads
        out = torch.zeros(t, c.num_attention_heads, c.head_dim)
        for h in range(c.num_attention_heads):
            scores = (q[:, h] @ k[:, h // group].T) / math.sqrt(c.head_dim)
            scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            out[:, h] = F.softmax(scores, dim=-1) @ v[:, h // group]
        return out.reshape(t, -1) @ self._p(pre + "o_proj.weight").T

    def _mlp(self, pre, x):
        return (F.silu(x @ self._p(pre + "gate_proj.weight").T) * (x @ self._p(pre + "up_proj.weight").T)) @ self._p(pre + "down_proj.weight").T

    def _moe(self, i, x):
        c, pre = self.config, f"model.layers.{i}.mlp."
        probs = F.softmax(x @ self._p(pre + "gate.weight").T, dim=-1)
        top, idx = torch.topk(probs, c.num_experts_per_tok, dim=-1)
        top = top / top.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e in range(c.num_experts):
            rows, slot = torch.where(idx == e)
            if rows.numel():
                out.index_add_(0, rows, self._mlp(f"{pre}experts.{e}.", x[rows]) * top[rows, slot, None])
        return out

    def forward(self, input_ids, use_cache=False):
        c = self.config
        logits = []
        for seq in input_ids.cpu():
            x = self._p("model.embed_tokens.weight")[seq]
            for i in range(c.num_hidden_layers):
                pre = f"model.layers.{i}."
                x = x + self._attention(i, _rms(x, self._p(pre + "input_layernorm.weight"), c.rms_norm_eps))
                h = _rms(x, self._p(pre + "post_attention_layernorm.weight"), c.rms_norm_eps)
                x = x + (self._mlp(pre + "mlp.", h) if i in c.mlp_only_layers else self._moe(i, h))
            logits.append(_rms(x, self._p("model.norm.weight"), c.rms_norm_eps) @ self._p("model.embed_tokens.weight").T)
        return types.SimpleNamespace(logits=torch.stack(logits).to(input_ids.device))


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(path, dtype=None, attn_implementation=None, output_loading_info=False):
        with open(os.path.join(path, "config.json")) as f:
            config = types.SimpleNamespace(**json.load(f), _attn_implementation=attn_implementation)
        index = os.path.join(path, "model.safetensors.index.json")
        files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
        tensors = {}
        for f in files:
            tensors.update(export.read_safetensors(os.path.join(path, f))[1])
        model = Qwen3MoeForCausalLM(config, tensors)
        info = {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
        return (model, info) if output_loading_info else model


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path):
        raise OSError("the fake transformers has no tokenizer (train.py records this and goes on)")
