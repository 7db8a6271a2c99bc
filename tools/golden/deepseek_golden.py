"""DeepSeek-V2 / V3 parts of the golden fixture generator (make_golden.py imports this).

Written against transformers 5.x's native DeepseekV2ForCausalLM / DeepseekV3ForCausalLM
(DeepseekV2Config / DeepseekV3Config; no remote code). What those classes do, and so what
the fixtures pin down:

- MLA attention: q_proj (q_lora_rank null) or q_a_proj -> q_a_layernorm -> q_b_proj;
  kv_a_proj_with_mqa -> [latent | k_pe], kv_a_layernorm on the latent, kv_b_proj -> per
  head [k_nope | v]; RoPE on the rope part only (V2: interleaved pairs; V3: interleaved
  when rope_interleave, the default, else rotate-half); softmax scale
  qk_head_dim ** -0.5, times mscale(factor, mscale_all_dim) ** 2 under yarn (V3 only:
  transformers' V2 leaves the softmax scale alone, so no V2 fixture uses yarn).
- MoE from layer first_k_dense_replace on (transformers ignores moe_layer_freq, so the
  fixtures keep it 1); shared experts of moe_intermediate_size * n_shared_experts;
  V2 routes softmax greedy or group_limited_greedy (group score = max) and never
  renormalises; V3 always routes sigmoid + e_score_correction_bias, noaux_tc (group
  score = sum of the top 2), weights from the unbiased scores, renormalised when
  norm_topk_prob; both multiply by routed_scaling_factor.
- Experts in the Hub layout (mlp.experts.{e}.gate_proj ...): transformers 5 merges them
  into its fused 3-D parameters on load (the qwen2_moe conversion pattern).
"""
import math

VOCAB = 512
BOS, EOS = 0, 1
# Router selections are compared in score units (softmax probabilities or sigmoid
# scores, 0..1): an fp32 engine differs from the reference by ~1e-6 there.
ROUTER_SCORE_MARGIN = 2e-5
# Elements per 16 bytes in fp32 (the reference's dtype): grouped_mm's stride alignment.
GROUPED_MM_ALIGN = 4


def _finish(c, o):
    c.update(vocab_size=VOCAB, hidden_act="silu", rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=512,
             attention_bias=False, attention_dropout=0.0, bos_token_id=BOS, eos_token_id=EOS, tie_word_embeddings=False,
             moe_layer_freq=1, initializer_range=0.02)
    c.update(o)
    # MLA has one latent per token; transformers' eager attention needs kv heads == q heads.
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    return c


def deepseek_v2(**o):
    return _finish(dict(architectures=["DeepseekV2ForCausalLM"], model_type="deepseek_v2", topk_method="greedy",
                        scoring_func="softmax", n_group=1, topk_group=1, norm_topk_prob=False,
                        routed_scaling_factor=1.0), o)


def deepseek_v3(**o):
    return _finish(dict(architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3", topk_method="noaux_tc",
                        scoring_func="sigmoid", norm_topk_prob=True, routed_scaling_factor=2.5,
                        rope_interleave=True), o)


