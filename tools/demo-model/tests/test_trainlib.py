"""train.py's pieces that need torch but not transformers or tokenizers: packing, batches,
held-out scoring, the schedule and budget, the hub-layout export and the training loop
(on a toy model). Skipped where torch is not installed (Debian: apt-get install python3-torch)."""
import json
import math
import os
import struct
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


@unittest.skipIf(torch is None, "torch is not installed")
class DataTest(unittest.TestCase):
    def test_pack_joins_documents_with_eot_and_cuts_rows(self):
        from trainlib import data

        rows = data.pack([[5, 6], [7], [8, 9, 10]], seq_len=3, eot_id=0, seed=1)
        self.assertEqual(rows.shape, (2, 4))
        flat = rows.flatten().tolist()
        self.assertEqual(sorted(flat), sorted([5, 6, 0, 7, 0, 8, 9, 10]))
        self.assertEqual(flat.count(0), 2)

    def test_batches_cover_every_row_each_epoch(self):
        from trainlib import data

        b = data.Batches(10, 5, seed=3)
        first = sorted(b.next().tolist() + b.next().tolist())
        self.assertEqual(first, list(range(10)))
        b.next()
        self.assertAlmostEqual(b.epochs_done, 1.5)

    def test_heldout_sequences_and_mean_nll(self):
        from trainlib import data

        seqs = data.heldout_sequences([[3, 4, 5], list(range(1, 400))], eot_id=0, max_tokens=256)
        self.assertEqual(seqs[0], [0, 3, 4, 5])
        self.assertEqual(len(seqs[1]), 257)
        vocab = 7
        table = torch.randn(vocab, vocab)

        def logits_fn(ids):  # a bigram model: the logits of position t depend on token t only
            return table[ids]

        small = [[0, 1, 2, 3], [0, 6, 5], [0, 4]]  # batches of 4 tokens: padding, several batches
        mean, count = data.mean_nll(logits_fn, small, "cpu", max_batch_tokens=4)
        want = [-torch.log_softmax(table[a], -1)[b].item() for s in small for a, b in zip(s[:-1], s[1:])]
        self.assertEqual(count, len(want))
        self.assertAlmostEqual(mean, sum(want) / len(want), places=5)

    def test_schedule_and_budget(self):
        from trainlib import data

        self.assertAlmostEqual(data.lr_at(0, 100, 1.0, 10), 0.1)
        self.assertAlmostEqual(data.lr_at(9, 100, 1.0, 10), 1.0)
        self.assertAlmostEqual(data.lr_at(100, 100, 1.0, 10), 0.1)
        self.assertAlmostEqual(data.lr_at(55, 100, 1.0, 10), 0.55)
        now = [0.0]
        b = data.TimeBudget(100.0, calibrate_after=20, margin=1.0, clock=lambda: now[0])
        for step in range(1, 21):
            now[0] += 0.5
            total = b.on_step(step)
        self.assertEqual(total, 20 + int((100 - 10) / 0.5))
        self.assertFalse(b.over())
        now[0] = 101
        self.assertTrue(b.over())


