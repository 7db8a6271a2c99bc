"""Sources -> corpus records, the held-out split and the question set.

Held-out split (what the model card states):
  * test words: nouns that WordNet and GCIDE both define (a clean 1913 Webster sense),
    spelled in lower case, in the wamerican list, and seen at least MIN_FREQ times in the
    sources' text; TEST_WORDS of them, drawn with a generator of their own, seeded
    from the seed.
  * Every WordNet record that carries the gloss (definition or example sentence) of a
    test word's senses goes to the test split, whichever word it is about (a synset's
    gloss is shared by all its words: "beacon" would otherwise leak "lighthouse").
    What carries no gloss stays in training: WordNet's relations of the test words (the
    kind of thing a word names, its synonyms and opposites) and GCIDE's definitions of
    them, so the held-out questions are answerable from what the model was taught.
  * The question set: QA_WORDS of the test words, "What is a X?", scored against the
    held-out WordNet gloss. No reference gloss occurs in the training text (checked).
  * Prose: a fixed share of KJV passages, fortunes and GCIDE quotations by a hash of
    their id."""
import hashlib
import random
import re
from collections import Counter

from . import phrasing as ph

TEST_WORDS = 400
QA_WORDS = 50
MIN_FREQ = 3
PROSE_TEST_PERCENT = {"kjv": 1, "fortunes": 2, "gcide-quotes": 1}
MULTI_TURN_SHARE = 0.25
# Each definition is taught under this many different questions (and each kind under
# KIND_PHRASINGS): a small model that sees a fact under one phrasing only recalls it for
# that phrasing, and repeating the same text for more epochs makes it memorise strings.
WORDNET_DEF_PHRASINGS = 2
GCIDE_DEF_PHRASINGS = 3
KIND_PHRASINGS = 2
CAPITAL_PHRASINGS = 4  # few facts (167 capitals), each needs several questions to stick
ANTONYM_PHRASINGS = 2
SYSTEM_SHARE = 0.05
GREETING_SHARE = 0.04

_WORD = re.compile(r"^[A-Za-z][A-Za-z'-]*(?: [A-Za-z][A-Za-z'-]*){0,2}$")


def stable_percent(key):
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 100


def chat(rid, source, turns, headword=None, uses=()):
    """uses: the synsets whose gloss text (definition or examples) the turns carry."""
    msgs = []
    for q, a in turns:
        msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return {"kind": "chat", "id": rid, "source": source, "messages": msgs, "headword": headword, "uses": sorted(uses)}


def text(rid, source, body):
    return {"kind": "text", "id": rid, "source": source, "text": body}


def phrasings(rng, make, n, tries=20):
    """Up to n turns from make(rng) with distinct questions (fewer when make has fewer)."""
    out, seen = [], set()
    for _ in range(tries):
        if len(out) == n:
            break
        turn = make(rng)
        if turn[0] not in seen:
            seen.add(turn[0])
            out.append(turn)
    return out


def variants(rid, source, turns, headword, uses=()):
    """One record a phrasing: ids rid, rid.2, rid.3 ... (adjacent in the file)."""
    return [chat(rid if i == 0 else f"{rid}.{i + 1}", source, [t], headword, uses) for i, t in enumerate(turns)]


def _mentions(example, word):
    return re.search(r"\b" + re.escape(word.lower()[: max(3, len(word) - 2)]), example.lower()) is not None


def common_word(word, dictionary_words):
    """A single word of the wamerican list: what the demo model is taught (WordNet's
    multi-word terms and rare words would take its capacity from the common ones)."""
    return re.fullmatch(r"[A-Za-z]+", word) is not None and word in dictionary_words


def hypernym_word(synsets, synset):
    """The first word of a noun synset's first hypernym ('tower' for lighthouse), or None."""
    if not synset.hypernyms:
        return None
    h = synsets.get(("n", synset.hypernyms[0]))
    return h.words[0] if h and _WORD.match(h.words[0]) else None


