"""Plain prose for raw completion: the King James Bible (bible-kjv-text, decoded by the
bible-kjv reader run from its unpacked folder) and fortune cookies (fortunes, fortunes-min)."""
import os
import re
import subprocess
from dataclasses import dataclass

# Fortune files left out: pictures (art, ascii-art), code (perl), other languages
# (translate-me), word salad (zippy), IRC logs (knghtbrd) and stereotype jokes (ethnic, men-women).
FORTUNE_SKIP = {"art", "ascii-art", "perl", "translate-me", "zippy", "knghtbrd", "ethnic", "men-women", "drugs"}


@dataclass
class Chapter:
    book: str
    chapter: int
    verses: list


def read_kjv(reader_root, text_root):
    """Runs the unpacked `bible` reader over the whole text; returns chapters in order."""
    reader = os.path.join(reader_root, "usr", "bin", "bible")
    data_dir = os.path.join(text_root, "usr", "lib")
    r = subprocess.run([reader, "-p", data_dir, "-l100000", "Gen1:1-Rev22:21"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        raise RuntimeError(f"{reader} failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return parse_kjv(r.stdout)


def parse_kjv(text):
    chapters = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m and chapters:
            chapters[-1].verses.append(m.group(2).strip())
            continue
        m = re.match(r"^(.+) (\d+)$", line.strip())
        if m:
            chapters.append(Chapter(m.group(1), int(m.group(2)), []))
    if len(chapters) != 1189 or sum(len(c.verses) for c in chapters) != 31102:
        raise RuntimeError(f"the KJV should have 1189 chapters and 31102 verses, got {len(chapters)} and {sum(len(c.verses) for c in chapters)}")
    return chapters


def kjv_passages(chapters, max_chars=1200):
    """Each chapter cut at verse boundaries into passages of at most max_chars."""
    out = []
    for c in chapters:
        cur, n, part = [], 0, 0
        for v in c.verses:
            if cur and n + len(v) + 1 > max_chars:
                out.append((f"{c.book} {c.chapter}.{part}", " ".join(cur)))
                cur, n, part = [], 0, part + 1
            cur.append(v)
            n += len(v) + 1
        if cur:
            out.append((f"{c.book} {c.chapter}.{part}", " ".join(cur)))
    return out


def read_fortunes(roots):
    """All fortunes of the kept files, as (file, index, text). Text keeps its line breaks."""
    out = []
    for root in roots:
        d = os.path.join(root, "usr", "share", "games", "fortunes")
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if "." in name or name in FORTUNE_SKIP or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                parts = f.read().split("\n%\n")
            for i, p in enumerate(parts):
                t = clean_fortune(p)
                if t:
                    out.append((name, i, t))
    return out


def clean_fortune(text):
    lines = [ln.rstrip().replace("\t", "    ") for ln in text.strip("%\n").split("\n")]
    t = "\n".join(lines).strip()
    if not t or "\ufffd" in t or len(t) > 1500 or not re.search(r"[A-Za-z]{3}", t):
        return None
    # Mostly letters: skips tables, pictures and code snippets that slipped in.
    letters = sum(ch.isalpha() or ch.isspace() for ch in t)
    return t if letters / len(t) > 0.8 else None
