"""The transformers side of train.py, kept thin: the config, the model, its forward, and
the check that the exported checkpoint loads back as Qwen3MoeForCausalLM with exactly
the trained weights.

The config is written in the transformers 4 layout of tools/golden's fixtures (rope_theta,
num_experts, torch_dtype): transformers 5.17 loads it (the golden fixtures were made that
way), and so does our engine. The model is built from that same file through AutoConfig,
so what is trained is what is shipped."""
import json
import math
import os
import tempfile

import torch

from trainlib import export

ARCH = "Qwen3MoeForCausalLM"


def config_dict(dims, vocab_size, eos_ids, pad_id):
    heads, hidden = dims["heads"], dims["hidden"]
    if hidden % heads or hidden // heads != dims["head_dim"]:
        raise ValueError(f"hidden {hidden} / heads {heads} must equal head_dim {dims['head_dim']} (older transformers derive it)")
    return {
        "architectures": [ARCH],
        "model_type": "qwen3_moe",
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "intermediate_size": dims["dense_intermediate"],
        "num_hidden_layers": dims["layers"],
        "num_attention_heads": heads,
        "num_key_value_heads": dims["kv_heads"],
        "head_dim": dims["head_dim"],
        "hidden_act": "silu",
        "max_position_embeddings": dims["max_positions"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "use_sliding_window": False,
        "sliding_window": None,
        "decoder_sparse_step": 1,
        "mlp_only_layers": list(dims["dense_layers"]),
        "num_experts": dims["experts"],
        "num_experts_per_tok": dims["top_k"],
        "moe_intermediate_size": dims["moe_intermediate"],
        "norm_topk_prob": True,
        "output_router_logits": False,
        "router_aux_loss_coef": dims["aux_loss_coef"],
        "tie_word_embeddings": True,
        "initializer_range": 0.02,
        "use_cache": True,
        "bos_token_id": None,
        "eos_token_id": list(eos_ids),
        "pad_token_id": pad_id,
        "torch_dtype": "bfloat16",
    }


def generation_config(eos_ids, pad_id):
    return {"eos_token_id": list(eos_ids), "pad_token_id": pad_id, "bos_token_id": None}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def _auto_model_call(fn, *args, attn="sdpa", **kw):
    """transformers 5 names it dtype=, 4.x torch_dtype=; the last tries drop what a
    version refuses (the model is made fp32 afterwards either way)."""
    last = None
    for extra in ({"dtype": torch.float32, "attn_implementation": attn}, {"torch_dtype": torch.float32, "attn_implementation": attn}, {"attn_implementation": attn}, {}):
        try:
            return fn(*args, **extra, **kw)
        except TypeError as err:
            last = err
    raise RuntimeError(f"transformers refused the model arguments: {last}")


def build(cfg, seed, device):
    """A freshly initialised model (fp32 master weights) from config.json written to a temp dir."""
    import transformers

    with tempfile.TemporaryDirectory() as d:
        write_json(os.path.join(d, "config.json"), cfg)
        config = transformers.AutoConfig.from_pretrained(d)
    model = _auto_model_call(transformers.AutoModelForCausalLM.from_config, config).float()
    if type(model).__name__ != ARCH:
        raise RuntimeError(f"transformers built {type(model).__name__}, expected {ARCH}")
    tie(model)
    eager_experts(model)
    init_weights(model, cfg["num_hidden_layers"], seed)
    return model.to(device)


def eager_experts(model):
    """transformers 5 can run experts as grouped GEMMs; the reference loop (F.linear per
    expert) works under bf16 autocast with fp32 weights and computes exactly in fp32.
    Returns the implementation in effect (None where the version has no choice)."""
    fn = getattr(model, "set_experts_implementation", None)
    if callable(fn):
        try:
            fn("eager")
        except Exception as err:  # noqa: BLE001 - the training-step probe tells whether the default works
            print(f"[train] note: set_experts_implementation('eager') failed ({err}); keeping the default", flush=True)
    return getattr(model.config, "_experts_implementation", None)


def tie(model):
    emb, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    if emb.data_ptr() != head.data_ptr():
        model.tie_weights()
    if model.get_input_embeddings().weight.data_ptr() != model.get_output_embeddings().weight.data_ptr():
        model.get_output_embeddings().weight = model.get_input_embeddings().weight


def init_weights(model, num_layers, seed):
    """Seeded init that does not depend on transformers' version: norms 1, everything
    else N(0, 0.02), output projections (o_proj, down_proj) scaled by 1/sqrt(2 * layers)."""
    g = torch.Generator().manual_seed(seed)
    seen = set()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.data_ptr() in seen:
                continue
            seen.add(p.data_ptr())
            if p.dim() == 1:
                p.fill_(1.0)
                continue
            std = 0.02 / math.sqrt(2 * num_layers) if ("o_proj" in name or "down_proj" in name) else 0.02
            p.copy_(torch.randn(p.shape, generator=g) * std)


def probe_router_loss(model, device):
    """Whether forward(output_router_logits=True) gives an aux_loss (load balancing)."""
    ids = torch.zeros((1, 8), dtype=torch.long, device=device)
    try:
        out = model(input_ids=ids, use_cache=False, output_router_logits=True)
    except TypeError:
        return False
    aux = getattr(out, "aux_loss", None)
    return torch.is_tensor(aux) and bool(torch.isfinite(aux).all())


def probe_training_step(model, device, router_loss):
    """One forward and backward under bf16 autocast (as the training loop runs them), gradients dropped."""
    ids = torch.randint(3, min(100, model.config.vocab_size), (2, 64), device=device, generator=torch.Generator(device=device).manual_seed(0))
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        logits, aux = forward(model, ids, router_loss)
    loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids.reshape(-1))
    if aux is not None:
        loss = loss + 0.01 * aux.float()
    loss.backward()
    params = list(model.named_parameters())
    bad = [n for n, p in params if p.grad is not None and not torch.isfinite(p.grad).all()]
    missing = [n for n, p in params if p.grad is None]  # an expert no token chose has none (per-expert layouts)
    model.zero_grad(set_to_none=True)
    if bad or len(missing) > len(params) // 2:
        raise RuntimeError(f"a bf16 training step gives non-finite gradients for {bad[:4]} and none for {len(missing)} of {len(params)} parameters ({missing[:4]})")


