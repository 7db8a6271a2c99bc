"""The corpus file: gzip JSONL, one record a line, the first line the meta record.

Records:
  {"kind": "meta", ...}                                    sources, licenses, counts, seed
  {"kind": "chat", "id", "split", "source", "messages": [{"role", "content"}, ...]}
  {"kind": "text", "id", "split", "source", "text"}
  {"kind": "qa", "id", "split": "qa", "word", "question", "reference", "train_definition"}

split is "train" or "test" (the held-out split) for chat and text records. A document's
training text is render(record): chats through the chat template (chat_template.jinja,
whose output render_chat reproduces exactly), prose as is. Held-out perplexity scores
[<|endoftext|>] + tokens(render(record)), cut to HELDOUT_MAX_TOKENS + 1 tokens, for every
test record in file order; train.py and the engine's evaluation both follow this.

Only the standard library: train.py imports this on the GPU host."""
import gzip
import hashlib
import io
import json
import os

EOT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [EOT, IM_START, IM_END]
HELDOUT_MAX_TOKENS = 256

TEMPLATE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat_template.jinja")


def chat_template():
    """The template text; its trailing newline is dropped (it would render as output)."""
    with open(TEMPLATE_PATH, encoding="utf-8") as f:
        return f.read().rstrip()


def render_chat(messages, add_generation_prompt=False):
    out = "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
    return out + (f"{IM_START}assistant\n" if add_generation_prompt else "")


def render(record):
    if record["kind"] == "chat":
        return render_chat(record["messages"])
    if record["kind"] == "text":
        return record["text"]
    raise ValueError(f"record {record.get('id')}: kind {record['kind']!r} has no training text")


def write(path, meta, records):
    """Writes a byte-reproducible gzip (no file name, mtime 0)."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            with io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as f:
                f.write(json.dumps({"kind": "meta", **meta}, ensure_ascii=False, sort_keys=True) + "\n")
                for r in records:
                    f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read(path):
    """Returns (meta, records). Raises ValueError naming the line that is wrong."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"corpus file {path} does not exist; run tools/demo-model/prepare_corpus.py first")
    records, meta = [], None
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not JSON ({err})") from err
            if n == 1:
                if r.get("kind") != "meta":
                    raise ValueError(f"{path}:1: the first record must be the meta record")
                meta = r
                continue
            if r.get("kind") not in ("chat", "text", "qa"):
                raise ValueError(f"{path}:{n}: unknown record kind {r.get('kind')!r}")
            records.append(r)
    if meta is None:
        raise ValueError(f"{path} is empty")
    return meta, records


def ids_digest(sequences):
    """sha256 over token id sequences, one comma-separated line each: both sides of the
    held-out comparison compute it to prove they scored the same tokens."""
    h = hashlib.sha256()
    for ids in sequences:
        h.update((",".join(str(i) for i in ids) + "\n").encode("ascii"))
    return h.hexdigest()
