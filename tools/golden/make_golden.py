#!/usr/bin/env python3
"""Golden fixtures for the AFD engine, computed with HuggingFace transformers.

For every supported architecture this builds a small random-weight checkpoint with odd
sizes (non-power-of-two hidden, kv heads < q heads, expert counts that are not a multiple
of 8, a dense layer among MoE layers), saves the weights as bf16 safetensors in the
HuggingFace Hub layout, loads them back with transformers in float32 (so the reference
computes in fp32 on exactly the bf16-rounded weights our engine reads), and records for
fixed prompts the 32-token greedy continuation and the last-position logits at a few
steps. Output: OUT/fixtures/<name>/{config.json, model.safetensors, golden.json} and
OUT/fixtures.tar.gz. See README.md for the exact command.

Robust by design (it is run once, on a machine we do not control): every fixture runs
in its own try block, failures are reported and the rest continue; the greedy loop is a
plain full forward on the growing sequence (no cache API); weights are checked after
loading (a silently re-initialised tensor would make the fixture useless); seeds are
retried until greedy tokens vary and no top-2 logit or router near-tie could flip them.

--dry-run needs no torch: it validates the fixture table and writes only the configs.
"""
import argparse
import json
import math
import os
import platform
import random
import shutil
import sys
import tarfile
import time
import traceback
from fnmatch import fnmatch

import deepseek_golden as deepseek
import qwen3next_golden as qwen3next

MAX_NEW_TOKENS = 32
LOGIT_STEPS = [0, 1, 15, 31]
PROMPT_LENGTHS = [1, 7, 23]
REL_TOLERANCE = 1e-3
# Smallest top-1 minus top-2 gap (logits, and router logits around the k-th expert) we
# accept: fp32 engines differ from the reference by ~1e-5, so gaps above this cannot flip.
MIN_MARGIN = 2e-3
# The CUDA suite's routing near-tie band (native/src/testing/gpu/goldenRule.ts routerTieBand) and, for
# the hybrid fixtures, the most positions per case allowed inside it (its rule excuses at most
# maxRoutingExcuses = 2 failures per case after a near-tie).
ROUTER_TIE_BAND = 0.02
MAX_NEAR_TIES_PER_CASE = 1
MAX_FIXTURE_BYTES = 1_500_000
VOCAB = 512
BOS, EOS = 0, 1


def qwen3_moe(**o):
    c = dict(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", vocab_size=VOCAB, hidden_act="silu",
             rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=512, attention_bias=False,
             use_sliding_window=False, sliding_window=None, decoder_sparse_step=1, mlp_only_layers=[],
             norm_topk_prob=True, bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False)
    c.update(o)
    return c


def qwen3(**o):
    c = dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=VOCAB, hidden_act="silu",
             rms_norm_eps=1e-6, rope_theta=1000000.0, max_position_embeddings=512, attention_bias=False,
             use_sliding_window=False, sliding_window=None, bos_token_id=BOS, eos_token_id=EOS,
             tie_word_embeddings=False)
    c.update(o)
    return c


def llama(**o):
    c = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=VOCAB, hidden_act="silu",
             rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=512, attention_bias=False,
             mlp_bias=False, bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False)
    c.update(o)
    return c


def mixtral(**o):
    c = dict(architectures=["MixtralForCausalLM"], model_type="mixtral", vocab_size=VOCAB, hidden_act="silu",
             rms_norm_eps=1e-5, rope_theta=1000000.0, max_position_embeddings=512, sliding_window=None,
             bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False)
    c.update(o)
    return c


