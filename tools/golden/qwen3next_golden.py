"""Qwen3-Next / Qwen3.5-MoE parts of the golden fixture generator (make_golden.py imports this).

Written against transformers 5.x's native Qwen3NextForCausalLM and Qwen3_5MoeForConditionalGeneration
/ Qwen3_5MoeForCausalLM (Qwen3NextConfig, Qwen3_5MoeConfig with Qwen3_5MoeTextConfig; no remote code).
What those classes do, and so what the fixtures pin down:

- Hybrid layers (config layer_types, or every full_attention_interval-th layer full): Gated DeltaNet
  "linear_attention" layers and gated "full_attention" layers.
- Gated DeltaNet: Qwen3-Next projects grouped per key head (in_proj_qkvz: per key head
  [q | k | v of its Hv/Hk value heads | z of them], in_proj_ba: per key head [b ... | a ...]);
  Qwen3.5 split (in_proj_qkv = [q | k | v], in_proj_z, in_proj_b, in_proj_a). A depthwise causal
  conv (conv1d [C, 1, K], no bias) + SiLU over the q|k|v channels; q, k l2-normalised (eps 1e-6),
  q scaled by Dk ** -0.5; beta = sigmoid(b); g = -exp(A_log) * softplus(a + dt_bias); the gated
  delta rule with state [Hv, Dk, Dv]; out = RMSNormGated(o) (plain weight, eps rms_norm_eps) *
  silu(z); out_proj.
- Gated attention: q_proj gives per head [query | gate]; q_norm / k_norm (1 + w) per head; partial
  RoPE (rotate-half on the first head_dim x partial_rotary_factor dims); o_proj(attn * sigmoid(gate)).
- Every RMSNorm but the gated one scales by (1 + w) (transformers inits w at 0).
- MoE: softmax top-k over num_experts (Qwen3-Next renormalises when norm_topk_prob, Qwen3.5 always),
  plus a shared expert (mlp.shared_expert, singular) scaled by sigmoid(shared_expert_gate(x)).
  Qwen3-Next: a dense MLP of intermediate_size on mlp_only_layers. transformers 5 keeps the experts
  fused (gate_up_proj [E, 2I, H], down_proj [E, H, I]); the Qwen3-Next fixture is written per expert
  as the published Qwen3-Next checkpoints are (transformers merges them on load, the qwen2_moe
  conversion), the Qwen3.5 one fused as the published Qwen3.5 checkpoints are.
- Qwen3.5-MoE as published: config.json of Qwen3_5MoeForConditionalGeneration (text_config +
  vision_config), weights under model.language_model.* and lm_head.weight; no vision weights are
  written (the engine serves text only). The reference is Qwen3_5MoeForConditionalGeneration with
  its (tiny, randomly initialised, unused) vision tower, or, if that fails to load or run,
  Qwen3_5MoeForCausalLM through AutoModelForCausalLM (which reads text_config and strips the
  language_model prefix). golden.json records which (referenceClass).
- The recurrent path: transformers continues from its cached state only for one-token steps. The
  greedy loop (make_golden.greedy) runs a full forward over the growing sequence each step (the
  chunked delta rule from a zero state, no cache); kvCacheCrossCheck runs transformers' generate()
  (one prefill, then one-token steps on the cached conv / recurrent state) and must agree.
- The torch implementations of the conv and the delta rule: make_golden.py hides the optional
  fla / causal_conv1d packages (block_optional_kernels) before importing transformers, so the
  reference never runs their CUDA kernels (the generator computes on CPU in fp32).
"""
import math