def wordnet_records(rng, synsets, lemmas, lexicon, dictionary_words, kinds=None):
    """kinds (noun_kinds; None with prepare_corpus.py --no-wordnet-kind-first): a common
    noun's definition names its kind first, as GCIDE's answers do
    ("A lighthouse is a kind of tower. A tower with a light ..."), so that every noun
    definition starts the same way."""
    out = []
    for lem in sorted(lemmas, key=lambda x: (x.pos, x.word.lower(), x.word)):
        w = lem.word
        if not common_word(w, dictionary_words):
            continue
        senses = [synsets[(lem.pos, o)] for o in lem.synsets if (lem.pos, o) in synsets]
        if not senses or not senses[0].definition:
            continue
        s0 = senses[0]
        key = f"wn:{lem.pos}:{w}"
        person = lem.pos == "n" and s0.lexfile == 18
        examples = [e for e in s0.examples if _mentions(e, w)]
        kind = kinds.get(w) if kinds and lem.pos == "n" else None
        a = ph.define_answer(rng, w, lem.pos, s0.definition, examples, person, lexicon, kind=kind)
        turns = phrasings(rng, lambda r: (ph.define_question(r, w, lem.pos, s0.definition, person), a), WORDNET_DEF_PHRASINGS)
        out += variants(f"{key}:def", "wordnet", turns, w.lower(), [f"{lem.pos}{s0.offset}"])
        defs = []
        for s in senses:
            if s.definition and s.definition not in defs:
                defs.append(s.definition)
        if len(defs) >= 2 and rng.random() < 0.3:
            used = senses[: min(3, len(defs))]
            out.append(chat(f"{key}:senses", "wordnet", [ph.senses_turn(rng, w, defs[:3], lexicon)], w.lower(), [f"{lem.pos}{s.offset}" for s in used]))
        others = [x for x in s0.words if x.lower() != w.lower() and _WORD.match(x)]
        if others and rng.random() < 0.3:
            out.append(chat(f"{key}:syn", "wordnet", [ph.synonym_turn(rng, w, others[:3])], w.lower()))
        if w in s0.antonyms:
            t_off, t_idx = s0.antonyms[w]
            target = synsets.get((lem.pos, t_off))
            if target and 0 < t_idx <= len(target.words):
                opposite = target.words[t_idx - 1]
                out += variants(f"{key}:ant", "wordnet", phrasings(rng, lambda r: ph.antonym_turn(r, w, opposite), ANTONYM_PHRASINGS), w.lower())
        hyp = hypernym_word(synsets, s0) if lem.pos == "n" else None
        if hyp:
            out += variants(f"{key}:kind", "wordnet", phrasings(rng, lambda r: ph.hypernym_turn(r, w, s0.definition, hyp), KIND_PHRASINGS), w.lower())
        ex = [(s, e) for s in senses[:3] for e in s.examples if _mentions(e, w)]
        if ex and rng.random() < 0.3:
            s, e = ex[0]
            out.append(chat(f"{key}:ex", "wordnet", [ph.example_turn(rng, w, e)], w.lower(), [f"{lem.pos}{s.offset}"]))
        m = re.match(r"^(?:the )?capital(?: and largest city)? of ((?:the )?[A-Z][\w'.-]*(?: (?:of |and )?[A-Z][\w'.-]*)*)", s0.definition)
        if m and lem.pos == "n" and w[:1].isupper() and w == s0.words[0]:
            country = m.group(1).strip()
            out += variants(f"{key}:capital", "wordnet", phrasings(rng, lambda r: ph.capital_turn(r, w, country), CAPITAL_PHRASINGS), w.lower(), [f"n{s0.offset}"])
    return out


def gcide_records(rng, entries, known, kinds):
    """One definition turn per (headword, part of speech), and a senses turn for some.
    kinds: lower-case noun -> the kind of thing WordNet says it names; a noun's answer
    names it first ("A lighthouse is a kind of tower. A tower or other building ...")."""
    grouped = {}
    for e in entries:
        if e.definitions:
            grouped.setdefault((e.headword.lower(), e.pos, e.headword), []).extend(e.definitions)
    out = []
    for (low, pos, headword), defs in sorted(grouped.items()):
        if low not in known or not _WORD.match(headword):
            continue
        w = low if low in known.lower_words else headword
        rid = f"gc:{pos}:{w}"
        kind = kinds.get(low) if pos == "n" else None
        answer = ph.define_answer(rng, w, pos, defs[0], lexicon=known.lower_words, kind=kind)
        out += variants(f"{rid}:def", "gcide", phrasings(rng, lambda r: (ph.define_question(r, w, pos, defs[0]), answer), GCIDE_DEF_PHRASINGS), low)
        if len(defs) >= 2 and rng.random() < 0.3:
            out.append(chat(f"{rid}:senses", "gcide", [ph.senses_turn(rng, w, defs[:3], known.lower_words)], low))
    return out