# name -> (description, config). Odd sizes everywhere; see the module docstring.
# DeepSeek-V2 / V3 fixtures live in deepseek_golden.py, the Qwen3-Next / Qwen3.5-MoE hybrid
# (Gated DeltaNet) ones in qwen3next_golden.py; both are appended below.
FIXTURES = [
    ("qwen3_moe", "Qwen3-MoE: hidden 96, 4 q / 2 kv heads with explicit head_dim 32, 6 experts top-2 renormalised, layer 1 dense via mlp_only_layers",
     qwen3_moe(hidden_size=96, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
               intermediate_size=112, num_experts=6, num_experts_per_tok=2, moe_intermediate_size=48, mlp_only_layers=[1])),
    ("qwen3_moe_sparse_step", "Qwen3-MoE: decoder_sparse_step 2 (layers 1, 3 MoE), 10 experts top-3 not renormalised, 6 q / 2 kv heads, head_dim from hidden, tied embeddings",
     qwen3_moe(hidden_size=72, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2, intermediate_size=88,
               num_experts=10, num_experts_per_tok=3, moe_intermediate_size=40, decoder_sparse_step=2,
               norm_topk_prob=False, tie_word_embeddings=True)),
    ("qwen3", "dense Qwen3: hidden 80, 5 q / 1 kv heads with head_dim 24, MLP 136, tied embeddings",
     qwen3(hidden_size=80, num_hidden_layers=3, num_attention_heads=5, num_key_value_heads=1, head_dim=24,
           intermediate_size=136, tie_word_embeddings=True)),
    ("qwen3_yarn", "dense Qwen3 with yarn RoPE (factor 4, original 64, max positions 256), hidden 56, 4 / 2 heads of 16",
     qwen3(hidden_size=56, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
           intermediate_size=104, max_position_embeddings=256,
           rope_scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64))),
    ("llama", "Llama: hidden 96, 6 q / 2 kv heads (head_dim 16 from hidden), attention_bias on q/k/v/o, MLP 160",
     llama(hidden_size=96, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=2, intermediate_size=160,
           attention_bias=True)),
    ("llama3_rope", "Llama with llama3 RoPE scaling (factor 8, low 1, high 4, original 64; theta 5e5), hidden 72, 3 q / 1 kv heads of 24",
     llama(hidden_size=72, num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=1, intermediate_size=120,
           rope_theta=500000.0, max_position_embeddings=512,
           rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                             original_max_position_embeddings=64))),
    ("llama_linear_tied", "Llama with linear RoPE scaling (factor 2) and tied embeddings, hidden 48, 4 q / 4 kv heads",
     llama(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, intermediate_size=88,
           tie_word_embeddings=True, rope_scaling=dict(rope_type="linear", factor=2.0))),
    ("mixtral", "Mixtral: hidden 80, 4 q / 2 kv heads of 20, 6 experts top-2 of 48 (block_sparse_moe names)",
     mixtral(hidden_size=80, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
             num_local_experts=6, num_experts_per_tok=2)),
    ("mixtral_10e", "Mixtral: 10 experts top-3 of 40, hidden 80, 8 q / 2 kv heads of 10",
     mixtral(hidden_size=80, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, intermediate_size=40,
             num_local_experts=10, num_experts_per_tok=3)),
] + deepseek.FIXTURES + qwen3next.FIXTURES


# ---------------------------------------------------------------- tensor table (Hub layout)

def head_dim_of(c):
    c = qwen3next.text_view(c)
    if deepseek.is_deepseek(c):
        return c["qk_rope_head_dim"]
    if c.get("head_dim"):
        return c["head_dim"]
    return c["hidden_size"] // c["num_attention_heads"]


def moe_layers(c):
    if qwen3next.is_hybrid(c):
        return qwen3next.moe_layers(c)
    n = c["num_hidden_layers"]
    arch = c["architectures"][0]
    if deepseek.is_deepseek(c):
        return deepseek.moe_layers(c)
    if arch == "MixtralForCausalLM":
        return [True] * n
    if arch == "Qwen3MoeForCausalLM":
        step, only = c.get("decoder_sparse_step", 1), set(c.get("mlp_only_layers", []))
        return [(l not in only) and c["num_experts"] > 0 and (l + 1) % step == 0 for l in range(n)]
    return [False] * n