VOCAB = 512
BOS, EOS = 0, 1
HYBRID_ARCHS = ("Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration")
# Modules transformers would use instead of its torch GDN code when importable.
OPTIONAL_KERNEL_PACKAGES = ("fla", "causal_conv1d")
# transformers 5 runs the routed experts through torch's grouped_mm (16-byte strides in fp32).
GROUPED_MM_ALIGN = 4
LINEAR, FULL = "linear_attention", "full_attention"
# Scale of the router weights over make_golden's unit-gain linear init (init_tensor "wide_router").
ROUTER_GAIN = 4.0
# Seeds make_golden tries at least for these fixtures: besides its logit / router margins and variety
# it wants at most MAX_NEAR_TIES_PER_CASE router near-ties per prompt, which few seeds give (about
# one in 10 to 20 for the shapes below; the random routers' k-th / (k+1)-th gap falls inside the
# bf16 band at ~1-3% of position x MoE layer choices, fewer with fewer experts).
MIN_SEED_ATTEMPTS = 100


def qwen3_next(**o):
    c = dict(architectures=["Qwen3NextForCausalLM"], model_type="qwen3_next", vocab_size=VOCAB, hidden_act="silu",
             rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=512, attention_bias=False,
             attention_dropout=0.0, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True,
             initializer_range=0.02, bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False)
    c.update(o)
    return c


def qwen3_5_moe(text, vision=None, **top):
    """Qwen3_5MoeForConditionalGeneration: the language model in text_config, a tiny vision tower."""
    t = dict(model_type="qwen3_5_moe_text", vocab_size=VOCAB, hidden_act="silu", rms_norm_eps=1e-6,
             max_position_embeddings=512, attention_bias=False, attention_dropout=0.0, initializer_range=0.02,
             bos_token_id=BOS, eos_token_id=EOS)
    t.update(text)
    v = dict(model_type="qwen3_5_moe", depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
             out_hidden_size=t["hidden_size"], num_position_embeddings=64)
    v.update(vision or {})
    c = dict(architectures=["Qwen3_5MoeForConditionalGeneration"], model_type="qwen3_5_moe", tie_word_embeddings=False,
             text_config=t, vision_config=v)
    c.update(top)
    return c


FIXTURES = [
    ("qwen3_next_hybrid", "Qwen3-Next (grouped in_proj_qkvz / in_proj_ba): 4 layers from full_attention_interval 4 "
     "(linear, linear, linear, full); hidden 56; gated attention 4 q / 2 kv heads of 16, partial RoPE 0.25 (4 dims); "
     "Gated DeltaNet Hk 2 / Hv 4, Dk 16 / Dv 12, conv 4; layers 0 and 3 MoE: 5 experts top-2 of 20 renormalised + gated "
     "shared expert of 36; layers 1, 2 a dense MLP of 72 (mlp_only_layers); experts per expert as published; tied embeddings",
     qwen3_next(hidden_size=56, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                partial_rotary_factor=0.25, full_attention_interval=4, linear_num_key_heads=2, linear_num_value_heads=4,
                linear_key_head_dim=16, linear_value_head_dim=12, linear_conv_kernel_dim=4, intermediate_size=72,
                num_experts=5, num_experts_per_tok=2, moe_intermediate_size=20, shared_expert_intermediate_size=36,
                mlp_only_layers=[1, 2], tie_word_embeddings=True)),
    ("qwen3_5_moe_hybrid", "Qwen3.5-MoE (Qwen3_5MoeForConditionalGeneration, text only; split in_proj_qkv / z / b / a): "
     "text_config with layer_types linear, linear, full, linear; hidden 48; gated attention 3 q / 1 kv heads of 20, "
     "rope_parameters with partial_rotary_factor 0.5 (10 dims) and mrope_section [2, 2, 1]; Gated DeltaNet Hk 2 / Hv 6, "
     "Dk 12 / Dv 20, conv 4; 3 experts top-2 of 24 (always renormalised) + gated shared expert of 28, fused experts "
     "(gate_up_proj / down_proj) under model.language_model.* as published; untied LM head; a tiny vision_config, no vision weights",
     qwen3_5_moe(dict(hidden_size=48, num_hidden_layers=4, num_attention_heads=3, num_key_value_heads=1, head_dim=20,
                      layer_types=[LINEAR, LINEAR, FULL, LINEAR],
                      rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5,
                                           mrope_section=[2, 2, 1], mrope_interleaved=True),
                      linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=12, linear_value_head_dim=20,
                      linear_conv_kernel_dim=4, num_experts=3, num_experts_per_tok=2, moe_intermediate_size=24,
                      shared_expert_intermediate_size=28))),
]