def forward(model, ids, router_loss):
    """(logits, aux_loss or None)."""
    if router_loss:
        out = model(input_ids=ids, use_cache=False, output_router_logits=True)
        return out.logits, out.aux_loss
    return model(input_ids=ids, use_cache=False).logits, None


def load_checkpoint(model_dir, device, attn="eager"):
    """transformers' from_pretrained in fp32 (the engine's compute type on the bf16 weights)."""
    import transformers

    model, info = _auto_model_call(transformers.AutoModelForCausalLM.from_pretrained, model_dir, attn=attn, output_loading_info=True)
    bad = {k: v for k, v in (info or {}).items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")}
    if bad:
        raise RuntimeError(f"transformers did not load the checkpoint as written: {bad}")
    if type(model).__name__ != ARCH:
        raise RuntimeError(f"transformers loaded {type(model).__name__}, expected {ARCH}")
    eager_experts(model)
    return model.float().to(device).eval()


def parameter_mismatch(trained, loaded):
    """Largest |difference| between the bf16-rounded trained parameters and the loaded ones."""
    want = {k: v.detach() for k, v in trained.state_dict().items()}
    got = loaded.state_dict()
    if set(want) != set(got):
        return float("inf"), f"parameter names differ: {sorted(set(want) ^ set(got))[:6]}"
    worst = 0.0
    for k, v in want.items():
        if v.shape != got[k].shape:
            return float("inf"), f"{k}: shape {list(v.shape)} vs {list(got[k].shape)}"
        d = (v.to(torch.bfloat16).float() - got[k].float().to(v.device)).abs().max().item()
        worst = max(worst, d)
    return worst, None


def export_verified(model, cfg, out_dir, max_shard_bytes, device):
    """Writes the weights in the hub layout and reloads them with transformers until the
    loaded parameters equal the trained ones (bf16) exactly. Returns (files, layout, model)."""
    state = model.state_dict()
    fused = any(k.endswith("experts.gate_up_proj") for k in state)
    tried = []
    for layout in export.GATE_UP_LAYOUTS if fused else ("per_expert",):
        tensors = export.hub_tensors(state, cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["tie_word_embeddings"], layout if fused else "gate_then_up")
        files = export.write_checkpoint(out_dir, tensors, max_shard_bytes)
        loaded = load_checkpoint(out_dir, device)
        worst, why = parameter_mismatch(model, loaded)
        if worst == 0.0:
            return files, layout, loaded
        tried.append(f"{layout}: {why or f'max difference {worst:.3g}'}")
        del loaded
    raise RuntimeError(f"no expert layout reloads to the trained weights ({'; '.join(tried)})")