def tensor_table(c):
    """[(name, shape, kind)] in checkpoint order; kind picks the init."""
    if deepseek.is_deepseek(c):
        return deepseek.tensor_table(c)
    if qwen3next.is_hybrid(c):
        return qwen3next.tensor_table(c)
    arch = c["architectures"][0]
    h, v, hd = c["hidden_size"], c["vocab_size"], head_dim_of(c)
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    bias = c.get("attention_bias", False) and arch != "MixtralForCausalLM"
    qk_norm = arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
    out = [("model.embed_tokens.weight", [v, h], "embed")]
    for l, is_moe in enumerate(moe_layers(c)):
        p = f"model.layers.{l}"
        out += [(f"{p}.input_layernorm.weight", [h], "norm"),
                (f"{p}.self_attn.q_proj.weight", [q, h], "linear"),
                (f"{p}.self_attn.k_proj.weight", [kv, h], "linear"),
                (f"{p}.self_attn.v_proj.weight", [kv, h], "linear"),
                (f"{p}.self_attn.o_proj.weight", [h, q], "linear")]
        if bias:
            out += [(f"{p}.self_attn.q_proj.bias", [q], "bias"), (f"{p}.self_attn.k_proj.bias", [kv], "bias"),
                    (f"{p}.self_attn.v_proj.bias", [kv], "bias"), (f"{p}.self_attn.o_proj.bias", [h], "bias")]
        if qk_norm:
            out += [(f"{p}.self_attn.q_norm.weight", [hd], "norm"), (f"{p}.self_attn.k_norm.weight", [hd], "norm")]
        out.append((f"{p}.post_attention_layernorm.weight", [h], "norm"))
        if is_moe and arch == "MixtralForCausalLM":
            e, im = c["num_local_experts"], c["intermediate_size"]
            out.append((f"{p}.block_sparse_moe.gate.weight", [e, h], "router"))
            for i in range(e):
                out += [(f"{p}.block_sparse_moe.experts.{i}.w1.weight", [im, h], "linear"),
                        (f"{p}.block_sparse_moe.experts.{i}.w2.weight", [h, im], "linear"),
                        (f"{p}.block_sparse_moe.experts.{i}.w3.weight", [im, h], "linear")]
        elif is_moe:
            e, im = c["num_experts"], c["moe_intermediate_size"]
            out.append((f"{p}.mlp.gate.weight", [e, h], "router"))
            for i in range(e):
                out += deepseek.mlp_tensors(f"{p}.mlp.experts.{i}.", im, h)
        else:
            out += deepseek.mlp_tensors(f"{p}.mlp.", c["intermediate_size"], h)
    return out + deepseek.final_tensors(c)


def check_spec(name, c):
    """The fixture table's own rules (odd sizes, size budget). Returns estimated bytes."""
    full, c = c, qwen3next.text_view(c)
    h = c["hidden_size"]
    assert h & (h - 1) != 0, f"{name}: hidden_size {h} must not be a power of two"
    assert c["num_key_value_heads"] <= c["num_attention_heads"], f"{name}: kv heads > q heads"
    if deepseek.is_deepseek(c):
        deepseek.check_spec(name, c)
    if qwen3next.is_hybrid(c):
        qwen3next.check_spec(name, full)
    if not deepseek.is_deepseek(c) and any(moe_layers(c)):
        experts = c.get("num_experts", c.get("num_local_experts", 0))
        assert experts % 8 != 0, f"{name}: expert count {experts} must not be a multiple of 8"
    if name == "qwen3_moe":
        assert not all(moe_layers(c)), f"{name}: needs a dense layer among the MoE layers"
    assert head_dim_of(c) % 2 == 0, f"{name}: head_dim must be even"
    weight_bytes = deepseek.weight_bytes(tensor_table(full))
    logits_bytes = len(PROMPT_LENGTHS) * len(LOGIT_STEPS) * c["vocab_size"] * 13
    total = weight_bytes + logits_bytes + 4096
    assert total < MAX_FIXTURE_BYTES, f"{name}: estimated {total} bytes exceeds {MAX_FIXTURE_BYTES}"
    return total


