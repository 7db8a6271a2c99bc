"""Trained parameters -> a HuggingFace Hub-layout checkpoint (per-expert tensors, bf16,
sharded safetensors with model.safetensors.index.json), written with our own
safetensors writer (the format is 8 bytes of header length, a JSON header, raw data).

transformers 5 keeps a Qwen3-MoE layer's experts fused (gate_up_proj [E, 2I, H] or its
transpose, down_proj [E, H, I] or its transpose); older versions keep one module per
expert. The hub layout is what every loader reads (ours and transformers' own, which
converts on load), so we always write it; the orientation of a fused tensor follows from
its shape (the demo model's sizes make it unambiguous), and how gate and up share
gate_up_proj is one of GATE_UP_LAYOUTS, confirmed by reloading (see hf_model.verify)."""
import json
import os
import re
import struct

import torch

GATE_UP_LAYOUTS = ("gate_then_up", "up_then_gate", "interleaved")
_FUSED = re.compile(r"^(model\.layers\.\d+\.mlp\.experts)\.(gate_up_proj|down_proj)$")


def _split_gate_up(w, inter, layout):
    """w: [2I, H] (out x in) -> (gate [I, H], up [I, H])."""
    if layout == "gate_then_up":
        return w[:inter], w[inter:]
    if layout == "up_then_gate":
        return w[inter:], w[:inter]
    if layout == "interleaved":
        return w[0::2], w[1::2]
    raise ValueError(f"unknown gate/up layout {layout!r}")


def hub_tensors(state_dict, hidden, moe_inter, tied, layout="gate_then_up"):
    """Returns {hub name: bf16 contiguous CPU tensor}. Raises on a shape it cannot place."""
    if 2 * moe_inter == hidden or moe_inter == hidden:
        raise ValueError(f"moe_intermediate_size {moe_inter} and hidden_size {hidden} make fused expert shapes ambiguous")
    out = {}
    for name, t in state_dict.items():
        if tied and name == "lm_head.weight":
            continue
        t = t.detach().to("cpu")
        m = _FUSED.match(name)
        if not m:
            out[name] = t
            continue
        prefix, kind = m.groups()
        if t.dim() != 3:
            raise ValueError(f"{name}: expected a 3-D fused expert tensor, got shape {list(t.shape)}")
        for e in range(t.shape[0]):
            w = t[e]
            if kind == "gate_up_proj":
                if list(w.shape) == [hidden, 2 * moe_inter]:
                    w = w.t()
                if list(w.shape) != [2 * moe_inter, hidden]:
                    raise ValueError(f"{name}: expert shape {list(t.shape[1:])} is neither [2I, H] nor [H, 2I]")
                gate, up = _split_gate_up(w, moe_inter, layout)
                out[f"{prefix}.{e}.gate_proj.weight"] = gate
                out[f"{prefix}.{e}.up_proj.weight"] = up
            else:
                if list(w.shape) == [moe_inter, hidden]:
                    w = w.t()
                if list(w.shape) != [hidden, moe_inter]:
                    raise ValueError(f"{name}: expert shape {list(t.shape[1:])} is neither [H, I] nor [I, H]")
                out[f"{prefix}.{e}.down_proj.weight"] = w
    return {k: v.to(torch.bfloat16).contiguous() for k, v in out.items()}


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
