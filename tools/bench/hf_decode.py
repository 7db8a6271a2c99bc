#!/usr/bin/env python3
"""HuggingFace transformers decode peer for `afd-bench decode`.

Builds the model of a config.json-shaped dict with random bf16 weights directly on the
GPU (no checkpoint on disk), in transformers' fastest eager setting for MoE decode
(experts implementation "grouped_mm" and a static KV cache), fills the cache with random
keys/values for `context` positions, and times single-token decode steps at each batch
size with CUDA events (median), eagerly and as one captured CUDA graph per batch (the
reduce-overhead setting; skipped after a capture fails). msPerStep is the faster of the
two. Prints one JSON object on the last stdout line.

DeepSeek (model_type deepseek_v2 / deepseek_v3, MLA): transformers caches the expanded
K (qk_nope + qk_rope dims) and V (v_head_dim) per head. Where its static cache cannot
hold values narrower than keys, the peer falls back to a dynamic cache filled the same
way and cropped back to `context` before every step (eager only: its appends allocate).

usage: hf_decode.py --config CONFIG_JSON --batches 1,8,64,256 --context 1024 [--steps 20 --warmup 3 --no-graph]
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def log(msg):
    print(f"[hf-peer] {msg}", file=sys.stderr, flush=True)


# Config fields transformers 5 declares as floats: a JSON writer that prints 0.0 as 0
# (JavaScript) would fail its strict dataclass validation.
FLOAT_FIELDS = ("attention_dropout", "hidden_dropout", "rms_norm_eps", "initializer_range", "rope_theta",
                "routed_scaling_factor", "aux_loss_alpha", "router_aux_loss_coef", "layer_norm_epsilon")


def as_floats(cfg):
    return {k: (float(v) if k in FLOAT_FIELDS and isinstance(v, int) and not isinstance(v, bool) else v) for k, v in cfg.items()}


def build_model(config_dict, experts_impl):
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = as_floats(dict(config_dict))
    model_type = cfg.pop("model_type")
    try:
        config = AutoConfig.for_model(model_type, **{k: v for k, v in cfg.items() if k not in ("architectures", "torch_dtype")})
    except (TypeError, ValueError) as err:
        # The path every checkpoint takes (and that the golden generator's DeepSeek configs
        # go through): a config.json read by from_pretrained.
        log(f"AutoConfig.for_model({model_type!r}) refused the config ({err}); reading it as a config.json")
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(config_dict, f)
            config = AutoConfig.from_pretrained(d)
    # Ask for the experts implementation every way transformers 5 offers, then report what
    # the model actually uses (an ignored request would silently time the eager loop).
    try:
        config._experts_implementation = experts_impl
    except Exception:  # noqa: BLE001 - attribute may be read-only in other versions
        pass
    torch.manual_seed(0)
    with torch.device("cuda"):
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, experts_implementation=experts_impl)
        except (TypeError, ValueError) as err:
            log(f"from_config(experts_implementation=...) not accepted ({err})")
            model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    if hasattr(model, "set_experts_implementation"):
        try:
            model.set_experts_implementation(experts_impl)
        except Exception as err:  # noqa: BLE001 - report and keep going
            log(f"set_experts_implementation({experts_impl!r}) failed: {err}")
    applied = getattr(model.config, "_experts_implementation", None)
    log(f"experts implementation in effect: {applied!r}")
    model.eval()
    # Random weights of the HF init are already on the device; make sure nothing is zero.
    return model, applied, transformers.__version__, torch.__version__


def make_cache(model, batch, max_len):
    import torch
    from transformers import StaticCache

    try:
        cache = StaticCache(config=model.config, max_cache_len=max_len)
    except TypeError:
        cache = StaticCache(config=model.config, max_batch_size=batch, max_cache_len=max_len, device="cuda", dtype=torch.bfloat16)
    return cache


def dynamic_mla_cache(model, batch, context, first_token, gen):
    """A dynamic cache of `context` random positions per layer (MLA fallback): one real
    token creates each layer, then its keys / values are replaced by random tensors of the
    shapes that token gave (K: nope + rope dims, V: v_head_dim)."""
    import torch
    from transformers import DynamicCache

    try:
        cache = DynamicCache(config=model.config)
    except TypeError:
        cache = DynamicCache()
    pos0 = torch.zeros(1, dtype=torch.long, device="cuda")
    model(input_ids=first_token, past_key_values=cache, cache_position=pos0, position_ids=pos0.unsqueeze(0).expand(batch, -1),
          use_cache=True)
    for layer in cache.layers:
        k, v = layer.keys, layer.values
        layer.keys = torch.randn((k.shape[0], k.shape[1], context, k.shape[3]), dtype=k.dtype, device=k.device, generator=gen)
        layer.values = torch.randn((v.shape[0], v.shape[1], context, v.shape[3]), dtype=v.dtype, device=v.device, generator=gen)
    return cache


def time_batch(model, batch, context, steps, warmup, use_graph, graph_failed):
    import torch

    cache = make_cache(model, batch, context + 8)
    vocab = model.config.vocab_size
    gen = torch.Generator(device="cuda").manual_seed(batch)
    dynamic = False
    # One token at position 0 makes the static cache allocate its buffers; then every
    # key/value buffer is filled with random values (a prefill of batch x context tokens
    # would cost minutes at batch 256 and attend to the same amount of memory).
    with torch.inference_mode():
        pos0 = torch.zeros(1, dtype=torch.long, device="cuda")
        first = torch.randint(0, vocab, (batch, 1), device="cuda", generator=gen)
        try:
            model(input_ids=first, past_key_values=cache, cache_position=pos0, position_ids=pos0.unsqueeze(0).expand(batch, -1),
                  use_cache=True)
        except RuntimeError as err:
            if getattr(model.config, "kv_lora_rank", None) is None:
                raise
            log(f"batch {batch}: the static cache cannot hold this MLA model's K / V ({str(err)[:160]}); "
                "dynamic cache, cropped to the context before each step, eager only")
            del cache
            torch.cuda.empty_cache()
            cache = dynamic_mla_cache(model, batch, context, first, gen)
            dynamic = True
        filled = 0 if not dynamic else len(cache.layers)
        for layer in getattr(cache, "layers", []) if not dynamic else []:
            for name in ("keys", "values"):
                t = getattr(layer, name, None)
                if torch.is_tensor(t):
                    t.normal_(generator=gen)
                    filled += 1
        for name in ("key_cache", "value_cache") if not dynamic else ():
            for t in getattr(cache, name, []) or []:
                if torch.is_tensor(t):
                    t.normal_(generator=gen)
                    filled += 1
        if filled == 0:
            log("could not find the static cache tensors to randomise; they hold zeros past position 0")
        torch.cuda.synchronize()
        token = torch.randint(0, vocab, (batch, 1), device="cuda", generator=gen)
        cache_position = torch.tensor([context], device="cuda")
        position_ids = cache_position.unsqueeze(0).expand(batch, -1)
        def step():
            if dynamic:
                cache.crop(context)  # every step decodes at position `context`, as the static cache does
            out = model(input_ids=token, past_key_values=cache, cache_position=cache_position,
                        position_ids=position_ids, use_cache=True)
            return out.logits[:, -1, :].argmax(dim=-1, keepdim=True)

        def timed(run):
            times = []
            for i in range(warmup + steps):
                start_ev = torch.cuda.Event(enable_timing=True)
                end_ev = torch.cuda.Event(enable_timing=True)
                start_ev.record()
                nxt = run()
                end_ev.record()
                end_ev.synchronize()
                _ = nxt.cpu()
                if i >= warmup:
                    times.append(start_ev.elapsed_time(end_ev))
            return times

        times = timed(step)
        eager_ms = statistics.median(times)
        graph_ms = None
        if use_graph and not dynamic:
            # The fastest HF setting: the static-cache decode step captured as one CUDA graph
            # (what torch.compile's reduce-overhead mode does), replayed per step.
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2):
                        step()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    captured = step()

                def replay():
                    graph.replay()
                    return captured

                graph_times = timed(replay)
                graph_ms = statistics.median(graph_times)
                if graph_ms < eager_ms:
                    times = graph_times
                del graph
            except Exception as err:  # noqa: BLE001 - any capture failure means "eager only"
                log(f"batch {batch}: CUDA graph capture failed ({type(err).__name__}: {str(err)[:200]}); eager only")
                torch.cuda.synchronize()
                graph_failed.append(batch)
    del cache
    torch.cuda.empty_cache()
    ms = statistics.median(times)
    return {"batch": batch, "msPerStep": ms, "tokensPerSecond": batch / (ms / 1000.0),
            "msPerStepMin": min(times), "msPerStepMax": max(times), "msPerStepEager": eager_ms,
            "msPerStepGraph": graph_ms, "mode": "cuda-graph" if graph_ms is not None and graph_ms < eager_ms else "eager",
            "cache": "dynamic" if dynamic else "static"}


def copy_bandwidth_gbs(nbytes=1 << 30, iters=20):
    """Device-to-device copy bandwidth (bytes read + written per second), GB/s: the measured ceiling of the floors."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").normal_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start_ev = torch.cuda.Event(enable_timing=True)
    end_ev = torch.cuda.Event(enable_timing=True)
    start_ev.record()
    for _ in range(iters):
        dst.copy_(src)
    end_ev.record()
    end_ev.synchronize()
    seconds = start_ev.elapsed_time(end_ev) / 1000.0
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes * iters / seconds / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="config.json contents (JSON) or a path to it")
    ap.add_argument("--batches", default="1,8,64,256")
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--experts-implementation", default="grouped_mm")
    ap.add_argument("--no-graph", action="store_true", help="time eager steps only (no CUDA graph capture)")
    args = ap.parse_args()
    text = args.config
    if os.path.exists(text):
        with open(text) as f:
            text = f.read()
    config = json.loads(text)
    import torch

    if not torch.cuda.is_available():
        print(json.dumps({"ok": False, "error": "torch sees no CUDA device"}))
        return 0
    copy_gbs = copy_bandwidth_gbs()
    log(f"device copy bandwidth {copy_gbs:.0f} GB/s (read + write)")
    t0 = time.time()
    model, applied, tf_version, torch_version = build_model(config, args.experts_implementation)
    setup = time.time() - t0
    log(f"model built in {setup:.1f}s ({applied}); transformers {tf_version}, torch {torch_version}")
    rows = []
    graph_failed = []
    for b in [int(x) for x in args.batches.split(",") if x]:
        try:
            use_graph = not args.no_graph and not graph_failed
            rows.append(time_batch(model, b, args.context, args.steps, args.warmup, use_graph, graph_failed))
            r = rows[-1]
            graph_text = f"{r['msPerStepGraph']:.2f}" if r["msPerStepGraph"] is not None else "-"
            log(f"batch {b}: {r['msPerStep']:.2f} ms/step (eager {r['msPerStepEager']:.2f}, CUDA graph {graph_text})")
        except torch.cuda.OutOfMemoryError as err:
            rows.append({"batch": b, "error": f"out of memory: {err}"})
            torch.cuda.empty_cache()
    print(json.dumps({"ok": True, "peer": "transformers", "transformers": tf_version, "torch": torch_version,
                      "expertsImplementation": args.experts_implementation, "expertsApplied": applied,
                      "cache": "static", "setupSeconds": setup, "device": torch.cuda.get_device_name(0),
                      "copyBandwidthGBs": copy_gbs,
                      "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
