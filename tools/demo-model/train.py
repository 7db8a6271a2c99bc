#!/usr/bin/env python3
"""Trains the demo model (a small Qwen3-MoE) on the corpus of prepare_corpus.py, on one
GPU, inside one wall-clock budget, and writes a checkpoint that transformers and our
engine load.

    python3 tools/demo-model/train.py --out OUT            # the real run (~5 minutes on an H200)
    python3 tools/demo-model/train.py --out OUT --smoke    # every phase, small (~1 minute)

OUT/model/ gets config.json, generation_config.json, tokenizer.json,
tokenizer_config.json and the safetensors (shards + index when over --max-shard-mb);
OUT/metrics.json gets losses, held-out perplexity (transformers, fp32 on the bf16
weights), the reference answers to the held-out questions, a golden fixture, timings and
versions. metrics.json is rewritten after every phase, so a late failure keeps what came
before. Phases: corpus, tokenizer, encode, model (+ an export check on the untrained
model, so a layout problem stops the run in its first minute), train, export, reference.
"""
import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus_io  # noqa: E402

MODEL_NAME = "afd-demo-moe"
# 19.4 M parameters, 38.7 MB of bf16 (the limit is 40): throughput.py measured this shape
# at 1.76 M tokens/s compiled on an H200 (0.73 M eager), against 0.91 M eager for the
# earlier 12.6 M shape (hidden 384, experts of 128) and 0.59 M for 8 narrower layers.
DIMS = {
    "hidden": 512, "heads": 8, "kv_heads": 2, "head_dim": 64, "layers": 6, "dense_layers": [0],
    "dense_intermediate": 1536, "experts": 8, "top_k": 2, "moe_intermediate": 144,
    "max_positions": 2048, "aux_loss_coef": 0.01,
}
VOCAB_SIZE = 8192
EOT_ID, IM_END_ID = 0, 2  # corpus_io.SPECIAL_TOKENS come first in the vocabulary
REFERENCE_MAX_NEW = 48  # new tokens per reference answer (the evaluation generates as many)
FULL = {"train_seconds": 330, "total_seconds": 450, "tokenizer_chars": 30_000_000, "train_docs": None, "test_docs": None, "questions": None, "golden_cases": 3}
SMOKE = {"train_seconds": 15, "total_seconds": 150, "tokenizer_chars": 2_000_000, "train_docs": 20_000, "test_docs": 300, "questions": 5, "golden_cases": 1}

T0 = time.monotonic()
LOG = []  # every progress line, also kept in metrics.json (no separate log file travels back)


def log(msg):
    line = f"[train {time.monotonic() - T0:6.1f}s] {msg}"
    LOG.append(line)
    print(line, flush=True)


def git_commit():
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class Metrics:
    def __init__(self, path, base):
        self.path, self.data = path, base

    def set(self, key, value):
        self.data[key] = value
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({**self.data, "log": LOG}, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, self.path)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (model/ and metrics.json go there)")
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl.gz"))
    ap.add_argument("--smoke", action="store_true", help="a ~1 minute run of every phase on a slice of the corpus")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--train-seconds", type=float, help="training loop budget (default 330, smoke 15)")
    ap.add_argument("--total-seconds", type=float, help="budget of the whole run; training shrinks to fit (default 450, smoke 150)")
    ap.add_argument("--steps", type=int, help="fixed number of steps instead of the time budget (reproduces a run)")
    ap.add_argument("--max-epochs", type=float, default=20.0, help="fewer steps when the time budget would pass over the data more often (default 20: past that the model memorises strings)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--max-shard-mb", type=float, default=15.0)
    ap.add_argument("--dims", type=json.loads, default={}, help="JSON overrides of DIMS (tests and experiments; the shipped model uses the defaults)")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                    help="torch.compile the training step (default: on CUDA; about a minute of compiling, then 2.4x eager's tokens/s)")
    ap.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    ap.add_argument("--commit", default=None, help="repository commit to record (default: git rev-parse HEAD)")
    a = ap.parse_args(argv)
    preset = SMOKE if a.smoke else FULL
    a.train_seconds = a.train_seconds or preset["train_seconds"]
    a.total_seconds = a.total_seconds or preset["total_seconds"]
    if a.smoke:
        a.batch_size, a.seq_len = min(a.batch_size, 32), min(a.seq_len, 256)
    unknown = set(a.dims) - set(DIMS)
    if unknown:
        ap.error(f"--dims: unknown keys {sorted(unknown)} (known: {sorted(DIMS)})")
    a.dims = {**DIMS, **a.dims}
    a.preset = preset
    return a


