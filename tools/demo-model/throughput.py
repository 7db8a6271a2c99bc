#!/usr/bin/env python3
"""Training tokens/s of candidate demo-model shapes on this GPU, through train.py's own
training loop (random token rows, so no corpus or tokenizer), and whether transformers
computes what fast_moe trains at that shape. Chooses DIMS; the shipped run's own rate is
in its metrics.json.

    python3 tools/demo-model/throughput.py --out OUT.json [--steps 100] \\
        --shape base='{}' --shape wide='{"hidden": 512, ...}' [--compile-too wide]"""
import argparse
import json
import os
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import train  # noqa: E402


def measure(name, dims, steps, compile_step, device, seed, log, batch=128, seq=512):
    import torch

    from trainlib import data, fast_moe, hf_model

    cfg = hf_model.config_dict({**train.DIMS, **dims}, train.VOCAB_SIZE, [train.IM_END_ID, train.EOT_ID], train.EOT_ID)
    model = fast_moe.FastQwen3Moe(cfg)
    fast_moe.init_weights(model, cfg["num_hidden_layers"], seed)
    model = model.to(device)
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(seed)
    rows = torch.randint(3, train.VOCAB_SIZE, (max(4 * batch, 256), seq + 1), generator=g, dtype=torch.int32)
    heldout = [rows[i, :65].tolist() for i in range(8)]  # the loop's probe
    args = types.SimpleNamespace(batch_size=batch, seq_len=seq, lr=2e-3, weight_decay=0.1, seed=seed, steps=steps, max_epochs=1e9, compile=compile_step)
    t = time.monotonic()
    stats = train.train_loop(args, model, rows, heldout, 600, device, log, data)
    marks = {h["step"]: h["seconds"] for h in stats["history"]}
    first, last = min(s for s in marks if s >= 25), max(marks)
    steady = (last - first) * batch * seq / (marks[last] - marks[first])
    out = {"name": name, "dims": dims, "parameters": params, "bf16_mb": round(params * 2 / 1e6, 2), "compile": compile_step,
           "steps": stats["steps"], "wall_s": round(time.monotonic() - t, 1), "tokens_per_second_all": stats["tokens_per_second"],
           "tokens_per_second_steady": round(steady), "final_loss": stats["final_train_loss"]}
    with tempfile.TemporaryDirectory() as d:
        hf_model.write_json(os.path.join(d, "config.json"), cfg)
        _, err, _ = hf_model.export_verified(model, d, 15_000_000, device, rows[:2, :128].long())
        out["equivalence_rel_error"] = err
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--shape", action="append", default=[], help="NAME=JSON overrides of train.DIMS")
    ap.add_argument("--compile-too", action="append", default=[], help="also measure NAME with torch.compile")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=512)
    a = ap.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    shapes = [s.split("=", 1) for s in a.shape] or [["base", "{}"]]
    results = []

    def log(msg):
        print(msg, flush=True)

    for name, js in shapes:
        for comp in (False, True) if name in a.compile_too else (False,):
            try:
                r = measure(name, json.loads(js), a.steps, comp, device, a.seed, log, a.batch_size, a.seq_len)
            except Exception as err:  # noqa: BLE001 - one shape failing must not lose the others
                r = {"name": name, "compile": comp, "error": f"{type(err).__name__}: {err}"}
            print(json.dumps(r), flush=True)
            results.append(r)
            with open(a.out, "w") as f:
                json.dump({"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "torch": torch.__version__, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