def prompts(vocab, seed=1234):
    rng = random.Random(seed)
    return [[rng.randrange(2, vocab) for _ in range(n)] for n in PROMPT_LENGTHS]


def sig6(x):
    return float(f"{x:.6g}")


# ---------------------------------------------------------------- torch parts

def init_weights(torch, c, seed):
    g = torch.Generator().manual_seed(seed)
    h = qwen3next.text_view(c)["hidden_size"]
    out = {}
    for name, shape, kind in tensor_table(c):
        special = deepseek.init_tensor(torch, kind, shape, g)
        if special is None:
            special = qwen3next.init_tensor(torch, kind, shape, g)
        if special is not None:
            out[name] = special
            continue
        r = torch.randn(*shape, generator=g, dtype=torch.float32)
        if kind == "norm":
            t = 1.0 + 0.1 * r
        elif kind == "bias":
            t = 0.1 * r
        elif kind in ("embed", "lm_head"):
            t = (2.0 / math.sqrt(h)) * r
        else:  # linear / router: unit gain on a normalised input
            t = r / math.sqrt(shape[-1])
        out[name] = t.to(torch.bfloat16).contiguous()
    return out


def from_pretrained(torch, cls, d):
    """cls.from_pretrained in float32 with eager attention: (model, loading info or None)."""
    model, info, last = None, None, None
    # transformers 5 calls it dtype=, 4.x torch_dtype=; loading info is optional (the
    # parameter-sum check in check_loaded catches a bad load either way).
    for dtype_key in ("dtype", "torch_dtype"):
        for with_info in (True, False):
            try:
                kw = {dtype_key: torch.float32, "attn_implementation": "eager"}
                if with_info:
                    model, info = cls.from_pretrained(d, output_loading_info=True, **kw)
                else:
                    model = cls.from_pretrained(d, **kw)
                break
            except TypeError as e:
                last = e
        if model is not None:
            break
    if model is None:
        raise RuntimeError(f"from_pretrained failed: {last}")
    return model, info


