"""GCIDE in dictd format (gcide.index + gcide.dict.dz) -> entries with part of speech,
definitions and quotations.

An article starts with `Headword \\pro*nun"ci*a`tion\\ (sound), pos. [etymology]` and has
blocks separated by blank lines: numbered senses (indent 3-6), quotations (indent 9+,
ending in `--Author`), and Note:/Syn:/Usage: paragraphs. Each block ends with its source
marker ([1913 Webster], [PJC], [WordNet 1.5] ...). Senses that GCIDE took from WordNet
are dropped here, so WordNet's own glosses reach the corpus only through wordnet.py
(which is what lets the held-out split hold a WordNet definition out cleanly)."""
import gzip
import os
import re
from dataclasses import dataclass, field

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

# GCIDE part-of-speech labels -> our four (WordNet's n v a r); others are skipped.
POS_MAP = {"n.": "n", "n. pl.": "n", "a.": "a", "adj.": "a", "p. a.": "a", "v. t.": "v", "v. i.": "v", "v. t. & i.": "v", "v. i. & t.": "v", "v.": "v", "adv.": "r", "prop. n.": "n"}


@dataclass
class Entry:
    headword: str
    pos: str  # n v a r
    definitions: list
    quotes: list = field(default_factory=list)


def b64_number(s):
    n = 0
    for c in s:
        n = n * 64 + _B64.index(c)
    return n


def read_articles(dict_dir):
    """Yields each distinct article text once (the index lists an article under every headword it defines)."""
    with gzip.open(os.path.join(dict_dir, "gcide.dict.dz"), "rb") as f:
        data = f.read()
    seen = set()
    with open(os.path.join(dict_dir, "gcide.index"), encoding="utf-8") as f:
        for line in f:
            word, off, length = line.rstrip("\n").split("\t")
            if word.startswith("00-database"):
                continue
            key = (b64_number(off), b64_number(length))
            if key in seen:
                continue
            seen.add(key)
            raw = data[key[0]:key[0] + key[1]]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                continue  # three stray latin-1 articles


_HEADER = re.compile(r"^(?P<hw>[^\\\n]+?) \\[^\\\n]*\\(?: \([^)\n]*\))?,?\s*(?P<pos>[a-z][a-z. &]*?)(?=[\s;,]*(?:\[|\n|$|;|pl\.))", re.S)
_MARKER = re.compile(r"\[[^\[\]]*\]")
_SOURCE = re.compile(r"\[(?:[^\[\]]*(?:Webster|PJC|WordNet|Century|Chambers|RJP|Dict\.|Suppl\.)[^\[\]]*)\]")
_ODD = re.compile(r"[\\*\[\]{}|<>~^=]|\?\s|\w\?")


def skip_brackets(text, i):
    """If text[i:] starts (after spaces) with '[', return the index after its matching ']'."""
    j = i
    while j < len(text) and text[j] in " \n":
        j += 1
    if j >= len(text) or text[j] != "[":
        return i
    depth = 0
    for k in range(j, len(text)):
        if text[k] == "[":
            depth += 1
        elif text[k] == "]":
            depth -= 1
            if depth == 0:
                return k + 1
    return i


def clean_definition(block_text):
    """One sense block -> its definition sentence, or None when it is not a clean 1913 one."""
    sources = _SOURCE.findall(block_text)
    if any("WordNet" in s for s in sources):
        return None
    if sources and not any("Webster" in s for s in sources):
        return None  # PJC-only and other later additions are often WordNet-derived too
    t = " ".join(_SOURCE.split(block_text)[0].split())  # text after a marker is a stray headword
    if "[Obs.]" in t or "[Archaic]" in t or "[R.]" in t:
        return None
    t = re.sub(r"^(?:\d+\.\s*)?(?:\([a-z]\)\s*)?", "", t)
    t = re.sub(r"^(?:\([A-Z][^)]{0,40}\)\s*)+", "", t)  # (Zool.) (Naut.) domain labels
    t = re.sub(r"\s--\s*\{[^}]*\},\s*(?:adv|n|a|v)\..*$", "", t)  # derived forms
    t = re.sub(r'\s*"[^"]*"\s*--\s?[A-Z].*$', "", t)  # inline quotation with its author
    t = re.sub(r"\s--\s?[A-Z].*$", "", t)  # trailing author reference
    t = re.sub(r"^.{0,60}?:\s*\(a\)\s*", "", t)  # "Of involuntary motion: (a) To flow ..."
    t = re.split(r"\s\([b-h]\)\s", t)[0]
    t = re.split(r";\s*as,\s", t)[0]  # usage fragments ("; as, a sly dog")
    t = _MARKER.sub("", t)
    t = re.sub(r"\{([^{}]*)\}", r"\1", t)
    t = " ".join(t.split()).strip()
    if not t or _ODD.search(t) or t.count('"') % 2:
        return None
    if re.match(r"^(?:See|Same as|Alt\. of|Variant of|Pl\. of|Imp\. of|p\. p\. of|of )", t):
        return None
    if not t[0].isupper():
        return None  # 1913 senses start with a capital; lower-case ones came from WordNet
    words = t.split()
    if len(words) < 3 or len(words) > 45:
        return None
    if not t.endswith("."):
        t += "."
    return t


def clean_quote(block_text):
    """A quotation block (indent 9+) -> its text without the author, or None."""
    t = _SOURCE.sub("", block_text)
    t = " ".join(t.split())
    t = re.split(r"\s--\s?[A-Z(]", t)[0].strip()
    t = re.sub(r"\{([^{}]*)\}", r"\1", t).strip()
    if _ODD.search(t) or len(t.split()) < 6 or t.count('"') % 2:
        return None
    return t


def parse_article(article):
    m = _HEADER.match(article)
    if not m:
        return None
    pos = POS_MAP.get(m.group("pos").strip())
    if pos is None:
        return None
    headword = m.group("hw").strip()
    if not re.fullmatch(r"[A-Za-z][A-Za-z' -]*", headword):
        return None
    i = m.end()
    while True:  # [imp. & p. p. ...] [etymology] ...
        j = skip_brackets(article, i)
        if j == i:
            break
        i = j
    # The rest of the header line and inflection lines ({Lighthouses} (pron).) are not senses.
    lines = article[i:].split("\n")[1:]
    while lines and lines[0].strip().startswith(("{", "(", "[")):
        lines.pop(0)
    body = "\n".join(lines)
    definitions, quotes = [], []
    for block in re.split(r"\n\s*\n", body):
        lines = [ln for ln in block.split("\n") if ln.strip()]
        if not lines:
            continue
        indent = len(lines[0]) - len(lines[0].lstrip(" "))
        first = lines[0].strip()
        if first.startswith(("Note:", "Syn:", "Usage:", "{", "[")):
            continue
        if indent >= 9:
            q = clean_quote(block)
            if q:
                quotes.append(q)
            continue
        d = clean_definition(block)
        if d:
            definitions.append(d)
    if not definitions and not quotes:
        return None
    return Entry(headword, pos, definitions, quotes)


def load(root):
    """root: the unpacked dict-gcide package. Returns the entries with a clean definition or quote."""
    dict_dir = os.path.join(root, "usr", "share", "dictd")
    out = []
    for article in read_articles(dict_dir):
        e = parse_article(article)
        if e:
            out.append(e)
    return out