def is_hybrid(c):
    return c["architectures"][0] in HYBRID_ARCHS


def is_composite(c):
    return "text_config" in c


def text_view(c):
    """The language model's config: text_config with the top level's architectures and
    tie_word_embeddings (as the engine's flattenTextConfig reads it); c itself otherwise."""
    if not is_composite(c):
        return c
    top = {k: v for k, v in c.items() if k not in ("text_config", "vision_config")}
    flat = dict(top, **c["text_config"])
    flat["architectures"] = c["architectures"]
    if "tie_word_embeddings" in c:
        flat["tie_word_embeddings"] = c["tie_word_embeddings"]
    return flat


def layer_types(c):
    c = text_view(c)
    if c.get("layer_types"):
        return list(c["layer_types"])
    interval = c.get("full_attention_interval", 4)
    return [FULL if (l + 1) % interval == 0 else LINEAR for l in range(c["num_hidden_layers"])]


def moe_layers(c):
    c = text_view(c)
    n = c["num_hidden_layers"]
    if c["architectures"][0] == "Qwen3_5MoeForConditionalGeneration":
        return [True] * n
    step, only = c.get("decoder_sparse_step", 1), set(c.get("mlp_only_layers", []))
    return [(l not in only) and c["num_experts"] > 0 and (l + 1) % step == 0 for l in range(n)]


def rotary_factor(c):
    c = text_view(c)
    rp = c.get("rope_parameters") or {}
    return rp.get("partial_rotary_factor", c.get("partial_rotary_factor", 0.25))


def _mlp(p, inter, h):
    return [(f"{p}gate_proj.weight", [inter, h], "linear"), (f"{p}up_proj.weight", [inter, h], "linear"),
            (f"{p}down_proj.weight", [h, inter], "linear")]


def tensor_table(c):
    """[(name, shape, kind)] in checkpoint order, as the published checkpoints name them (the
    engine's family table, native/src/checkpoint/families.ts). Kinds beyond make_golden's:
    unit_norm ((1 + w) RMSNorms), conv, a_log, dt_bias, wide_router."""
    split = is_composite(c)
    t = text_view(c)
    prefix = "model.language_model." if split else "model."
    h, v = t["hidden_size"], t["vocab_size"]
    hd, nh, nkv = t["head_dim"], t["num_attention_heads"], t["num_key_value_heads"]
    hk, hv, dk, dv, kw = (t["linear_num_key_heads"], t["linear_num_value_heads"], t["linear_key_head_dim"],
                          t["linear_value_head_dim"], t["linear_conv_kernel_dim"])
    key, value = hk * dk, hv * dv
    conv = 2 * key + value
    out = [(f"{prefix}embed_tokens.weight", [v, h], "embed")]
    for l, (kind, is_moe) in enumerate(zip(layer_types(c), moe_layers(c))):
        p = f"{prefix}layers.{l}."
        out.append((f"{p}input_layernorm.weight", [h], "unit_norm"))
        if kind == LINEAR:
            a = f"{p}linear_attn."
            if split:
                out += [(f"{a}in_proj_qkv.weight", [conv, h], "linear"), (f"{a}in_proj_z.weight", [value, h], "linear"),
                        (f"{a}in_proj_b.weight", [hv, h], "linear"), (f"{a}in_proj_a.weight", [hv, h], "linear")]
            else:
                out += [(f"{a}in_proj_qkvz.weight", [2 * key + 2 * value, h], "linear"),
                        (f"{a}in_proj_ba.weight", [2 * hv, h], "linear")]
            out += [(f"{a}conv1d.weight", [conv, 1, kw], "conv"), (f"{a}dt_bias", [hv], "dt_bias"),
                    (f"{a}A_log", [hv], "a_log"), (f"{a}norm.weight", [dv], "norm"),
                    (f"{a}out_proj.weight", [h, value], "linear")]
        else:
            a = f"{p}self_attn."
            out += [(f"{a}q_proj.weight", [2 * nh * hd, h], "linear"), (f"{a}k_proj.weight", [nkv * hd, h], "linear"),
                    (f"{a}v_proj.weight", [nkv * hd, h], "linear"), (f"{a}o_proj.weight", [h, nh * hd], "linear"),
                    (f"{a}q_norm.weight", [hd], "unit_norm"), (f"{a}k_norm.weight", [hd], "unit_norm")]
        out.append((f"{p}post_attention_layernorm.weight", [h], "unit_norm"))
        if is_moe:
            e, im = t["num_experts"], t["moe_intermediate_size"]
            out.append((f"{p}mlp.gate.weight", [e, h], "wide_router"))
            if split:
                out += [(f"{p}mlp.experts.gate_up_proj", [e, 2 * im, h], "linear"),
                        (f"{p}mlp.experts.down_proj", [e, h, im], "linear")]
            else:
                for i in range(e):
                    out += _mlp(f"{p}mlp.experts.{i}.", im, h)
            out += _mlp(f"{p}mlp.shared_expert.", t["shared_expert_intermediate_size"], h)
            out.append((f"{p}mlp.shared_expert_gate.weight", [1, h], "linear"))
        else:
            out += _mlp(f"{p}mlp.", t["intermediate_size"], h)
    out.append((f"{prefix}norm.weight", [h], "unit_norm"))
    if not t.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [v, h], "lm_head"))
    return out