def load_reference(torch, transformers, d, config=None):
    if config is not None and qwen3next.is_hybrid(config):
        # Native classes by name, tried in order (qwen3next_golden.reference_candidates).
        return qwen3next.load_reference(torch, transformers, d, config, lambda cls, path: from_pretrained(torch, cls, path))
    cls = transformers.AutoModelForCausalLM
    if config is not None and deepseek.is_deepseek(config):
        # The native classes by name (DeepseekV2ForCausalLM / DeepseekV3ForCausalLM): a
        # transformers without them fails here, never with someone's remote code.
        cls = getattr(transformers, config["architectures"][0])
    model, info = from_pretrained(torch, cls, d)
    if next(model.parameters()).dtype != torch.float32:
        model = model.float()
    bad = {k: v for k, v in (info or {}).items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")}
    if bad:
        raise RuntimeError(f"transformers did not load the checkpoint as written: {bad}")
    if config is not None and deepseek.is_deepseek(config):
        want = config["architectures"][0]
        if type(model).__name__ != want:
            raise RuntimeError(f"transformers built {type(model).__name__}, expected {want}")
        deepseek.patch_reference(model, config)
    model.eval()
    return model


def check_loaded(torch, model, tensors):
    """Sum and sum of squares over every parameter must equal the file's (layout-agnostic)."""
    seen, s1, s2, n = set(), 0.0, 0.0, 0
    # Parameters, and the buffers that come from the checkpoint (DeepSeek-V3's
    # e_score_correction_bias); not rotary inv_freq, which is computed.
    # Parameters not from the checkpoint (Qwen3.5's randomly initialised vision tower) are skipped.
    ignored = getattr(model, "_afd_ignored_prefixes", ())
    params = [t for name, t in model.named_parameters() if not (ignored and name.startswith(ignored))]
    for t in params + deepseek.loaded_buffers(model):
        if t.data_ptr() in seen or not t.is_floating_point():
            continue
        if t.dtype != torch.float32:
            raise RuntimeError(f"a model tensor is {t.dtype}, expected float32")
        seen.add(t.data_ptr())
        if t.numel() in (0,):
            continue
        d = t.detach().double()
        s1, s2, n = s1 + d.sum().item(), s2 + (d * d).sum().item(), n + t.numel()
    f1 = sum(t.double().sum().item() for t in tensors.values())
    f2 = sum((t.double() ** 2).sum().item() for t in tensors.values())
    fn = sum(t.numel() for t in tensors.values())
    return dict(params=n, file=fn, sum_ok=abs(s1 - f1) <= 1e-6 * max(1.0, abs(f1)) + 1e-3,
                sq_ok=abs(s2 - f2) <= 1e-6 * f2, s1=s1, f1=f1, s2=s2, f2=f2)


def router_hooks(model, captured):
    handles = []
    for name, mod in model.named_modules():
        if (name.endswith("mlp.gate") or name.endswith("block_sparse_moe.gate")) and hasattr(mod, "weight"):
            def pre(m, args, kwargs=None, _name=name):
                x = args[0] if args else None
                if x is not None:
                    captured.append((_name, x.detach().reshape(-1, x.shape[-1]).float() @ m.weight.detach().float().t()))
            handles.append(mod.register_forward_pre_hook(pre))
    return handles


def router_margin_threshold(config):
    """Smallest router gap accepted: raw logits for softmax top-k, score units for DeepSeek."""
    return deepseek.ROUTER_SCORE_MARGIN if deepseek.is_deepseek(config) else MIN_MARGIN


def greedy(torch, model, prompt, top_k_experts, config):
    """Full forward on the growing sequence each step (no cache API involved)."""
    ids = list(prompt)
    out_ids, logits_at, min_gap, router_gap = [], {}, float("inf"), float("inf")
    captured = []
    ds = deepseek.is_deepseek(config)
    hooks = deepseek.router_hooks if ds else router_hooks
    handles = hooks(model, captured) if top_k_experts else []
    try:
        with torch.no_grad():
            for step in range(MAX_NEW_TOKENS):
                captured.clear()
                logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
                top = torch.topk(logits, 2)
                min_gap = min(min_gap, (top.values[0] - top.values[1]).item())
                if ds and top_k_experts and not captured:
                    raise RuntimeError("no MoE block ran in this forward: the router hooks found nothing to check")
                for a, b in captured:  # router logits of every token of this forward
                    if ds:
                        router_gap = min(router_gap, deepseek.route_margin(torch, config, a, b))
                        continue
                    srt = torch.sort(b, dim=-1, descending=True).values
                    router_gap = min(router_gap, (srt[:, top_k_experts - 1] - srt[:, top_k_experts]).min().item())
                if step in LOGIT_STEPS:
                    logits_at[step] = [sig6(x) for x in logits.tolist()]
                nxt = int(top.indices[0])
                out_ids.append(nxt)
                ids.append(nxt)
            # The last forward saw every position the greedy steps feed (teacher-forced).
            position_margins = relative_router_margins(torch, config, captured, top_k_experts) if top_k_experts else None
    finally:
        for hd in handles:
            hd.remove()
    if not top_k_experts:
        router_gap = None
    elif not handles:
        print("  warning: no router modules found (mlp.gate / block_sparse_moe.gate); router margins unchecked", flush=True)
        router_gap = None
    return out_ids, logits_at, min_gap, router_gap, position_margins


def relative_router_margins(torch, config, captured, top_k_experts):
    """Per position of one forward: the smallest router gap over the MoE layers, relative
    to the rms of the scores the choice is made on (router logits; DeepSeek's routing
    scores). bf16 activations perturb those scores by about that fraction of their rms, so
    the GPU suite reads a small value here as a routing near-tie (goldenCheck.ts)."""
    if not captured:
        return None
    worst = None
    for a, b in captured:
        if deepseek.is_deepseek(config):
            gaps, scale = deepseek.route_gaps(torch, config, a, b)
        else:
            srt = torch.sort(b, dim=-1, descending=True).values
            gaps, scale = srt[:, top_k_experts - 1] - srt[:, top_k_experts], b.pow(2).mean(dim=-1).sqrt()
        rel = gaps / scale.clamp_min(1e-30)
        worst = rel if worst is None else torch.minimum(worst, rel)
    return [float(f"{v:.3g}") for v in worst.tolist()]


def near_ties(position_margins):
    """Positions whose relative router margin is inside the bf16 noise band (goldenRule.ts routerTieBand)."""
    return sum(1 for m in position_margins if m < ROUTER_TIE_BAND)


def cached_cross_check(torch, model, prompt, expected):
    """generate() with the KV cache must agree up to the first eos (informational)."""
    try:
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                                 eos_token_id=None, pad_token_id=BOS)
        got = out[0, len(prompt):].tolist()
        n = expected.index(EOS) if EOS in expected else len(expected)
        return "agree" if got[:n] == expected[:n] else f"disagree: {got}"
    except Exception as e:  # noqa: BLE001 - informational only
        return f"skipped: {type(e).__name__}: {e}"