# name, description, config. Odd sizes: hidden not a power of two, kv_lora / rope / v
# dims all different and small, expert counts not a multiple of 8.
FIXTURES = [
    ("deepseek_v2_lite_like", "DeepSeek-V2-Lite layout: q_lora null, kv_lora 24, nope 12 / rope 8 / v 10, 4 heads, hidden 72, "
     "layer 0 dense (first_k_dense_replace 1), 10 routed experts top-3 softmax greedy + 2 shared, not renormalised",
     deepseek_v2(hidden_size=72, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96, q_lora_rank=None,
                 kv_lora_rank=24, qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10, n_routed_experts=10,
                 n_shared_experts=2, num_experts_per_tok=3, moe_intermediate_size=20, first_k_dense_replace=1)),
    ("deepseek_v2_grouped", "DeepSeek-V2 with q_lora 20 (q_a_layernorm), group_limited_greedy over 3 groups keeping 2, "
     "9 experts top-2, routed_scaling_factor 1.5, 1 shared; kv_lora 28, nope 16 / rope 6 / v 14, 5 heads, hidden 80",
     deepseek_v2(hidden_size=80, num_hidden_layers=3, num_attention_heads=5, intermediate_size=112, q_lora_rank=20,
                 kv_lora_rank=28, qk_nope_head_dim=16, qk_rope_head_dim=6, v_head_dim=14, n_routed_experts=9,
                 n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=24, first_k_dense_replace=1,
                 topk_method="group_limited_greedy", n_group=3, topk_group=2, routed_scaling_factor=1.5)),
    ("deepseek_v3_yarn", "DeepSeek-V3 layout: q_lora 24, kv_lora 20, nope 10 / rope 8 / v 12, 4 heads, hidden 88; "
     "yarn (factor 4, original 64, mscale 1, mscale_all_dim 0.8: cos/sin and softmax scale both change); "
     "noaux_tc sigmoid with e_score_correction_bias (f32), 12 experts in 4 groups keeping 2, top-3 renormalised x 2.5, 1 shared",
     deepseek_v3(hidden_size=88, num_hidden_layers=3, num_attention_heads=4, intermediate_size=120, q_lora_rank=24,
                 kv_lora_rank=20, qk_nope_head_dim=10, qk_rope_head_dim=8, v_head_dim=12, n_routed_experts=12,
                 n_shared_experts=1, num_experts_per_tok=3, moe_intermediate_size=20, first_k_dense_replace=1,
                 n_group=4, topk_group=2, max_position_embeddings=256,
                 rope_scaling=dict(type="yarn", factor=4.0, original_max_position_embeddings=64, beta_fast=32,
                                   beta_slow=1, mscale=1.0, mscale_all_dim=0.8))),
    # Hidden 48 and expert width 24: transformers 5 runs the routed experts through
    # torch's grouped_mm, whose operands need strides of 16 bytes (hidden 66 / width 18
    # failed there: "strides should be multiple of 16 bytes"); multiples of 8 hold in
    # bf16 too. The odd hidden sizes stay covered by the other fixtures (72, 80, 88).
    ("deepseek_v3_dense2", "DeepSeek-V3 with q_lora null and rope_interleave false (rotate-half RoPE), first 2 layers dense, "
     "10 experts in 2 groups keeping 1, top-2 not renormalised, 2 shared; kv_lora 16, nope 8 / rope 4 / v 8, 6 heads, hidden 48; "
     "rms_norm_eps 1e-5 (the q_a / kv_a layernorms keep their own 1e-6)",
     deepseek_v3(hidden_size=48, num_hidden_layers=3, num_attention_heads=6, intermediate_size=100, q_lora_rank=None,
                 kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=10,
                 n_shared_experts=2, num_experts_per_tok=2, moe_intermediate_size=24, first_k_dense_replace=2,
                 n_group=2, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0, rope_interleave=False,
                 rms_norm_eps=1e-5)),
]


def is_deepseek(c):
    return c["architectures"][0] in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")


def is_v3(c):
    return c["architectures"][0] == "DeepseekV3ForCausalLM"


def moe_layers(c):
    first, freq = c.get("first_k_dense_replace", 0), c.get("moe_layer_freq", 1)
    return [l >= first and l % freq == 0 for l in range(c["num_hidden_layers"])]


def mlp_tensors(p, inter, h):
    """gate / up / down of one SiLU MLP under the name prefix p (Hub names)."""
    return [(f"{p}gate_proj.weight", [inter, h], "linear"), (f"{p}up_proj.weight", [inter, h], "linear"),
            (f"{p}down_proj.weight", [h, inter], "linear")]


def final_tensors(c):
    """The final norm and (untied) LM head."""
    out = [("model.norm.weight", [c["hidden_size"]], "norm")]
    if not c.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [c["vocab_size"], c["hidden_size"]], "lm_head"))
    return out


