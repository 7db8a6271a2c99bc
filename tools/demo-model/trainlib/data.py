"""The data pipeline of train.py, independent of transformers and tokenizers (so it runs
and is tested anywhere torch is): documents -> packed training rows, held-out sequences,
loss evaluation, the learning-rate schedule and the time budget."""
import math
import random
import time

import torch
import torch.nn.functional as F

import corpus_io


def documents(records):
    """(train texts, test texts, qa items), each in file order."""
    train, test, qa = [], [], []
    for r in records:
        if r["kind"] == "qa":
            qa.append(r)
        elif r["split"] == "train":
            train.append(corpus_io.render(r))
        elif r["split"] == "test":
            test.append(corpus_io.render(r))
        else:
            raise ValueError(f"record {r['id']}: split {r['split']!r} is neither train nor test")
    if not train or not test:
        raise ValueError(f"the corpus needs train and test records (got {len(train)} and {len(test)})")
    return train, test, qa


def tokenizer_sample(texts, max_chars, seed):
    """A seeded sample of whole documents of at most max_chars characters in all."""
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    out, n = [], 0
    for i in order:
        if n >= max_chars:
            break
        out.append(texts[i])
        n += len(texts[i])
    return out


def pack(docs_ids, seq_len, eot_id, seed):
    """Shuffles documents (seeded), joins them with <|endoftext|> after each, and cuts the
    stream into rows of seq_len + 1 tokens (inputs are row[:-1], targets row[1:]). The
    tail shorter than a row is dropped. Returns an int32 tensor [rows, seq_len + 1]."""
    order = list(range(len(docs_ids)))
    random.Random(seed).shuffle(order)
    stream = []
    for i in order:
        stream.extend(docs_ids[i])
        stream.append(eot_id)
    rows = len(stream) // (seq_len + 1)
    if rows == 0:
        raise ValueError(f"{len(stream)} tokens do not fill one row of {seq_len + 1}")
    t = torch.tensor(stream[: rows * (seq_len + 1)], dtype=torch.int32)
    return t.view(rows, seq_len + 1)


class Batches:
    """Endless seeded batches of row indices; each pass over the rows is one epoch."""

    def __init__(self, num_rows, batch_size, seed):
        if batch_size > num_rows:
            raise ValueError(f"batch size {batch_size} exceeds the {num_rows} training rows")
        self.num_rows, self.batch_size = num_rows, batch_size
        self.gen = torch.Generator().manual_seed(seed)
        self.epoch, self._perm, self._pos = 0, torch.randperm(num_rows, generator=self.gen), 0

    def next(self):
        if self._pos + self.batch_size > self.num_rows:
            self.epoch += 1
            self._perm, self._pos = torch.randperm(self.num_rows, generator=self.gen), 0
        idx = self._perm[self._pos:self._pos + self.batch_size]
        self._pos += self.batch_size
        return idx

    @property
    def epochs_done(self):
        return self.epoch + self._pos / self.num_rows


def heldout_sequences(test_ids, eot_id, max_tokens=corpus_io.HELDOUT_MAX_TOKENS):
    """[<|endoftext|>] + ids, cut to max_tokens + 1 tokens: max_tokens predictions each."""
    return [([eot_id] + list(ids))[: max_tokens + 1] for ids in test_ids]


def mean_nll(logits_fn, sequences, device, max_batch_tokens=65536, pad_id=0):
    """Mean next-token negative log-likelihood (nats) over every position of every sequence.
    Sequences are right-padded in length-sorted batches; causal attention keeps padding out
    of the real positions, and padded targets are not scored. Returns (mean, count)."""
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]), reverse=True)
    total, count, i = 0.0, 0, 0
    while i < len(order):
        longest = len(sequences[order[i]])
        n = max(1, max_batch_tokens // longest)
        group = [sequences[j] for j in order[i:i + n]]
        i += len(group)
        width = max(len(s) for s in group)
        ids = torch.full((len(group), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(group), width - 1), dtype=torch.bool)
        for b, s in enumerate(group):
            ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[b, : len(s) - 1] = True
        ids = ids.to(device)
        logits = logits_fn(ids[:, :-1]).float()
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none").view(mask.shape)
        m = mask.to(device)
        total += nll[m].double().sum().item()
        count += int(m.sum().item())
    return total / count, count


def lr_at(step, total_steps, peak, warmup, floor_ratio=0.1):
    """Linear warmup, then cosine decay to floor_ratio * peak at total_steps."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    return peak * (floor_ratio + (1 - floor_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


class TimeBudget:
    """Wall-clock budget for the training loop: after `calibrate_after` steps the step time
    is measured and the total step count fixed so the schedule ends inside the budget;
    `over()` is the hard stop if steps later slow down."""

    def __init__(self, seconds, calibrate_after=20, margin=0.97, clock=time.monotonic):
        self.seconds, self.calibrate_after, self.margin, self.clock = seconds, calibrate_after, margin, clock
        self.start = clock()
        self.mark = None
        self.total_steps = None

    def elapsed(self):
        return self.clock() - self.start

    def on_step(self, step_done):
        """Call after each finished step (1-based count). Returns total_steps once known."""
        if step_done == 5:
            self.mark = (step_done, self.clock())  # the first steps include warm-up work
        if self.total_steps is None and step_done == self.calibrate_after and self.mark:
            per_step = (self.clock() - self.mark[1]) / (step_done - self.mark[0])
            left = self.seconds * self.margin - self.elapsed()
            self.total_steps = step_done + max(1, int(left / per_step))
        return self.total_steps

    def over(self):
        return self.elapsed() > self.seconds