def run_fixture(torch, transformers, safetensors_torch, name, desc, config, out_dir, base_seed, attempts, versions):
    fdir = os.path.join(out_dir, "fixtures", name)
    os.makedirs(fdir, exist_ok=True)
    text = qwen3next.text_view(config)  # the language model's fields (text_config of a composite config)
    top_k = text.get("num_experts_per_tok", 0) if any(moe_layers(config)) else 0
    if qwen3next.is_hybrid(config):  # their near-tie requirement rejects most seeds
        attempts = max(attempts, qwen3next.MIN_SEED_ATTEMPTS)
    best = None
    for attempt in range(attempts):
        seed = base_seed + 1000 * attempt
        tensors = init_weights(torch, config, seed)
        with open(os.path.join(fdir, "config.json"), "w") as f:
            json.dump(dict(config, torch_dtype="bfloat16"), f, indent=2)
        safetensors_torch.save_file(tensors, os.path.join(fdir, "model.safetensors"), metadata={"format": "pt"})
        model = load_reference(torch, transformers, fdir, config)
        chk = check_loaded(torch, model, tensors)
        if not (chk["sum_ok"] and chk["sq_ok"]):
            raise RuntimeError(f"loaded weights differ from the file: {chk}")
        cases, gaps, rgaps, variety, ties = [], [], [], [], []
        for p in prompts(text["vocab_size"]):
            ids, logits_at, gap, rgap, pos_margins = greedy(torch, model, p, top_k, config)
            case = dict(promptIds=p, greedyIds=ids, minTop2Margin=sig6(gap),
                        logits=[dict(step=s, values=logits_at[s]) for s in LOGIT_STEPS],
                        kvCacheCrossCheck=cached_cross_check(torch, model, p, ids))
            if pos_margins is not None:
                case["routerRelativeMargins"] = pos_margins
                case["routerNearTies"] = near_ties(pos_margins)
                ties.append(case["routerNearTies"])
            cases.append(case)
            gaps.append(gap)
            if rgap is not None:
                rgaps.append(rgap)
            variety.append(len(set(ids)))
        ok_margin = min(gaps) >= MIN_MARGIN and (not rgaps or min(rgaps) >= router_margin_threshold(config))
        ok_variety = min(variety) >= 3 and len({t for c in cases for t in c["greedyIds"]}) >= 10
        # Hybrid fixtures: few router near-ties per case (the CUDA suite's bf16 rule excuses at most
        # a couple of failures after one), so a bf16 engine's routing noise cannot exhaust that room.
        hybrid_ties = ties if qwen3next.is_hybrid(config) else []
        ok_ties = not hybrid_ties or max(hybrid_ties) <= MAX_NEAR_TIES_PER_CASE
        ok = ok_margin and ok_variety and ok_ties
        score = (ok_margin and ok_ties, ok_variety, -max(hybrid_ties, default=0), min(variety))
        print(f"  {name} seed {seed}: min logit gap {min(gaps):.4g}, router gap {min(rgaps) if rgaps else 'n/a'}, "
              f"distinct greedy tokens per prompt {variety}, router near-ties (< {ROUTER_TIE_BAND}) per prompt "
              f"{ties or 'n/a'} -> {'ok' if ok else 'retry'}", flush=True)
        if best is None or score > best[0]:
            best = (score, seed, cases, {k: v for k, v in tensors.items()}, min(rgaps) if rgaps else None,
                    getattr(model, "_afd_reference_class", None), ok_margin, ok_ties, ties)
        if ok:
            break
    (_, ok_variety, _, _), seed, cases, tensors, rgap, ref_class, ok_margin, ok_ties, ties = best
    # Rewrite the chosen attempt's weights (the last attempt may not be the best).
    safetensors_torch.save_file(tensors, os.path.join(fdir, "model.safetensors"), metadata={"format": "pt"})
    try:
        with open(os.path.join(fdir, "config.hf.json"), "w") as f:
            if qwen3next.is_hybrid(config):  # the whole (maybe composite) config, not the text model's
                f.write(qwen3next.hf_config_json(transformers, fdir))
            else:
                f.write(load_reference(torch, transformers, fdir, config).config.to_json_string())
    except Exception as e:  # noqa: BLE001 - informational only
        print(f"  {name}: could not write config.hf.json: {e}")
    golden = dict(format=1, name=name, architecture=config["architectures"][0], description=desc,
                  relTolerance=REL_TOLERANCE, maxNewTokens=MAX_NEW_TOKENS, weightsDtype="bf16", computeDtype="float32",
                  seed=seed, marginOk=ok_margin, varietyOk=ok_variety, routerMinMargin=rgap,
                  **(dict(routerTieBand=ROUTER_TIE_BAND, routerMaxNearTies=max(ties), routerNearTiesOk=ok_ties)
                     if ties and qwen3next.is_hybrid(config) else {}),
                  versions=versions, cases=cases)
    if ref_class:
        golden["referenceClass"] = ref_class
    with open(os.path.join(fdir, "golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"), allow_nan=False)
    size = sum(os.path.getsize(os.path.join(fdir, x)) for x in os.listdir(fdir))
    warn = "" if size <= MAX_FIXTURE_BYTES else f" (over the {MAX_FIXTURE_BYTES}-byte budget)"
    print(f"  {name}: wrote {fdir} ({size} bytes){warn}; margin {'ok' if ok_margin else 'LOW'}, variety {'ok' if ok_variety else 'LOW'}"
          + (f", router near-ties per prompt {ties} {'ok' if ok_ties else 'TOO MANY'}" if ties else ""), flush=True)
    return dict(name=name, ok=True, bytes=size, seed=seed, marginOk=ok_margin and ok_ties, varietyOk=ok_variety)