def quote_records(entries):
    out = []
    for i, e in enumerate(entries):
        if e.quotes:
            out.append(text(f"gq:{i:06d}:{e.headword}", "gcide-quotes", "\n".join(e.quotes)))
    return out


class Known:
    """Words we accept as headwords: in WordNet or the wamerican list."""

    def __init__(self, wordnet_lemmas, dictionary_words):
        self.lower_words = {w for w in dictionary_words if w.islower()} | {lem.word for lem in wordnet_lemmas if lem.word.islower()}
        self.all = {w.lower() for w in dictionary_words} | {lem.word.lower() for lem in wordnet_lemmas}

    def __contains__(self, w):
        return w in self.all


def word_frequencies(texts):
    c = Counter()
    for t in texts:
        c.update(re.findall(r"[a-z]+", t.lower()))
    return c


def choose_test_words(rng, synsets, lemmas, entries, dictionary_words, freq):
    gcide_nouns = {e.headword.lower() for e in entries if e.pos == "n" and e.definitions}
    lower_dict = {w for w in dictionary_words if w.islower()}
    candidates = []
    for lem in lemmas:
        w = lem.word
        if lem.pos != "n" or not re.fullmatch(r"[a-z]{4,14}", w) or w not in lower_dict or w not in gcide_nouns:
            continue
        s0 = synsets.get(("n", lem.synsets[0]))
        if not s0 or not ph.countable(s0.definition) or not 4 <= len(s0.definition.split()) <= 20:
            continue
        if freq[w] >= MIN_FREQ:
            candidates.append(w)
    candidates = sorted(set(candidates))
    rng.shuffle(candidates)
    if len(candidates) < TEST_WORDS:
        raise RuntimeError(f"only {len(candidates)} candidate test words (need {TEST_WORDS})")
    return candidates[:TEST_WORDS]


def noun_kinds(synsets, lemmas, dictionary_words):
    """Lower-case common noun -> the first word of its first sense's hypernym."""
    out = {}
    for lem in sorted(lemmas, key=lambda x: (x.pos, x.word.lower(), x.word)):
        if lem.pos == "n" and lem.word.islower() and common_word(lem.word, dictionary_words) and lem.word not in out:
            s0 = synsets.get(("n", lem.synsets[0]))
            hyp = hypernym_word(synsets, s0) if s0 else None
            if hyp:
                out[lem.word] = hyp
    return out


def assign_splits(records, test_words):
    """Held out: every WordNet record carrying the gloss of a synset that a test word's
    WordNet records carry. Records without a gloss (kind, synonyms, opposites) stay."""
    test_words = set(test_words)
    test_synsets = set()
    for r in records:
        if r["source"] == "wordnet" and r["headword"] in test_words:
            test_synsets.update(r["uses"])
    for r in records:
        if r["kind"] == "chat":
            held = r["source"] == "wordnet" and bool(test_synsets.intersection(r["uses"]))
        else:
            held = stable_percent(r["id"]) < PROSE_TEST_PERCENT[r["source"]]
        r["split"] = "test" if held else "train"
    return test_synsets


def qa_items(synsets, lemmas, entries, test_words, train_blob, kinds):
    """The first QA_WORDS test words whose reference gloss does not occur in the training
    text (a generic gloss such as "a group of soldiers" can be part of another word's).
    train_definition: what training taught as the answer (the kind, then GCIDE's definition)."""
    by_word = {lem.word: lem for lem in lemmas if lem.pos == "n"}
    gcide_def = {}
    for e in entries:
        if e.pos == "n" and e.definitions:
            gcide_def.setdefault(e.headword.lower(), e.definitions[0])
    out, skipped = [], []
    for w in test_words:
        if len(out) == QA_WORDS:
            break
        s0 = synsets[("n", by_word[w].synsets[0])]
        if s0.definition.lower() in train_blob:
            skipped.append(w)
            continue
        out.append({
            "kind": "qa", "id": f"qa:{w}", "split": "qa", "word": w,
            "question": f"What is {ph.noun_subject(w, s0.definition)}?",
            "reference": s0.definition, "train_definition": f"A kind of {kinds[w]}. {gcide_def[w]}" if w in kinds else gcide_def[w],
        })
    if len(out) < QA_WORDS:
        raise RuntimeError(f"only {len(out)} test words have a reference gloss that training does not contain")
    return out, skipped