def main(argv=None):
    a = parse_args(argv)
    model_dir = os.path.join(a.out, "model")
    os.makedirs(model_dir, exist_ok=True)
    import torch

    from trainlib import data, fast_moe, hf_model, reference, tok

    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if a.compile is None:
        a.compile = device.type == "cuda"
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    versions = {"python": platform.python_version(), "torch": torch.__version__}
    for mod in ("transformers", "tokenizers"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError as err:
            raise SystemExit(f"train.py needs the {mod} package (the GPU host has it; pip install {mod} elsewhere): {err}") from err
    if device.type == "cuda":
        versions["device"] = torch.cuda.get_device_name(device)
    m = Metrics(os.path.join(a.out, "metrics.json"), {
        "model_name": MODEL_NAME, "smoke": a.smoke, "command": ["python3", "tools/demo-model/train.py", *(argv if argv is not None else sys.argv[1:])],
        "commit": a.commit or git_commit(), "seed": a.seed, "versions": versions, "phases": {},
    })

    def phase(name, t):
        m.data["phases"][name] = round(time.monotonic() - t, 2)
        m.save()
        log(f"{name} done in {time.monotonic() - t:.1f} s")

    log(f"device {device} ({versions.get('device', 'cpu')}); torch {versions['torch']}, transformers {versions['transformers']}, tokenizers {versions['tokenizers']}")
    t = time.monotonic()
    meta, records = corpus_io.read(a.corpus)
    train_texts, test_texts, questions = data.documents(records)
    if a.preset["train_docs"]:
        train_texts = data.tokenizer_sample(train_texts, 10**12, a.seed)[: a.preset["train_docs"]]
    test_limit = a.preset["test_docs"]
    test_texts = test_texts[:test_limit] if test_limit else test_texts
    questions = questions[: a.preset["questions"]] if a.preset["questions"] else questions
    m.set("corpus", {"path": os.path.relpath(a.corpus, os.path.dirname(os.path.dirname(HERE))), "seed": meta["seed"], "sources": meta["sources"],
                     "train_docs": len(train_texts), "test_docs": len(test_texts), "test_doc_limit": test_limit, "questions": len(questions)})
    phase("corpus", t)

    t = time.monotonic()
    # The model first: a transformers API problem stops the run in its first seconds.
    # The special tokens are the tokenizer's first ids by construction (tok.check verifies).
    eot, im_end = EOT_ID, IM_END_ID
    cfg = hf_model.config_dict(a.dims, VOCAB_SIZE, [im_end, eot], eot)
    hf_model.write_json(os.path.join(model_dir, "config.json"), cfg)
    hf_model.write_json(os.path.join(model_dir, "generation_config.json"), hf_model.generation_config([im_end, eot], eot))
    model = fast_moe.FastQwen3Moe(cfg)
    fast_moe.init_weights(model, cfg["num_hidden_layers"], a.seed)
    model = model.to(device)
    params = sum(p.numel() for p in model.parameters())
    probe_ids = torch.randint(3, VOCAB_SIZE, (2, 64), generator=torch.Generator().manual_seed(a.seed))
    files, rel_err, hf_untrained = hf_model.export_verified(model, model_dir, int(a.max_shard_mb * 1_000_000), device, probe_ids)
    experts_impl = getattr(hf_untrained.config, "_experts_implementation", None)
    del hf_untrained
    probe_training_step(model, device)
    m.set("model", {"config": cfg, "parameters": params, "bf16_bytes": params * 2, "trained_as": "trainlib.fast_moe (dense-masked experts)",
                    "untrained_equivalence_rel_error": rel_err, "reference_experts_implementation": experts_impl, "compile": a.compile})
    log(f"{params} parameters ({params * 2 / 1e6:.1f} MB bf16); transformers loads the untrained export ({', '.join(files)}) and its fp32 logits equal ours (relative error {rel_err:.2e}); a bf16 training step runs")
    phase("model", t)

    t = time.monotonic()
    sample = data.tokenizer_sample(train_texts, a.preset["tokenizer_chars"], a.seed)
    tokenizer = tok.train(sample, VOCAB_SIZE)
    tok.save(tokenizer, model_dir, a.dims["max_positions"])
    if (tokenizer.token_to_id(corpus_io.EOT), tokenizer.token_to_id(corpus_io.IM_END)) != (EOT_ID, IM_END_ID):
        raise RuntimeError("the tokenizer's special token ids differ from the model config's")
    m.set("tokenizer", {"vocab_size": tokenizer.get_vocab_size(), "trained_on_chars": sum(len(s) for s in sample), "trained_on_docs": len(sample)})
    phase("tokenizer", t)

    t = time.monotonic()
    train_ids = tok.encode_all(tokenizer, train_texts)
    test_ids = tok.encode_all(tokenizer, test_texts)
    rows = data.pack(train_ids, a.seq_len, eot, a.seed)
    heldout = data.heldout_sequences(test_ids, eot)
    train_tokens = sum(len(x) + 1 for x in train_ids)
    m.data["corpus"].update({"train_tokens": train_tokens, "train_rows": rows.shape[0], "chars_per_token": round(sum(map(len, train_texts)) / train_tokens, 3)})
    log(f"{train_tokens} training tokens in {rows.shape[0]} rows of {a.seq_len + 1}; {len(heldout)} held-out sequences")
    phase("encode", t)

    t = time.monotonic()
    left = a.total_seconds - (time.monotonic() - T0) - (40 if a.smoke else 75)  # the rest needs ~1 minute
    if left < 5:
        raise RuntimeError(f"only {left:.0f} s are left for training within --total-seconds {a.total_seconds}")
    train_budget = min(a.train_seconds, left)
    stats = train_loop(a, model, rows, heldout, train_budget, device, log, data)
    m.set("training", stats)
    phase("train", t)

    t = time.monotonic()
    # The reference numbers are true fp32 (no TF32), as our engine computes.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    files, rel_err, loaded = hf_model.export_verified(model, model_dir, int(a.max_shard_mb * 1_000_000), device, rows[:4, :256].long())
    sizes = {f: os.path.getsize(os.path.join(model_dir, f)) for f in sorted(os.listdir(model_dir))}
    m.set("export", {"files": sizes, "equivalence_rel_error": rel_err,
                     "reload": "transformers from_pretrained; its fp32 logits on 4 training rows equal the trained model's on the bf16 weights"})
    log(f"export: transformers' logits equal the trained model's (relative error {rel_err:.2e})")
    del model

    def logits_fn(ids):
        return loaded(input_ids=ids, use_cache=False).logits

    with torch.no_grad():
        loss, count = data.mean_nll(logits_fn, heldout, device, max_batch_tokens=32768, pad_id=eot)
    m.set("heldout", {"loss": loss, "ppl": float(torch.tensor(loss).exp()), "tokens": count, "docs": len(heldout), "doc_limit": test_limit,
                      "max_tokens": corpus_io.HELDOUT_MAX_TOKENS, "ids_sha256": corpus_io.ids_digest(heldout),
                      "compute": "transformers fp32 (eager attention) on the exported bf16 weights"})
    log(f"held-out (transformers, fp32 on bf16 weights): loss {loss:.4f}, ppl {m.data['heldout']['ppl']:.3f} over {count} tokens of {len(heldout)} docs")
    phase("export", t)

    t = time.monotonic()
    reference_outputs(m, a, loaded, logits_fn, tokenizer, questions, device, versions, im_end, reference)
    phase("reference", t)
    log(f"done: {model_dir} ({sum(sizes.values()) / 1e6:.1f} MB), metrics in {m.path}, {time.monotonic() - T0:.0f} s in all")
    m.set("wall_seconds", round(time.monotonic() - T0, 1))
    return 0


def probe_training_step(model, device):
    """One forward and backward under bf16 autocast (as the training loop runs them), gradients dropped."""
    import torch

    ids = torch.randint(3, min(100, model.cfg["vocab_size"]), (2, 64), generator=torch.Generator().manual_seed(0)).to(device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        logits, aux = model(ids, router_loss=True)
    loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids.reshape(-1)) + 0.01 * aux.float()
    loss.backward()
    params = list(model.named_parameters())
    bad = [n for n, p in params if p.grad is None or not torch.isfinite(p.grad).all()]
    model.zero_grad(set_to_none=True)
    if bad:
        raise RuntimeError(f"a bf16 training step gives no or non-finite gradients for {bad[:4]}")


def train_loop(a, model, rows, heldout, budget_s, device, log, data):
    import torch
    import torch.nn.functional as F

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=device.type == "cuda")
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    rows = rows.to(device)
    batches = data.Batches(rows.shape[0], a.batch_size, a.seed)
    budget = data.TimeBudget(budget_s)
    probe = heldout[: min(len(heldout), 512)]
    coef = model.cfg["router_aux_loss_coef"]
    step_model = torch.compile(model) if a.compile else model
    total = a.steps
    history, step, tokens, skipped = [], 0, 0, 0
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    model.train()
    log(f"training: batch {a.batch_size} x {a.seq_len} tokens, peak lr {a.lr}, budget {budget_s:.0f} s" + (f", {total} steps" if total else " (steps fixed after calibration)"))
    while True:
        if total is not None and step >= total:
            break
        if total is None and budget.total_steps is not None and step >= budget.total_steps:
            break
        if total is None and budget.over():
            log("time budget reached before the planned steps")
            break
        planned = total or budget.total_steps or 10**9
        warmup = min(200, max(10, planned // 20)) if planned < 10**9 else 200
        lr = data.lr_at(step, planned if planned < 10**9 else 10**6, a.lr, warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        batch = rows[batches.next()].long()
        with autocast:
            logits, aux = step_model(batch[:, :-1], router_loss=True)
        ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        loss = ce + (coef * aux.float() if aux is not None and coef else 0.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not torch.isfinite(gnorm):  # a bad step is skipped, not applied; many mean the lr is too high
            skipped += 1
            opt.zero_grad(set_to_none=True)
            if skipped > 20:
                log(f"stopping: {skipped} steps had non-finite gradients (lower --lr)")
                break
            continue
        opt.step()
        step += 1
        tokens += batch.shape[0] * (batch.shape[1] - 1)
        if total is None:
            budget.on_step(step)
            if step == budget.calibrate_after:
                by_epochs = int(a.max_epochs * rows.shape[0] / a.batch_size)
                fit = budget.total_steps
                budget.total_steps = max(step + 1, min(fit, by_epochs))
                log(f"calibrated: {fit} steps fit the {budget_s:.0f} s budget; {budget.total_steps} planned ({a.max_epochs:g} epochs at most)")
        if step % 25 == 0 or step <= 3:
            ce_v = ce.item()
            el = budget.elapsed()
            entry = {"step": step, "loss": round(ce_v, 4), "aux": round(aux.item(), 4) if aux is not None else None, "lr": lr, "grad_norm": round(float(gnorm), 3), "seconds": round(el, 1), "epochs": round(batches.epochs_done, 3)}
            if step % 250 == 0:
                model.eval()
                with torch.no_grad(), autocast:
                    entry["heldout_probe_loss"] = round(data.mean_nll(lambda x: model(x)[0], probe, device, pad_id=0)[0], 4)
                model.train()
            history.append(entry)
            log(f"step {step}/{planned if planned < 10**9 else '?'} loss {ce_v:.4f} aux {entry['aux']} lr {lr:.2e} gnorm {entry['grad_norm']} {tokens / el:,.0f} tok/s epoch {batches.epochs_done:.2f}" + (f" held-out probe {entry['heldout_probe_loss']}" if "heldout_probe_loss" in entry else ""))
    elapsed = budget.elapsed()
    model.eval()
    with torch.no_grad(), autocast:
        final_probe = data.mean_nll(lambda x: model(x)[0], heldout, device, pad_id=0)[0]
    tail = [h["loss"] for h in history[-8:]]
    return {
        "steps": step, "skipped_steps": skipped, "tokens": tokens, "seconds": round(elapsed, 1), "tokens_per_second": round(tokens / elapsed), "epochs": round(batches.epochs_done, 3),
        "max_epochs": a.max_epochs, "batch_size": a.batch_size, "seq_len": a.seq_len, "peak_lr": a.lr, "weight_decay": a.weight_decay, "betas": [0.9, 0.95], "grad_clip": 1.0,
        "schedule": "linear warmup (min(200, steps/20) steps), cosine to 10% of peak", "precision": "fp32 weights, bf16 autocast",
        "aux_loss_coef": coef, "final_train_loss": round(sum(tail) / len(tail), 4) if tail else None, "final_heldout_loss_bf16_autocast": round(final_probe, 4), "history": history,
    }


def reference_outputs(m, a, loaded, logits_fn, tokenizer, questions, device, versions, im_end, reference):
    """Golden fixture, greedy answers and the HF tokenizer check; each optional, so a
    failure here is recorded and the checkpoint stays."""
    def enc(text):
        return tokenizer.encode(text, add_special_tokens=False).ids

    def dec(ids):
        return tokenizer.decode(ids, skip_special_tokens=True)

    try:
        prompts = [
            enc(corpus_io.render_chat([{"role": "user", "content": "What is a lighthouse?"}], add_generation_prompt=True)),
            enc("In the beginning God created"),
            enc(corpus_io.render_chat([{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hello! Ask me what a word means."}, {"role": "user", "content": "What does benevolent mean?"}], add_generation_prompt=True)),
        ][: a.preset["golden_cases"]]
        m.set("golden", reference.golden(logits_fn, prompts, device, MODEL_NAME, versions))
        log(f"golden fixture: {len(prompts)} cases; greedy reply to 'What is a lighthouse?': {dec(m.data['golden']['cases'][0]['greedyIds'])!r}")
    except Exception as err:  # noqa: BLE001
        m.set("golden_error", traceback.format_exc())
        log(f"golden fixture failed: {err}")
    try:
        answers = reference.answer_questions(logits_fn, enc, dec, questions, device, REFERENCE_MAX_NEW, im_end)
        m.data["reference_max_new_tokens"] = REFERENCE_MAX_NEW
        m.set("reference_answers", answers)
        for x in answers[:5]:
            log(f"  Q: {x['question']}  A: {x['answer']}")
    except Exception as err:  # noqa: BLE001
        m.set("reference_answers_error", traceback.format_exc())
        log(f"reference answers failed: {err}")
    try:
        import transformers

        hf_tok = transformers.AutoTokenizer.from_pretrained(os.path.join(a.out, "model"))
        msgs = [{"role": "user", "content": "What is a lighthouse?"}]
        rendered = hf_tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        same_ids = hf_tok("What is a lighthouse? In the beginning.", add_special_tokens=False)["input_ids"] == enc("What is a lighthouse? In the beginning.")
        m.set("hf_tokenizer", {"class": type(hf_tok).__name__, "template_matches": rendered == corpus_io.render_chat(msgs, add_generation_prompt=True), "ids_match": same_ids})
    except Exception as err:  # noqa: BLE001
        m.set("hf_tokenizer", {"error": f"{type(err).__name__}: {err}"})
    log(f"transformers tokenizer check: {m.data['hf_tokenizer']}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001
        log(f"failed:\n{traceback.format_exc()}")
        sys.exit(1)