def pack(out_dir, names):
    path = os.path.join(out_dir, "fixtures.tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        for n in names:
            tar.add(os.path.join(out_dir, "fixtures", n), arcname=f"fixtures/{n}")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (fixtures/<name>/ and fixtures.tar.gz go there)")
    ap.add_argument("--only", default="", help="comma-separated fixture names or globs, e.g. 'deepseek_*' (default: all)")
    ap.add_argument("--install", default="", help="also copy every fixture that succeeded into INSTALL/<name>/ "
                    "(e.g. tools/golden/fixtures), replacing what is there")
    ap.add_argument("--seed", type=int, default=20251130, help="base seed")
    ap.add_argument("--attempts", type=int, default=12, help="seeds tried per fixture until margins and variety are ok")
    ap.add_argument("--dry-run", action="store_true", help="no torch: validate the fixture table and write configs only")
    args = ap.parse_args(argv)
    patterns = [p for p in args.only.split(",") if p]
    selected = [f for f in FIXTURES if not patterns or any(fnmatch(f[0], p) for p in patterns)]
    if not selected:
        ap.error(f"--only matched nothing; fixtures: {', '.join(f[0] for f in FIXTURES)}")
    os.makedirs(os.path.join(args.out, "fixtures"), exist_ok=True)
    for name, _, config in selected:
        est = check_spec(name, config)
        print(f"{name}: {len(tensor_table(config))} tensors, ~{est} bytes", flush=True)
    if args.dry_run:
        for name, _, config in selected:
            os.makedirs(os.path.join(args.out, "fixtures", name), exist_ok=True)
            with open(os.path.join(args.out, "fixtures", name, "config.json"), "w") as f:
                json.dump(config, f, indent=2)
            with open(os.path.join(args.out, "fixtures", name, "tensors.dry.json"), "w") as f:
                json.dump([[n, s] for n, s, _ in tensor_table(config)], f)
        print("dry run: configs written, no weights or goldens")
        return 0

    if any(qwen3next.is_hybrid(c) for _, _, c in selected):
        # transformers' Gated DeltaNet picks fla / causal_conv1d over its torch code when importable.
        qwen3next.block_optional_kernels(sys.modules)
    import torch
    import transformers
    import safetensors.torch as safetensors_torch
    torch.manual_seed(0)
    versions = dict(python=platform.python_version(), torch=torch.__version__, transformers=transformers.__version__,
                    platform=platform.platform())
    try:
        import safetensors
        versions["safetensors"] = safetensors.__version__
    except Exception:  # noqa: BLE001
        pass
    print("versions:", json.dumps(versions), flush=True)
    results = []
    for name, desc, config in selected:
        t0 = time.time()
        print(f"== {name}", flush=True)
        try:
            r = run_fixture(torch, transformers, safetensors_torch, name, desc, config, args.out, args.seed, args.attempts, versions)
        except Exception as e:  # noqa: BLE001 - report and continue with the next fixture
            traceback.print_exc()
            r = dict(name=name, ok=False, error=f"{type(e).__name__}: {e}")
            bad = os.path.join(args.out, "fixtures", name, "golden.json")
            if os.path.exists(bad):
                os.remove(bad)
        r["seconds"] = round(time.time() - t0, 1)
        results.append(r)
    done = [r["name"] for r in results if r["ok"]]
    tar = pack(args.out, done) if done else None
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(dict(versions=versions, results=results, tarball=tar), f, indent=2)
    print("\nsummary:")
    for r in results:
        print(f"  {r['name']:24s} {'ok' if r['ok'] else 'FAILED: ' + r['error']}"
              + (f" (margin {'ok' if r['marginOk'] else 'LOW'}, variety {'ok' if r['varietyOk'] else 'LOW'}, {r['bytes']} bytes)" if r["ok"] else ""))
    print(f"packed {len(done)} fixtures into {tar}" if tar else "no fixture succeeded")
    if args.install:
        for n in done:
            dst = os.path.join(args.install, n)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(os.path.join(args.out, "fixtures", n), dst)
        print(f"installed {len(done)} fixtures into {args.install}: {', '.join(done) or '-'}")
    return 0 if len(done) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