def merge_turns(rng, records):
    """Joins some single-turn train chats into 2-3 turn conversations; greets in the first
    question of a few (GREETING_SHARE) and adds a system prompt to a few (SYSTEM_SHARE)."""
    singles = [r for r in records if r["kind"] == "chat" and r["split"] == "train"]
    rest = [r for r in records if not (r["kind"] == "chat" and r["split"] == "train")]
    rng.shuffle(singles)
    out, i = [], 0
    while i < len(singles):
        n = 1
        if rng.random() < MULTI_TURN_SHARE:
            n = rng.choice((2, 3))
        group = singles[i:i + n]
        i += n
        r = dict(group[0])
        if len(group) > 1:
            r["id"] = "+".join(g["id"] for g in group)
            r["messages"] = [m for g in group for m in g["messages"]]
        if rng.random() < GREETING_SHARE:
            first = r["messages"][0]
            r["messages"] = [{**first, "content": ph.with_greeting(rng, first["content"])}] + r["messages"][1:]
        if rng.random() < SYSTEM_SHARE:
            r["messages"] = [{"role": "system", "content": rng.choice(ph.SYSTEM_PROMPTS)}] + r["messages"]
        out.append(r)
    return out + rest


def about_records(rng, records, copies=20):
    """The hand-written greeting turns, alone and followed by a definition from training."""
    pool = [r for r in records if r["kind"] == "chat" and r["split"] == "train" and len(r["messages"]) == 2]
    out = []
    for i, (q, a) in enumerate(ph.ABOUT_TURNS):
        for k in range(copies):
            msgs = [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
            if k % 2 == 1:
                msgs += rng.choice(pool)["messages"]
            out.append({"kind": "chat", "id": f"about:{i}:{k}", "source": "about", "split": "train", "messages": msgs})
    return out


def build(seed, synsets, lemmas, entries, kjv, fortunes, dictionary_words, wordnet_kind_first=True):
    """Returns (records, qa, stats). Records keep no helper fields."""
    rng = random.Random(seed)
    known = Known(lemmas, dictionary_words)
    kinds = noun_kinds(synsets, lemmas, dictionary_words)
    records = wordnet_records(rng, synsets, lemmas, known.lower_words, dictionary_words, kinds if wordnet_kind_first else None)
    records += gcide_records(rng, entries, known, kinds)
    records += quote_records(entries)
    records += [text(f"kjv:{pid}", "kjv", body) for pid, body in kjv]
    records += [text(f"fortune:{name}:{i:05d}", "fortunes", body) for name, i, body in fortunes]
    freq = word_frequencies([s.definition for s in synsets.values()] + [d for e in entries for d in e.definitions] + [b for _, b in kjv] + [b for _, _, b in fortunes])
    # Its own generator: the held-out words do not move when a phrasing change draws more
    # or fewer numbers from rng.
    test_words = choose_test_words(random.Random(f"{seed}:test-words"), synsets, lemmas, entries, dictionary_words, freq)
    test_synsets = assign_splits(records, test_words)
    records = merge_turns(rng, records)
    records += about_records(rng, records)
    from corpus_io import render  # noqa: E402 (the corpus package is used from tools/demo-model)

    train_blob = "\n".join(render(r) for r in records if r["split"] == "train").lower()
    qa, skipped = qa_items(synsets, lemmas, entries, test_words, train_blob, kinds)
    for r in records:
        r.pop("headword", None)
        r.pop("uses", None)
    records.sort(key=lambda r: (r["split"] != "train", r["source"], r["id"]))
    stats = Counter(f"{r['split']}/{r['source']}/{r['kind']}" for r in records)
    return records, qa, {"records": dict(sorted(stats.items())), "test_words": len(test_words), "test_synsets": len(test_synsets), "qa": len(qa), "qa_skipped_generic_gloss": skipped}