@unittest.skipIf(torch is None, "torch is not installed")
class ExportTest(unittest.TestCase):
    H, I, E = 12, 4, 3

    def fused_state(self, transposed):
        g = torch.Generator().manual_seed(0)
        gate = torch.randn(self.E, self.I, self.H, generator=g)
        up = torch.randn(self.E, self.I, self.H, generator=g)
        down = torch.randn(self.E, self.H, self.I, generator=g)
        gate_up = torch.cat([gate, up], dim=1)
        if transposed:
            gate_up, down_t = gate_up.transpose(1, 2).contiguous(), down.transpose(1, 2).contiguous()
        else:
            down_t = down
        emb = torch.randn(20, self.H, generator=g)
        state = {
            "model.embed_tokens.weight": emb, "lm_head.weight": emb, "model.norm.weight": torch.ones(self.H),
            "model.layers.1.mlp.experts.gate_up_proj": gate_up, "model.layers.1.mlp.experts.down_proj": down_t,
            "model.layers.1.mlp.gate.weight": torch.randn(self.E, self.H, generator=g),
        }
        return state, gate, up, down

    def test_fused_experts_split_in_both_orientations(self):
        from trainlib import export

        for transposed in (False, True):
            state, gate, up, down = self.fused_state(transposed)
            out = export.hub_tensors(state, self.H, self.I, tied=True)
            self.assertNotIn("lm_head.weight", out)
            for e in range(self.E):
                p = f"model.layers.1.mlp.experts.{e}"
                self.assertTrue(torch.equal(out[f"{p}.gate_proj.weight"], gate[e].to(torch.bfloat16)))
                self.assertTrue(torch.equal(out[f"{p}.up_proj.weight"], up[e].to(torch.bfloat16)))
                self.assertTrue(torch.equal(out[f"{p}.down_proj.weight"], down[e].to(torch.bfloat16)))
            self.assertTrue(all(t.dtype == torch.bfloat16 for t in out.values()))
        swapped = export.hub_tensors(self.fused_state(False)[0], self.H, self.I, tied=True, layout="up_then_gate")
        self.assertTrue(torch.equal(swapped["model.layers.1.mlp.experts.0.gate_proj.weight"], up[0].to(torch.bfloat16)))
        with self.assertRaises(ValueError):
            export.hub_tensors(state, 8, 4, tied=True)  # 2I == H: ambiguous

    def test_sharded_checkpoint_has_an_index_that_matches_the_files(self):
        from trainlib import export

        state, *_ = self.fused_state(False)
        tensors = export.hub_tensors(state, self.H, self.I, tied=True)
        with tempfile.TemporaryDirectory() as d:
            files = export.write_checkpoint(d, tensors, max_shard_bytes=1500)  # a few tensors a shard
            self.assertGreater(len(files), 2)
            with open(os.path.join(d, "model.safetensors.index.json")) as f:
                index = json.load(f)
            self.assertEqual(set(index["weight_map"]), set(tensors))
            for name, fname in index["weight_map"].items():
                header, got = export.read_safetensors(os.path.join(d, fname))
                self.assertEqual(header[name]["dtype"], "BF16")
                with open(os.path.join(d, fname), "rb") as f:
                    self.assertEqual((8 + struct.unpack("<Q", f.read(8))[0]) % 8, 0)
                self.assertTrue(torch.equal(got[name], tensors[name]))
            single = export.write_checkpoint(d, tensors, max_shard_bytes=10_000_000)
            self.assertEqual(single, ["model.safetensors"])
            self.assertEqual(sorted(f for f in os.listdir(d) if "safetensors" in f), ["model.safetensors"])


class ToyLM(torch.nn.Module if torch else object):
    def __init__(self, vocab):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, 16)
        self.head = torch.nn.Linear(16, vocab)
        self.config = types.SimpleNamespace(router_aux_loss_coef=0.01, vocab_size=vocab)

    def forward(self, input_ids, use_cache=False):
        return types.SimpleNamespace(logits=self.head(self.emb(input_ids)))


@unittest.skipIf(torch is None, "torch is not installed")
class TrainLoopTest(unittest.TestCase):
    def test_loop_learns_a_pattern_and_reports(self):
        import train
        from trainlib import data, reference

        vocab = 11
        docs = [[1 + (i + j) % 10 for j in range(30)] for i in range(200)]  # each token predicts the next
        rows = data.pack(docs, 16, 0, seed=1)
        heldout = data.heldout_sequences(docs[:5], 0)
        model = ToyLM(vocab)
        hf = types.SimpleNamespace(forward=lambda m, ids, rl: (m(input_ids=ids).logits, None))
        args = types.SimpleNamespace(batch_size=8, seq_len=16, lr=3e-2, weight_decay=0.0, seed=1, steps=300, max_epochs=12.0)
        stats = train.train_loop(args, model, rows, heldout, False, 60, torch.device("cpu"), lambda m: None, data, hf)
        self.assertEqual(stats["steps"], 300)
        self.assertLess(stats["final_train_loss"], 0.5)
        self.assertLess(stats["final_heldout_loss_bf16_autocast"], 0.5)
        self.assertEqual(stats["history"][0]["step"], 1)
        # Time-budgeted: the plan is fixed after calibration, at most max_epochs passes over the rows.
        timed = train.train_loop(types.SimpleNamespace(**{**vars(args), "steps": None, "max_epochs": 2.0}), ToyLM(vocab), rows, heldout, False, 60, torch.device("cpu"), lambda m: None, data, hf)
        self.assertEqual(timed["steps"], int(2.0 * rows.shape[0] / args.batch_size))

        def logits_fn(ids):
            return model(input_ids=ids).logits

        from trainlib import hf_model

        hf_model.probe_training_step(model, torch.device("cpu"), False)
        self.assertTrue(all(p.grad is None for p in model.parameters()))
        ids, logits_at, gap = reference.greedy(logits_fn, [3, 4], 5, "cpu")
        self.assertEqual(ids, [5, 6, 7, 8, 9])
        self.assertGreater(gap, 0)
        g = reference.golden(logits_fn, [[3, 4]], "cpu", "toy", {"torch": torch.__version__})
        self.assertEqual(len(g["cases"][0]["greedyIds"]), reference.GOLDEN_NEW_TOKENS)
        self.assertEqual([x["step"] for x in g["cases"][0]["logits"]], reference.GOLDEN_STEPS)
        self.assertEqual(len(g["cases"][0]["logits"][0]["values"]), vocab)
        self.assertTrue(all(math.isfinite(v) for v in g["cases"][0]["logits"][0]["values"]))


if __name__ == "__main__":
    unittest.main()