def check_spec(name, c):
    """The hybrid fixtures' own rules (on top of make_golden.check_spec's)."""
    t = text_view(c)
    types = layer_types(c)
    assert len(types) == t["num_hidden_layers"] and set(types) <= {LINEAR, FULL}, f"{name}: bad layer types {types}"
    assert LINEAR in types and FULL in types, f"{name}: needs both Gated DeltaNet and full-attention layers"
    assert types[0] == LINEAR, f"{name}: the first layer should be a Gated DeltaNet layer"
    assert t["linear_num_value_heads"] % t["linear_num_key_heads"] == 0, f"{name}: Hv must be a multiple of Hk"
    rot = int(t["head_dim"] * rotary_factor(c))
    assert rot >= 2 and rot % 2 == 0 and rot < t["head_dim"], f"{name}: partial RoPE must rotate an even part of head_dim, got {rot}"
    rp = t.get("rope_parameters") or {}
    if "mrope_section" in rp:
        assert sum(rp["mrope_section"]) == rot // 2, f"{name}: mrope_section must sum to the rotary frequencies ({rot // 2})"
    assert any(moe_layers(c)), f"{name}: needs MoE layers"
    for field in ("hidden_size", "moe_intermediate_size"):
        assert t[field] % GROUPED_MM_ALIGN == 0, f"{name}: {field} {t[field]} must be a multiple of {GROUPED_MM_ALIGN} (grouped_mm)"
    if is_composite(c):
        assert not c.get("tie_word_embeddings"), f"{name}: keep the composite fixture untied (tie_word_embeddings lives at the top level)"
        assert c["vision_config"]["out_hidden_size"] == t["hidden_size"], f"{name}: vision out_hidden_size must be the text hidden size"


