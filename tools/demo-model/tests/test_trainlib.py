"""train.py's pieces that need torch but not transformers or tokenizers: packing, batches,
held-out scoring, the schedule and budget, the training model (fast_moe), the hub-layout
export and the training loop (on a toy model). Skipped where torch is not installed (Debian: apt-get install python3-torch)."""
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


def tiny_config(**over):
    cfg = {
        "vocab_size": 40, "hidden_size": 12, "intermediate_size": 20, "num_hidden_layers": 3, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 6, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "decoder_sparse_step": 1,
        "mlp_only_layers": [0], "num_experts": 3, "num_experts_per_tok": 2, "moe_intermediate_size": 4, "norm_topk_prob": True,
        "router_aux_loss_coef": 0.01, "tie_word_embeddings": True,
    }
    return {**cfg, **over}


def tiny_model(seed=0, **over):
    from trainlib import fast_moe

    m = fast_moe.FastQwen3Moe(tiny_config(**over))
    fast_moe.init_weights(m, 3, seed)
    with torch.no_grad():  # larger than the init's 0.02, so routing and attention are far from uniform
        for p in m.parameters():
            if p.dim() > 1:
                p.mul_(20)
    return m


@unittest.skipIf(torch is None, "torch is not installed")
class FastMoeTest(unittest.TestCase):
    def test_dense_masked_experts_equal_the_sparse_top_k_loop(self):
        m = tiny_model()
        moe = m.model.layers[1].mlp
        x = torch.randn(9, 12, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            got, logits = moe(x)
            probs = torch.softmax(logits, -1)
            want = torch.zeros_like(x)
            ex = moe.experts
            for n in range(x.shape[0]):
                top, idx = torch.topk(probs[n], 2)
                for w, e in zip((top / top.sum()).tolist(), idx.tolist()):
                    h = torch.nn.functional.silu(ex.gate_proj[e] @ x[n]) * (ex.up_proj[e] @ x[n])
                    want[n] += w * (ex.down_proj[e] @ h)
        self.assertLess((got - want).abs().max().item(), 1e-5)

    def test_router_gets_gradients_only_through_chosen_experts(self):
        m = tiny_model()
        ids = torch.randint(0, 40, (2, 7), generator=torch.Generator().manual_seed(2))
        logits, aux = m(ids, router_loss=True)
        (logits.sum() + aux).backward()
        self.assertTrue(all(p.grad is not None and torch.isfinite(p.grad).all() for p in m.parameters()))
        self.assertGreater(m.model.layers[1].mlp.gate.weight.grad.abs().sum().item(), 0)

    def test_causal_and_tied(self):
        m = tiny_model()
        a = torch.tensor([[5, 6, 7, 8]])
        b = torch.tensor([[5, 6, 7, 30]])
        with torch.no_grad():
            la, lb = m(a)[0], m(b)[0]
        self.assertTrue(torch.allclose(la[0, :3], lb[0, :3], atol=1e-6))  # later tokens do not change earlier logits
        self.assertFalse(torch.allclose(la[0, 3], lb[0, 3]))
        with self.assertRaises(ValueError):
            tiny_model(tie_word_embeddings=False)

    def test_hub_tensors_round_trip_per_expert(self):
        m = tiny_model()
        t = m.hub_tensors()
        self.assertNotIn("lm_head.weight", t)
        self.assertEqual(list(t["model.layers.1.mlp.experts.2.gate_proj.weight"].shape), [4, 12])
        self.assertEqual(list(t["model.layers.2.mlp.experts.0.down_proj.weight"].shape), [12, 4])
        self.assertIn("model.layers.0.mlp.gate_proj.weight", t)  # the dense layer
        self.assertTrue(all(v.dtype == torch.bfloat16 for v in t.values()))
        back = tiny_model(seed=9)
        back.load_hub_tensors(t)
        for (name, p), q in zip(m.state_dict().items(), back.state_dict().values()):
            self.assertTrue(torch.equal(p.to(torch.bfloat16).float(), q), name)


@unittest.skipIf(torch is None, "torch is not installed")
class ExportTest(unittest.TestCase):
    def test_sharded_checkpoint_has_an_index_that_matches_the_files(self):
        from trainlib import export

        tensors = tiny_model().hub_tensors()
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
        self.cfg = {"router_aux_loss_coef": 0.01, "vocab_size": vocab}

    def forward(self, input_ids, router_loss=False):
        logits = self.head(self.emb(input_ids))
        return logits, (logits.float().pow(2).mean() * 0 if router_loss else None)


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
        args = types.SimpleNamespace(batch_size=8, seq_len=16, lr=3e-2, weight_decay=0.0, seed=1, steps=300, max_epochs=12.0, compile=False)
        stats = train.train_loop(args, model, rows, heldout, 60, torch.device("cpu"), lambda m: None, data)
        self.assertEqual(stats["steps"], 300)
        self.assertLess(stats["final_train_loss"], 0.5)
        self.assertLess(stats["final_heldout_loss_bf16_autocast"], 0.5)
        self.assertEqual(stats["history"][0]["step"], 1)
        # Time-budgeted: the plan is fixed after calibration, at most max_epochs passes over the rows.
        timed = train.train_loop(types.SimpleNamespace(**{**vars(args), "steps": None, "max_epochs": 2.0}), ToyLM(vocab), rows, heldout, 60, torch.device("cpu"), lambda m: None, data)
        self.assertEqual(timed["steps"], int(2.0 * rows.shape[0] / args.batch_size))

        def logits_fn(ids):
            return model(ids)[0]

        train.probe_training_step(model, torch.device("cpu"))
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
