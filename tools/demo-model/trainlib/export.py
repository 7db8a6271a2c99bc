"""Hub-layout tensors (per-expert, bf16; fast_moe.FastQwen3Moe.hub_tensors) -> a
HuggingFace checkpoint: sharded safetensors with model.safetensors.index.json, written
with our own safetensors writer (8 bytes of header length, a JSON header, raw data).
The Hub layout is what every loader reads (ours, and transformers', which fuses the
experts on load)."""
import json
import os
import re
import struct

import torch


def _tensor_bytes(t):
    if t.dtype != torch.bfloat16:
        raise ValueError(f"only bf16 tensors are written, got {t.dtype}")
    return t.contiguous().view(torch.int16).numpy().tobytes()


def write_safetensors(path, tensors):
    """tensors: {name: bf16 tensor}, written in name order."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        b = _tensor_bytes(tensors[name])
        header[name] = {"dtype": "BF16", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return 8 + len(h) + offset


def read_safetensors(path):
    """(header, {name: bf16 tensor}) of a file write_safetensors wrote (tests and the dry run read it back)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name != "__metadata__":
            a, b = h["data_offsets"]
            out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.int16).view(torch.bfloat16).reshape(h["shape"])
    return header, out


def _checkpoint_order(name):
    """embed, layers in order, final norm: shards then hold whole layers."""
    m = re.match(r"^model\.layers\.(\d+)\.", name)
    return (1, int(m.group(1)), name) if m else ((0, 0, name) if "embed" in name else (2, 0, name))


def write_checkpoint(out_dir, tensors, max_shard_bytes):
    """One model.safetensors when it fits in max_shard_bytes, else shards + index.
    Returns the file names written."""
    for f in os.listdir(out_dir):
        if f.endswith(".safetensors") or f == "model.safetensors.index.json":
            os.remove(os.path.join(out_dir, f))
    names = sorted(tensors, key=_checkpoint_order)
    shards, cur, size = [], [], 64  # 8-byte length, metadata and padding
    for n in names:
        b = tensors[n].numel() * 2 + len(n) + 96  # data + its header entry (an upper bound)
        if cur and size + b > max_shard_bytes:
            shards.append(cur)
            cur, size = [], 64
        cur.append(n)
        size += b
    shards.append(cur)
    shards = [g for g in shards if g]
    if len(shards) == 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
        return ["model.safetensors"]
    files, weight_map, total = [], {}, 0
    for i, group in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        written = write_safetensors(os.path.join(out_dir, fname), {n: tensors[n] for n in group})
        if written > max_shard_bytes:
            raise RuntimeError(f"{fname} is {written} bytes, over {max_shard_bytes}: a single tensor is too large")
        files.append(fname)
        for n in group:
            weight_map[n] = fname
            total += tensors[n].numel() * 2
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
        f.write("\n")
    return files + ["model.safetensors.index.json"]
