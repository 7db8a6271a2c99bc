"""The transformers side of train.py, kept thin: the config, loading a checkpoint, and the
check that the exported checkpoint loads back as Qwen3MoeForCausalLM and computes what
was trained.

The config is written in the transformers 4 layout of tools/golden's fixtures (rope_theta,
num_experts, torch_dtype): transformers 5.17 loads it (the golden fixtures were made that
way), and so does our engine. train.py trains trainlib.fast_moe's model from the same
config dict; export_verified proves on every run that transformers, loading the exported
files, computes the same logits."""
import contextlib
import json
import os

import torch

from trainlib import export, fast_moe

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


def eager_experts(model):
    """transformers 5 can run experts as grouped GEMMs; the reference loop (F.linear per
    expert) computes exactly in fp32, as our engine does. Returns the implementation in
    effect (None where the version has no choice)."""
    fn = getattr(model, "set_experts_implementation", None)
    if callable(fn):
        try:
            fn("eager")
        except Exception as err:  # noqa: BLE001 - the equivalence check tells whether the default works
            print(f"[train] note: set_experts_implementation('eager') failed ({err}); keeping the default", flush=True)
    return getattr(model.config, "_experts_implementation", None)


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


@contextlib.contextmanager
def exact_fp32():
    """TF32 off for the duration (train.py trains with it on; reference numbers are fp32)."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def export_verified(model, out_dir, max_shard_bytes, device, probe_ids):
    """Writes the trained model in the Hub layout, reloads it with transformers'
    from_pretrained and requires transformers' fp32 logits on probe_ids to equal the
    trained model's (bf16 weights) within fast_moe.EQUIVALENCE_TOLERANCE: the check that
    what was trained is the Qwen3-MoE transformers runs. Returns (files, rel_error, model)."""
    files = export.write_checkpoint(out_dir, model.hub_tensors(), max_shard_bytes)
    loaded = load_checkpoint(out_dir, device)
    with exact_fp32():
        err = fast_moe.equivalence(model, lambda ids: loaded(input_ids=ids, use_cache=False).logits, probe_ids.to(device))
    if not err <= fast_moe.EQUIVALENCE_TOLERANCE:
        raise RuntimeError(f"transformers' logits on the exported checkpoint differ from the trained model's: relative error {err:.3g} > {fast_moe.EQUIVALENCE_TOLERANCE:g}")
    return files, err, loaded