def init_tensor(torch, kind, shape, g):
    """Init for the kinds only the hybrid models have; None for the shared kinds. Chosen so the
    reference is well conditioned: (1 + w) norms near scale 1, a conv of unit gain, and decays
    exp(g) spread over (0.45, 0.999) per token so the recurrent state carries far."""
    if kind == "wide_router":
        # Router logits of std ~ROUTER_GAIN: the k-th / (k+1)-th gaps grow with it, so ~500 routing
        # choices per seed clear make_golden's absolute 2e-3 margin (at gain 1 no seed of 12 did).
        return (ROUTER_GAIN * torch.randn(*shape, generator=g) / math.sqrt(shape[-1])).to(torch.bfloat16).contiguous()
    if kind == "unit_norm":
        return (0.1 * torch.randn(*shape, generator=g)).to(torch.bfloat16).contiguous()
    if kind == "conv":
        return (torch.randn(*shape, generator=g) / math.sqrt(shape[-1])).to(torch.bfloat16).contiguous()
    if kind == "a_log":  # A in [1, 8]
        return (1.0 + 7.0 * torch.rand(*shape, generator=g)).log().to(torch.bfloat16).contiguous()
    if kind == "dt_bias":  # softplus(dt_bias) = dt, dt log-uniform in [1e-3, 1e-1] (Mamba's inverse-softplus init)
        dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3)) * torch.rand(*shape, generator=g))
        return (dt + torch.log(-torch.expm1(-dt))).to(torch.bfloat16).contiguous()
    return None


def block_optional_kernels(sys_modules):
    """Make fla / causal_conv1d unimportable before transformers is imported, so its
    Gated DeltaNet uses the torch code (its fallback order: hub kernels, these, torch)."""
    for name in OPTIONAL_KERNEL_PACKAGES:
        if name not in sys_modules:
            sys_modules[name] = None


def reference_candidates(transformers, c):
    """(label, loader class, parameter-name prefixes not from the checkpoint) in the order tried."""
    if c["architectures"][0] == "Qwen3NextForCausalLM":
        return [("Qwen3NextForCausalLM", getattr(transformers, "Qwen3NextForCausalLM", None), ())]
    return [("Qwen3_5MoeForConditionalGeneration", getattr(transformers, "Qwen3_5MoeForConditionalGeneration", None), ("model.visual.",)),
            ("Qwen3_5MoeForCausalLM", transformers.AutoModelForCausalLM, ())]


def load_reference(torch, transformers, d, c, from_pretrained):
    """The first candidate class that loads the checkpoint as written and runs a forward.
    from_pretrained(cls, d) -> (model, loading info or None) is make_golden's loader. Sets
    model._afd_reference_class and model._afd_ignored_prefixes (check_loaded skips those)."""
    errors = []
    for label, cls, ignored in reference_candidates(transformers, c):
        if cls is None:
            errors.append(f"{label}: not in this transformers")
            continue
        try:
            model, info = from_pretrained(cls, d)
            if type(model).__name__ != label:
                raise RuntimeError(f"transformers built {type(model).__name__}, expected {label}")
            bad = {}
            for k, v in (info or {}).items():
                if k not in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs") or not v:
                    continue
                rest = [x for x in v if not (isinstance(x, str) and x.startswith(ignored))] if ignored and k == "missing_keys" else list(v)
                if rest:
                    bad[k] = rest
            if bad:
                raise RuntimeError(f"transformers did not load the checkpoint as written: {bad}")
            if next(model.parameters()).dtype != torch.float32:
                model = model.float()
            model.eval()
            with torch.no_grad():
                model(input_ids=torch.tensor([[2, 3, 4]]), use_cache=False)
            model._afd_reference_class = label
            model._afd_ignored_prefixes = tuple(ignored)
            return model
        except Exception as e:  # noqa: BLE001 - try the next class, report all if none works
            errors.append(f"{label}: {type(e).__name__}: {e}")
            print(f"  reference {label} failed: {type(e).__name__}: {e}", flush=True)
    raise RuntimeError("no reference class worked: " + " | ".join(errors))


def hf_config_json(transformers, d):
    """The whole config as the installed transformers saves it (composite configs included)."""
    return transformers.AutoConfig.from_pretrained(d).to_json_string()


def describe_shapes(c):
    t = text_view(c)
    return (f"layers {','.join('L' if x == LINEAR else 'F' for x in layer_types(c))}; GDN Hk {t['linear_num_key_heads']} / "
            f"Hv {t['linear_num_value_heads']}, Dk {t['linear_key_head_dim']} / Dv {t['linear_value_head_dim']}")
