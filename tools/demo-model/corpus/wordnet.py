"""WordNet 3.0 database files (data.POS, index.POS) -> senses per lemma.

data.POS line: offset lex_filenum ss_type w_cnt word lex_id [word lex_id ...] p_cnt
[ptr_symbol offset pos source/target ...] [frames] | gloss. The gloss is a definition
followed by optional "; \"example\"" parts. index.POS lists a lemma's synsets most
frequent first, with tagsense_cnt (how many of them were seen in tagged text)."""
import os
import re
from dataclasses import dataclass, field

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}


@dataclass
class Synset:
    offset: str
    pos: str  # n v a r (satellite adjectives s are folded into a)
    lexfile: int  # lexicographer file number (18 = noun.person, 15 = noun.location ...)
    words: list
    definition: str
    examples: list
    hypernyms: list = field(default_factory=list)  # synset offsets
    antonyms: dict = field(default_factory=dict)  # word -> (offset, word index)


@dataclass
class Lemma:
    word: str  # with spaces, as written (case from the synset)
    pos: str
    synsets: list  # offsets, most frequent first
    tagged: int  # tagsense_cnt


def clean_word(w):
    """WordNet spelling -> text: underscores to spaces, adjective markers like (a) dropped."""
    return re.sub(r"\((?:a|p|ip)\)$", "", w).replace("_", " ")


_PAREN_LEAD = re.compile(r"^\((?:[^()]|\([^()]*\))*\)\s*")


def split_gloss(gloss):
    """'def; "ex one"; "ex two"' -> ('def', ['ex one', 'ex two'])."""
    gloss = gloss.strip()
    parts = re.split(r';\s*(?=")', gloss)
    definition = parts[0].strip().rstrip(";").strip()
    definition = _PAREN_LEAD.sub("", definition)  # "(usually followed by `to') having ..."
    examples = []
    for p in parts[1:]:
        m = re.match(r'^"([^"]+)"', p.strip())
        if m:
            examples.append(m.group(1).strip())
    return definition, examples


def parse_data_line(line, pos):
    if line.startswith("  "):
        return None  # license header
    head, _, gloss = line.partition(" | ")
    f = head.split()
    offset, lexfile, ss_type = f[0], int(f[1]), f[2]
    w_cnt = int(f[3], 16)
    words = [clean_word(f[4 + 2 * i]) for i in range(w_cnt)]
    i = 4 + 2 * w_cnt
    p_cnt = int(f[i])
    i += 1
    hypernyms, antonyms = [], {}
    for _ in range(p_cnt):
        sym, target, st = f[i], f[i + 1], f[i + 3]
        i += 4
        if sym in ("@", "@i"):
            hypernyms.append(target)
        elif sym == "!":
            src, dst = int(st[:2], 16), int(st[2:], 16)
            if src > 0:
                antonyms[words[src - 1]] = (target, dst)
    definition, examples = split_gloss(gloss)
    return Synset(offset, "a" if ss_type == "s" else ss_type, lexfile, words, definition, examples, hypernyms, antonyms)


def load(root):
    """root: the unpacked wordnet-base package (or a folder with usr/share/wordnet)."""
    base = os.path.join(root, "usr", "share", "wordnet") if os.path.isdir(os.path.join(root, "usr")) else root
    synsets, lemmas = {}, []
    for pos, name in POS_FILES.items():
        with open(os.path.join(base, f"data.{name}"), encoding="utf-8") as f:
            for line in f:
                s = parse_data_line(line.rstrip("\n"), pos)
                if s:
                    synsets[(pos, s.offset)] = s
        with open(os.path.join(base, f"index.{name}"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                fld = line.split()
                lemma, p_cnt = fld[0], int(fld[3])
                synset_cnt = int(fld[2])
                tagged = int(fld[5 + p_cnt])
                offsets = fld[6 + p_cnt:6 + p_cnt + synset_cnt]
                # The index lemma is lower case; take the spelling the first synset uses.
                first = synsets.get((pos, offsets[0]))
                word = clean_word(lemma)
                if first:
                    word = next((w for w in first.words if w.lower() == word), word)
                lemmas.append(Lemma(word, pos, offsets, tagged))
    return synsets, lemmas
