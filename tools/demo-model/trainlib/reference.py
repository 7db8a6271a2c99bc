"""Reference outputs of the reloaded checkpoint (fp32 compute on the bf16 weights, as our
engine computes): greedy answers to the held-out questions and a golden fixture in
tools/golden's golden.json format. Plain full forwards over the growing sequence (no
cache API), like tools/golden/make_golden.py. Needs only torch and a callable model."""
import torch

import corpus_io

GOLDEN_STEPS = [0, 1, 15, 31]
GOLDEN_NEW_TOKENS = 32


def _next_logits(logits_fn, ids, device):
    return logits_fn(torch.tensor([ids], dtype=torch.long, device=device))[0, -1].float()


def greedy(logits_fn, prompt, max_new, device, stop_ids=()):
    ids, out, logits_at, min_gap = list(prompt), [], {}, float("inf")
    with torch.no_grad():
        for step in range(max_new):
            logits = _next_logits(logits_fn, ids, device)
            top = torch.topk(logits, 2)
            min_gap = min(min_gap, (top.values[0] - top.values[1]).item())
            logits_at[step] = logits
            tok = int(top.indices[0])
            out.append(tok)
            ids.append(tok)
            if tok in stop_ids:
                break
    return out, logits_at, min_gap


def sig6(x):
    return float(f"{x:.6g}")


def golden(logits_fn, prompts, device, name, versions):
    cases = []
    for p in prompts:
        ids, logits_at, gap = greedy(logits_fn, p, GOLDEN_NEW_TOKENS, device)
        cases.append({
            "promptIds": list(p), "greedyIds": ids, "minTop2Margin": sig6(gap),
            "logits": [{"step": s, "values": [sig6(v) for v in logits_at[s].tolist()]} for s in GOLDEN_STEPS],
        })
    return {
        "format": 1, "name": name, "architecture": "Qwen3MoeForCausalLM",
        "description": "the demo model (trained): a chat prompt, a completion prompt and a two-turn chat",
        "relTolerance": 1e-3, "maxNewTokens": GOLDEN_NEW_TOKENS, "weightsDtype": "bf16", "computeDtype": "float32",
        "versions": versions, "cases": cases,
    }


def answer_questions(logits_fn, encode, decode, questions, device, max_new, stop_id):
    out = []
    for q in questions:
        prompt = encode(corpus_io.render_chat([{"role": "user", "content": q["question"]}], add_generation_prompt=True))
        ids, _, _ = greedy(logits_fn, prompt, max_new, device, stop_ids=(stop_id,))
        text_ids = ids[:-1] if ids and ids[-1] == stop_id else ids
        out.append({"id": q["id"], "question": q["question"], "promptIds": prompt, "greedyIds": ids, "answer": decode(text_ids)})
    return out