def tensor_table(c):
    """[(name, shape, kind)] in checkpoint order (Hub layout of the DeepSeek checkpoints)."""
    h, v, heads = c["hidden_size"], c["vocab_size"], c["num_attention_heads"]
    kv_lora, nope, rope, vd = c["kv_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    q_lora = c.get("q_lora_rank")
    out = [("model.embed_tokens.weight", [v, h], "embed")]
    for l, is_moe in enumerate(moe_layers(c)):
        p = f"model.layers.{l}"
        out.append((f"{p}.input_layernorm.weight", [h], "norm"))
        if q_lora:
            out += [(f"{p}.self_attn.q_a_proj.weight", [q_lora, h], "linear"),
                    (f"{p}.self_attn.q_a_layernorm.weight", [q_lora], "norm"),
                    (f"{p}.self_attn.q_b_proj.weight", [heads * (nope + rope), q_lora], "linear")]
        else:
            out.append((f"{p}.self_attn.q_proj.weight", [heads * (nope + rope), h], "linear"))
        out += [(f"{p}.self_attn.kv_a_proj_with_mqa.weight", [kv_lora + rope, h], "linear"),
                (f"{p}.self_attn.kv_a_layernorm.weight", [kv_lora], "norm"),
                (f"{p}.self_attn.kv_b_proj.weight", [heads * (nope + vd), kv_lora], "linear"),
                (f"{p}.self_attn.o_proj.weight", [h, heads * vd], "linear"),
                (f"{p}.post_attention_layernorm.weight", [h], "norm")]
        if is_moe:
            e, im, shared = c["n_routed_experts"], c["moe_intermediate_size"], c["moe_intermediate_size"] * c["n_shared_experts"]
            out.append((f"{p}.mlp.gate.weight", [e, h], "router"))
            if is_v3(c):
                out.append((f"{p}.mlp.gate.e_score_correction_bias", [e], "score_bias"))
            for i in range(e):
                out += mlp_tensors(f"{p}.mlp.experts.{i}.", im, h)
            out += mlp_tensors(f"{p}.mlp.shared_experts.", shared, h)
        else:
            out += mlp_tensors(f"{p}.mlp.", c["intermediate_size"], h)
    return out + final_tensors(c)


def check_spec(name, c):
    """The DeepSeek fixtures' own rules (on top of make_golden.check_spec's)."""
    h, heads = c["hidden_size"], c["num_attention_heads"]
    assert h % heads == 0, f"{name}: DeepseekV2Config requires hidden_size % num_attention_heads == 0"
    assert c["num_key_value_heads"] == heads, f"{name}: MLA fixtures need num_key_value_heads == num_attention_heads"
    assert c["qk_rope_head_dim"] % 2 == 0, f"{name}: qk_rope_head_dim must be even"
    assert c["kv_lora_rank"] > 0, f"{name}: kv_lora_rank must be positive"
    assert c.get("moe_layer_freq", 1) == 1, f"{name}: transformers ignores moe_layer_freq; keep it 1"
    e, k = c["n_routed_experts"], c["num_experts_per_tok"]
    assert e % 8 != 0, f"{name}: expert count {e} must not be a multiple of 8"
    grouped = is_v3(c) or c.get("topk_method") == "group_limited_greedy"
    if grouped:
        g, tg = c["n_group"], c["topk_group"]
        assert e % g == 0 and 1 <= tg <= g, f"{name}: n_group {g} must divide {e} experts and topk_group {tg} be in [1, n_group]"
        assert tg * (e // g) >= k, f"{name}: {tg} groups of {e // g} experts cannot hold top-{k}"
        assert not is_v3(c) or e // g >= 2, f"{name}: noaux_tc scores groups by their top 2 experts"
    rs = c.get("rope_scaling")
    if rs:
        assert is_v3(c), f"{name}: transformers' DeepseekV2 ignores the yarn softmax scale; use yarn on V3 fixtures only"
        want = rs["factor"] * rs["original_max_position_embeddings"]
        assert c["max_position_embeddings"] == want, f"{name}: keep max_position_embeddings = factor x original ({want})"
    assert not c.get("attention_bias"), f"{name}: attention_bias is not part of the fixtures"
    # transformers' grouped_mm experts path (torch._grouped_mm) needs every operand stride
    # to be a multiple of 16 bytes: 4 elements in the fp32 the reference computes in.
    for field in ("hidden_size", "moe_intermediate_size"):
        assert c[field] % GROUPED_MM_ALIGN == 0, (f"{name}: {field} {c[field]} must be a multiple of {GROUPED_MM_ALIGN} "
                                                   "(grouped_mm strides are multiples of 16 bytes)")
    assert any(moe_layers(c)) and not all(moe_layers(c)), f"{name}: needs dense and MoE layers"


def init_tensor(torch, kind, shape, g):
    """Init for the kinds only DeepSeek has; None for the shared kinds."""
    if kind != "score_bias":
        return None
    # Small enough that sigmoid score + bias stays positive (transformers masks other
    # groups with 0.0, the engine with -inf; they agree while the chosen scores are > 0).
    # Kept in f32, as the DeepSeek-V3 checkpoints store it.
    return (0.05 * torch.randn(*shape, generator=g, dtype=torch.float32)).contiguous()


def patch_reference(model, c):
    """transformers 5's DeepseekV2Moe reads self.num_experts under group_limited_greedy but
    some versions never set it; set it (the value the routing assumes) where missing."""
    for mod in model.modules():
        if type(mod).__name__ in ("DeepseekV2Moe", "DeepseekV2MoE") and not hasattr(mod, "num_experts"):
            mod.num_experts = c["n_routed_experts"]


def loaded_buffers(model):
    """Buffers that hold checkpoint values (the others, rotary inv_freq, are computed)."""
    return [b for n, b in model.named_buffers() if n.endswith("e_score_correction_bias")]


def router_hooks(model, captured):
    """Capture (router logits [N, E] f32, correction bias or None) at every MoE block.
    Hooks the MoE module, not mlp.gate: transformers' V2 calls F.linear on the gate
    weight directly, so a hook on the gate would never fire."""
    handles = []
    for name, mod in model.named_modules():
        gate = getattr(mod, "gate", None)
        if not name.endswith(".mlp") or gate is None or not hasattr(gate, "weight") or not hasattr(mod, "experts"):
            continue

        def pre(m, args, kwargs=None):
            x = args[0] if args else None
            if x is None:
                return
            logits = x.detach().reshape(-1, x.shape[-1]).float() @ m.gate.weight.detach().float().t()
            bias = getattr(m.gate, "e_score_correction_bias", None)
            captured.append((logits, None if bias is None else bias.detach().float()))
        handles.append(mod.register_forward_pre_hook(pre))
    return handles


def route_gaps(torch, c, logits, bias):
    """Per token: the smallest gap (score units) of every choice the router makes for it
    (the topk_group-th vs the next group, and the k-th vs the next allowed expert; -1 when
    a chosen score is not above transformers' 0.0 fill of the masked experts), and the rms
    of its choice scores (the scale a relative margin is measured against)."""
    e, k = c["n_routed_experts"], c["num_experts_per_tok"]
    if is_v3(c):
        scores = logits.sigmoid()
        choice = scores + (bias if bias is not None else 0.0)
        method = "noaux_tc"  # transformers' V3 routes this way whatever topk_method says
    else:
        choice = logits.softmax(dim=-1)
        method = c.get("topk_method", "greedy")
    scale = choice.pow(2).mean(dim=-1).sqrt()
    gaps = torch.full((choice.shape[0],), float("inf"))
    if method in ("group_limited_greedy", "noaux_tc"):
        g, tg = c["n_group"], c["topk_group"]
        grouped = choice.view(-1, g, e // g)
        gscore = grouped.max(dim=-1).values if method == "group_limited_greedy" else grouped.topk(2, dim=-1).values.sum(dim=-1)
        if tg < g:
            srt = torch.sort(gscore, dim=-1, descending=True).values
            gaps = torch.minimum(gaps, srt[:, tg - 1] - srt[:, tg])
        keep = torch.zeros_like(gscore).scatter_(1, gscore.topk(tg, dim=-1).indices, 1.0).bool()
        choice = choice.masked_fill(~keep.repeat_interleave(e // g, dim=1), float("-inf"))
    srt = torch.sort(choice, dim=-1, descending=True).values
    allowed = int(torch.isfinite(srt[0]).sum().item())
    if k < allowed:
        gaps = torch.minimum(gaps, srt[:, k - 1] - srt[:, k])
    gaps = torch.where(srt[:, k - 1] > 0, gaps, torch.full_like(gaps, -1.0))
    return gaps, scale


def route_margin(torch, c, logits, bias):
    """Smallest gap (score units) of every choice the router makes for these tokens
    (route_gaps); -1 when a chosen score is not above transformers' 0.0 fill."""
    return route_gaps(torch, c, logits, bias)[0].min().item()


def describe_shapes(c):
    """One line for the log."""
    return (f"MLA q_lora {c.get('q_lora_rank')}, kv_lora {c['kv_lora_rank']}, nope/rope/v "
            f"{c['qk_nope_head_dim']}/{c['qk_rope_head_dim']}/{c['v_head_dim']}; "
            f"{c['n_routed_experts']} experts top-{c['num_experts_per_tok']} + {c['n_shared_experts']} shared")


def weight_bytes(table):
    return sum((4 if kind == "score_bias" else 2) * math.prod(s) for _, s, kind in table)
