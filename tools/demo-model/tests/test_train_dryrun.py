"""train.py end to end on the CPU, with stand-ins for transformers and tokenizers
(tests/fakes: their APIs as train.py calls them, and a plain sparse Qwen3-MoE forward
that reads the Hub layout). It checks the orchestration the GPU run depends on: phases in
order, the export reloads and computes the trained model's logits, the files that travel back (at
most 8, each under 16 MiB), and a complete metrics.json. Skipped without torch."""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.dirname(HERE)
sys.path.insert(0, TOOL)

import corpus_io  # noqa: E402

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


def small_corpus(path):
    records = []
    for i in range(400):
        records.append({"kind": "chat", "id": f"c{i}", "split": "train", "source": "wordnet",
                        "messages": [{"role": "user", "content": f"What is word {i}?"}, {"role": "assistant", "content": f"Word {i} is a word with the number {i}."}]})
    records += [{"kind": "text", "id": f"t{i}", "split": "train", "source": "kjv", "text": "In the beginning God created the heaven and the earth. " * 3} for i in range(50)]
    records += [{"kind": "chat", "id": f"h{i}", "split": "test", "source": "wordnet",
                 "messages": [{"role": "user", "content": f"What is word {i}?"}, {"role": "assistant", "content": f"Word {i} is a word."}]} for i in range(40)]
    records += [{"kind": "qa", "id": f"qa:w{i}", "split": "qa", "word": f"w{i}", "question": f"What is a w{i}?", "reference": "a word", "train_definition": "A word."} for i in range(6)]
    corpus_io.write(path, {"seed": 1, "sources": {}}, records)


@unittest.skipIf(torch is None, "torch is not installed")
class TrainDryRunTest(unittest.TestCase):
    def test_smoke_run_writes_a_complete_checkpoint_and_metrics(self):
        with tempfile.TemporaryDirectory() as d:
            corpus, out = os.path.join(d, "corpus.jsonl.gz"), os.path.join(d, "out")
            small_corpus(corpus)
            env = {**os.environ, "PYTHONPATH": os.path.join(HERE, "fakes"), "PYTHONUNBUFFERED": "1"}
            # Small dims and shards keep it quick on 2 cores; --max-shard-mb 1.2 still makes two shards.
            dims = {"hidden": 64, "heads": 2, "kv_heads": 1, "head_dim": 32, "layers": 3, "dense_intermediate": 96, "experts": 4, "moe_intermediate": 24}
            r = subprocess.run([sys.executable, os.path.join(TOOL, "train.py"), "--out", out, "--corpus", corpus, "--smoke", "--device", "cpu", "--train-seconds", "4",
                                "--batch-size", "8", "--seq-len", "64", "--max-shard-mb", "1.2", "--dims", json.dumps(dims), "--commit", "dryrun"],
                               env=env, capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
            files = sorted(os.listdir(os.path.join(out, "model")))
            self.assertEqual(files, ["config.json", "generation_config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                     "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"])
            travelling = [os.path.join(out, "model", f) for f in files] + [os.path.join(out, "metrics.json")]
            self.assertEqual(sorted(os.listdir(out)), ["metrics.json", "model"])
            self.assertLessEqual(len(travelling), 8)
            for p in travelling:
                self.assertLess(os.path.getsize(p), 16 * 2**20, p)
            with open(os.path.join(out, "metrics.json")) as f:
                m = json.load(f)
            self.assertEqual(m["commit"], "dryrun")
            self.assertEqual(list(m["phases"]), ["corpus", "model", "tokenizer", "encode", "train", "export", "reference"])
            self.assertLess(m["model"]["untrained_equivalence_rel_error"], 1e-4)  # fast_moe == the fake's sparse reference
            self.assertLess(m["export"]["equivalence_rel_error"], 1e-4)
            h, q, kv, hd = 64, 64, 32, 32
            attn = 2 * h + 2 * q * h + 2 * kv * h + 2 * hd
            self.assertEqual(m["model"]["parameters"], 8192 * h + 3 * attn + 3 * 96 * h + 2 * (4 * h + 4 * 3 * 24 * h) + h)
            self.assertGreaterEqual(m["training"]["steps"], 1)
            self.assertEqual(m["heldout"]["docs"], 40)
            self.assertTrue(math.isfinite(m["heldout"]["ppl"]))
            self.assertEqual(len(m["golden"]["cases"][0]["greedyIds"]), 32)
            self.assertEqual(len(m["golden"]["cases"][0]["logits"][0]["values"]), 8192)
            self.assertEqual(len(m["reference_answers"]), 5)
            self.assertIn("error", m["hf_tokenizer"])
            self.assertTrue(any("done:" in line for line in m["log"]))
            with open(os.path.join(out, "model", "tokenizer_config.json")) as f:
                self.assertEqual(json.load(f)["chat_template"], corpus_io.chat_template())


if __name__ == "__main__":
    unittest.main()
