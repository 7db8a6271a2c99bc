#!/usr/bin/env python3
"""Builds the demo model's training corpus from Debian packages (runs on the build machine,
which reaches Debian's archive; the GPU host does not).

    python3 tools/demo-model/prepare_corpus.py                 # -> tools/demo-model/data/
    python3 tools/demo-model/prepare_corpus.py --debs DIR      # reuse downloaded .debs

Steps: `apt-get download` the packages into a temp folder (or --debs), `dpkg -x` each
into that folder (nothing is installed), parse WordNet, GCIDE, the KJV and the fortunes,
turn dictionary entries into chat turns, split off the held-out set (corpus/build.py
says how), and write data/corpus.jsonl.gz (gzip JSONL, see corpus_io.py) and
data/corpus.meta.json (sources, versions, licenses, counts). Same packages + same seed
-> the same bytes."""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus_io  # noqa: E402
from corpus import build, debian, gcide, prose, wordnet  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 20 * 1000 * 1000
DICTIONARY_PACKAGE = "wamerican"


def log(msg):
    print(f"[prepare {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def read_words(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return {w.strip() for w in f if w.strip()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(HERE, "data"))
    ap.add_argument("--debs", help="folder with the .deb files (downloaded into it when missing); default: a temp folder")
    ap.add_argument("--seed", type=int, default=20251201)
    ap.add_argument("--wordnet-kind-first", action=argparse.BooleanOptionalAction, default=True,
                    help="WordNet noun definitions name their kind first, as GCIDE's do (default; the model trained at a915098 had them without: --no-wordnet-kind-first)")
    a = ap.parse_args(argv)
    t0 = time.time()
    names = list(debian.PACKAGES)
    with tempfile.TemporaryDirectory(prefix="afd-demo-corpus-") as tmp:
        deb_dir = a.debs or os.path.join(tmp, "debs")
        log(f"apt-get download {' '.join(names)} -> {deb_dir}")
        debs = debian.download(names, deb_dir)
        pkgs = debian.unpack(debs, os.path.join(tmp, "root"))
        words = read_words(os.path.join(pkgs[DICTIONARY_PACKAGE]["dir"], "usr", "share", "dict", "american-english"))
        log(f"wamerican: {len(words)} words")
        synsets, lemmas = wordnet.load(pkgs["wordnet-base"]["dir"])
        log(f"WordNet: {len(synsets)} synsets, {len(lemmas)} lemmas")
        entries = gcide.load(pkgs["dict-gcide"]["dir"])
        log(f"GCIDE: {len(entries)} entries with a clean 1913 sense or quotation")
        kjv = prose.kjv_passages(prose.read_kjv(pkgs["bible-kjv"]["dir"], pkgs["bible-kjv-text"]["dir"]))
        fortunes = prose.read_fortunes([pkgs["fortunes-min"]["dir"], pkgs["fortunes"]["dir"]])
        log(f"KJV: {len(kjv)} passages; fortunes: {len(fortunes)}")
        records, qa, stats = build.build(a.seed, synsets, lemmas, entries, kjv, fortunes, words, a.wordnet_kind_first)
        sources = {n: {k: v for k, v in p.items() if k != "dir"} for n, p in pkgs.items()}
    os.makedirs(a.out_dir, exist_ok=True)
    meta = {
        "format": 1,
        "seed": a.seed,
        "options": {"wordnet_kind_first": a.wordnet_kind_first},
        "sources": {n: {k: s[k] for k in ("version", "license", "what")} for n, s in sources.items()},
        "stats": stats,
        "heldout": {"max_tokens": corpus_io.HELDOUT_MAX_TOKENS, "test_words": build.TEST_WORDS, "qa_words": build.QA_WORDS, "prose_test_percent": build.PROSE_TEST_PERCENT},
    }
    path = os.path.join(a.out_dir, "corpus.jsonl.gz")
    corpus_io.write(path, meta, records + qa)
    size = os.path.getsize(path)
    with open(os.path.join(a.out_dir, "corpus.meta.json"), "w", encoding="utf-8") as f:
        json.dump({**meta, "bytes": size, "copyright": {n: s["copyright"] for n, s in sources.items()}}, f, indent=1, sort_keys=True)
        f.write("\n")
    chars = sum(len(corpus_io.render(r)) for r in records)
    log(f"wrote {path}: {size / 1e6:.1f} MB, {len(records)} records ({chars / 1e6:.1f} M characters), {len(qa)} questions, in {time.time() - t0:.0f} s")
    for k, v in stats["records"].items():
        log(f"  {k}: {v}")
    if size > MAX_BYTES:
        log(f"error: the corpus is {size} bytes, over the {MAX_BYTES}-byte limit for travelling to the GPU host")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
