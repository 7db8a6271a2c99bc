"""Corpus preparation: parsers, phrasing, the held-out split and the corpus file.
Standard library only. Run: python3 -m unittest discover -s tools/demo-model/tests"""
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import corpus_io  # noqa: E402
from corpus import build, gcide, phrasing, prose, wordnet  # noqa: E402

LIGHTHOUSE = (
    'Lighthouse \\Light"house`\\ (l[imac]t"hous`), n.; pl.\n'
    '   {Lighthouses} (l[imac]t"houz`[e^]z).\n'
    "   A tower or other building with a powerful light at top,\n"
    "   erected at the entrance of a port; a pharos.\n"
    "   [1913 Webster]\n"
)
RUN = (
    "Run \\Run\\ (r[u^]n), v. i. [imp. {Ran} (r[a^]n) or {Run}; p. p.\n"
    "   {Run}; p. pr. & vb. n. {Running}.] [OE. rinnen, rennen.\n"
    "   Cf. {Ember}, a., {Rennet}.]\n"
    "   1. To move swiftly; -- said of things animate or inanimate;\n"
    "      as, to run a race.\n"
    "      [1913 Webster]\n"
    "\n"
    '                "Ha, ha, the fox!" and after him they ran, swiftly.\n'
    "                                                  --Chaucer.\n"
    "          [1913 Webster]\n"
    "\n"
    "   2. To flee, as from fear or danger. [Obs.]\n"
    "      [1913 Webster]\n"
)
FROM_WORDNET = "oceanographer \\oceanographer\\ n.\n   A scientist who studies physical and biological aspects of\n   the seas.\n   [WordNet 1.5]\n"
STRAY = 'Clarence \\Clar"ence\\, n.\n   A close four-wheeled carriage, with one seat inside, and a\n   seat for the driver.\n   [1913 Webster] Clarenceux\n'

WN_LINE = "02814860 06 n 04 beacon 1 lighthouse 0 beacon_light 0 pharos 0 002 @ 04460130 n 0000 ! 01234567 n 0201 | a tower with a light that gives warning of shoals to passing ships; \"the beacon shone\"  "


class GcideTest(unittest.TestCase):
    def test_header_inflections_and_etymology_are_not_senses(self):
        e = gcide.parse_article(LIGHTHOUSE)
        self.assertEqual((e.headword, e.pos), ("Lighthouse", "n"))
        self.assertEqual(e.definitions, ["A tower or other building with a powerful light at top, erected at the entrance of a port; a pharos."])
        r = gcide.parse_article(RUN)
        self.assertEqual(r.pos, "v")
        self.assertEqual(r.definitions, ["To move swiftly; -- said of things animate or inanimate."])  # "; as," usage cut, [Obs.] sense dropped
        self.assertEqual(r.quotes, ['"Ha, ha, the fox!" and after him they ran, swiftly.'])

    def test_wordnet_derived_senses_and_stray_text_are_dropped(self):
        self.assertIsNone(gcide.parse_article(FROM_WORDNET))
        self.assertEqual(gcide.parse_article(STRAY).definitions, ["A close four-wheeled carriage, with one seat inside, and a seat for the driver."])

    def test_base64_offsets(self):
        self.assertEqual(gcide.b64_number("B"), 1)
        self.assertEqual(gcide.b64_number("BA"), 64)


class WordnetTest(unittest.TestCase):
    def test_data_line(self):
        s = wordnet.parse_data_line(WN_LINE, "n")
        self.assertEqual(s.words, ["beacon", "lighthouse", "beacon light", "pharos"])
        self.assertEqual(s.definition, "a tower with a light that gives warning of shoals to passing ships")
        self.assertEqual(s.examples, ["the beacon shone"])
        self.assertEqual(s.hypernyms, ["04460130"])
        self.assertEqual(s.antonyms, {"lighthouse": ("01234567", 1)})
        self.assertEqual(s.lexfile, 6)

    def test_gloss_leading_parenthetical(self):
        self.assertEqual(wordnet.split_gloss("(usually followed by `to') having the means; \"able to swim\""), ("having the means", ["able to swim"]))


class PhrasingTest(unittest.TestCase):
    def test_articles_and_answers(self):
        self.assertEqual(phrasing.indefinite("apple"), "an")
        self.assertEqual(phrasing.indefinite("unicorn"), "a")
        self.assertEqual(phrasing.indefinite("hour"), "an")
        rng = random.Random(0)
        answers = {phrasing.define_answer(rng, "lighthouse", "n", "a tower with a light") for _ in range(40)}
        self.assertEqual(answers, {"A lighthouse is a tower with a light."})  # one opening for every noun
        lex = {"a", "tower"}
        self.assertIn("A symphony is a stringed instrument.", {phrasing.define_answer(rng, "symphony", "n", "A stringed instrument.", lexicon=lex | {"stringed"}) for _ in range(40)})
        self.assertIn("Paris is the chief city of France.", {phrasing.define_answer(rng, "Paris", "n", "The chief city of France.", lexicon={"the"}) for _ in range(40)})
        self.assertIn("To run is to move fast.", {phrasing.define_answer(rng, "run", "v", "To move fast.") for _ in range(40)})
        self.assertIn("Sandalwood tree is a parasitic tree.", {phrasing.define_answer(rng, "sandalwood tree", "n", "parasitic tree") for _ in range(40)})
        self.assertEqual(phrasing.lower_first("UNESCO agency"), "UNESCO agency")
        self.assertEqual(phrasing.define_answer(rng, "lighthouse", "n", "A tower or other building with a light.", lexicon={"a"}, kind="tower"),
                         "A lighthouse is a kind of tower. A tower or other building with a light.")

    def test_questions_name_the_word(self):
        rng = random.Random(1)
        for pos in "nvar":
            for _ in range(20):
                self.assertIn("benevolent", phrasing.define_question(rng, "benevolent", pos, "a kind act"))


class SplitTest(unittest.TestCase):
    def test_wordnet_records_carrying_a_test_gloss_are_held_out(self):
        recs = [
            build.chat("wn:n:lighthouse:def", "wordnet", [("q", "a")], "lighthouse", ["n1"]),
            build.chat("wn:n:beacon:def", "wordnet", [("q", "a")], "beacon", ["n1"]),
            build.chat("wn:n:tower:def", "wordnet", [("q", "a")], "tower", ["n2"]),
            build.chat("gc:n:lighthouse:def", "gcide", [("q", "a")], "lighthouse"),
            build.chat("wn:n:lighthouse:kind", "wordnet", [("q", "A lighthouse is a kind of tower.")], "lighthouse"),
            build.chat("wn:n:lighthouse:syn", "wordnet", [("q", "Another word for lighthouse is beacon.")], "lighthouse"),
            build.text("kjv:Genesis 1.0", "kjv", "In the beginning"),
        ]
        build.assign_splits(recs, ["lighthouse"])
        # the gloss goes (with every word sharing it); what carries no gloss stays
        self.assertEqual([r["split"] for r in recs[:6]], ["test", "test", "train", "train", "train", "train"])
        self.assertIn(recs[6]["split"], ("train", "test"))

    def test_records_name_the_kind_and_keep_common_words_only(self):
        line = "04460130 06 n 01 tower 0 000 | a structure taller than its diameter  "
        tower = wordnet.parse_data_line(line, "n")
        beacon = wordnet.parse_data_line(WN_LINE, "n")
        synsets = {("n", tower.offset): tower, ("n", beacon.offset): beacon}
        lemmas = [wordnet.Lemma("lighthouse", "n", [beacon.offset], 1), wordnet.Lemma("beacon light", "n", [beacon.offset], 0), wordnet.Lemma("pharos", "n", [beacon.offset], 0)]
        words = {"lighthouse", "tower", "beacon"}
        self.assertEqual(build.noun_kinds(synsets, lemmas, words), {"lighthouse": "tower"})
        recs = build.wordnet_records(random.Random(0), synsets, lemmas, words, words)
        self.assertEqual({r["headword"] for r in recs}, {"lighthouse"})  # "beacon light" is two words, "pharos" not in the list
        kind = [r for r in recs if r["id"].endswith(":kind")]
        self.assertEqual(kind[0]["messages"][1]["content"], "A lighthouse is a kind of tower.")
        self.assertEqual(kind[0]["uses"], [])
        self.assertEqual([r["uses"] for r in recs if r["id"].endswith(":def")], [[f"n{beacon.offset}"]])
        first = build.wordnet_records(random.Random(0), synsets, lemmas, words, words, kinds=build.noun_kinds(synsets, lemmas, words))
        answers = {r["messages"][1]["content"] for r in first if ":def" in r["id"]}
        self.assertEqual(answers, {"A lighthouse is a kind of tower. A tower with a light that gives warning of shoals to passing ships."})

    def test_held_out_words_do_not_move_with_the_phrasing(self):
        """The WordNet answers' form changes how many numbers the phrasing draws; the
        held-out words and questions stay the same."""
        nouns = ["anchor", "basket", "candle", "dagger", "engine", "fabric", "goblet", "hammer", "island", "jacket"]
        thing = wordnet.Synset("00000001", "n", 3, ["thing"], "a separate and self-contained entity", [])
        synsets = {("n", thing.offset): thing}
        lemmas, entries = [wordnet.Lemma("thing", "n", [thing.offset], 1)], []
        for i, w in enumerate(nouns):
            s = wordnet.Synset(f"1{i:07d}", "n", 6, [w], f"a common {w} made of wood and iron", [], hypernyms=[thing.offset])
            synsets[("n", s.offset)] = s
            lemmas.append(wordnet.Lemma(w, "n", [s.offset], 1))
            entries.append(gcide.Entry(w, "n", [f"One {w} as the old books describe it."]))
        words = set(nouns) | {"thing"}
        prose_text = [("Genesis 1.1", " ".join(nouns * 3))]
        saved = build.TEST_WORDS, build.QA_WORDS
        build.TEST_WORDS, build.QA_WORDS = 4, 2
        try:
            runs = [build.build(7, synsets, lemmas, entries, prose_text, [], words, kind_first) for kind_first in (True, False)]
        finally:
            build.TEST_WORDS, build.QA_WORDS = saved
        (kf_records, kf_qa, _), (plain_records, plain_qa, _) = runs
        self.assertEqual([q["word"] for q in kf_qa], [q["word"] for q in plain_qa])
        held = lambda records: sorted(r["id"].split(":")[2] for r in records if r["split"] == "test" and r["source"] == "wordnet")
        self.assertEqual(held(kf_records), held(plain_records))
        self.assertEqual(len(set(held(kf_records))), 4)
        glosses = lambda records: [m["content"] for r in records for m in r.get("messages", []) if m["role"] == "assistant" and "wood and iron" in m["content"]]
        self.assertTrue(glosses(kf_records) and glosses(plain_records))
        self.assertTrue(all(" is a kind of thing. A common " in a for a in glosses(kf_records)))
        self.assertFalse(any("kind of" in a for a in glosses(plain_records)))

    def test_merge_turns_keeps_every_message(self):
        rng = random.Random(3)
        recs = [build.chat(f"c{i}", "wordnet", [(f"q{i}", f"a{i}")], f"w{i}") for i in range(200)]
        for r in recs:
            r["split"] = "train"
        merged = build.merge_turns(rng, recs)
        users = [m["content"] for r in merged for m in r["messages"] if m["role"] == "user"]
        greeted = [u for u in users if not u.startswith("q")]
        self.assertTrue(0 < len(greeted) < 30, greeted)
        self.assertTrue(all(any(u.startswith(g) for g in phrasing.GREETINGS) for u in greeted), greeted)
        self.assertEqual(sorted(u.rsplit(" ", 1)[-1] for u in users), sorted(f"q{i}" for i in range(200)))
        self.assertLess(len(merged), 200)

    def test_greetings_keep_the_question(self):
        rng = random.Random(1)
        seen = {phrasing.with_greeting(rng, "What is a lighthouse?") for _ in range(200)}
        self.assertIn("Hello! What is a lighthouse?", seen)
        self.assertIn("Hi, what is a lighthouse?", seen)
        self.assertTrue(all(s.lower().endswith("what is a lighthouse?") for s in seen))
        self.assertTrue(all(phrasing.with_greeting(random.Random(k), "I don't know.").endswith(" I don't know.") for k in range(20)))

    def test_opposites_are_asked_several_ways(self):
        hot = wordnet.Synset("01247240", "a", 0, ["hot"], "used of physical heat; having a high temperature", [], antonyms={"hot": ("01251128", 1)})
        cold = wordnet.Synset("01251128", "a", 0, ["cold"], "having a low or inadequate temperature", [])
        synsets = {("a", hot.offset): hot, ("a", cold.offset): cold}
        lemmas = [wordnet.Lemma("hot", "a", [hot.offset], 1), wordnet.Lemma("cold", "a", [cold.offset], 1)]
        recs = build.wordnet_records(random.Random(0), synsets, lemmas, {"hot", "cold"}, {"hot", "cold"})
        opposite = [r for r in recs if ":hot:ant" in r["id"]]
        self.assertEqual(len(opposite), build.ANTONYM_PHRASINGS)
        self.assertEqual(len({r["messages"][0]["content"] for r in opposite}), build.ANTONYM_PHRASINGS)
        self.assertTrue(all(r["messages"][1]["content"].endswith("hot is cold.") for r in opposite))

    def test_capitals_are_asked_several_ways(self):
        paris = wordnet.parse_data_line("08932568 15 n 01 Paris 0 000 | the capital and largest city of France; and international center of culture and commerce  ", "n")
        synsets = {("n", paris.offset): paris}
        lemmas = [wordnet.Lemma("Paris", "n", [paris.offset], 1)]
        recs = build.wordnet_records(random.Random(0), synsets, lemmas, {"paris"}, {"Paris"})
        capital = [r for r in recs if ":capital" in r["id"]]
        self.assertEqual(len(capital), build.CAPITAL_PHRASINGS)
        self.assertEqual(len({r["messages"][0]["content"] for r in capital}), build.CAPITAL_PHRASINGS)
        self.assertTrue(all("France" in r["messages"][0]["content"] and "Paris" in r["messages"][1]["content"] for r in capital))


class ProseTest(unittest.TestCase):
    def test_kjv_checks_its_size_and_passages_keep_verses_whole(self):
        with self.assertRaises(RuntimeError):
            prose.parse_kjv("\nGenesis 1\n\n  1 In the beginning God created the heaven and the earth.\n")
        chapters = [prose.Chapter("Genesis", 1, ["a" * 700, "b" * 700, "c"])]
        self.assertEqual([p for p, _ in prose.kjv_passages(chapters, 1200)], ["Genesis 1.0", "Genesis 1.1"])

    def test_fortune_cleanup(self):
        self.assertEqual(prose.clean_fortune("Hello there,\tworld.\n\t\t-- Someone\n"), "Hello there,    world.\n        -- Someone")
        self.assertIsNone(prose.clean_fortune("| | | | |\n+-+-+-+-+\n| | | | |"))


class CorpusFileTest(unittest.TestCase):
    def test_round_trip_is_byte_reproducible(self):
        recs = [{"kind": "chat", "id": "x", "split": "train", "source": "s", "messages": [{"role": "user", "content": "What is é?"}]}]
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.jsonl.gz"), os.path.join(d, "b.jsonl.gz")
            corpus_io.write(a, {"seed": 1}, recs)
            corpus_io.write(b, {"seed": 1}, recs)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                self.assertEqual(fa.read(), fb.read())
            meta, back = corpus_io.read(a)
            self.assertEqual((meta["seed"], back), (1, recs))

    def test_render_matches_the_template_format(self):
        msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]
        self.assertEqual(corpus_io.render_chat(msgs), "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n")
        self.assertTrue(corpus_io.render_chat(msgs[:2], add_generation_prompt=True).endswith("<|im_start|>assistant\n"))
        self.assertFalse(corpus_io.chat_template().endswith("\n"))

    def test_digest_is_order_sensitive(self):
        self.assertNotEqual(corpus_io.ids_digest([[1, 2], [3]]), corpus_io.ids_digest([[3], [1, 2]]))
        self.assertEqual(corpus_io.ids_digest([[0, 12]]), corpus_io.ids_digest([[0, 12]]))


if __name__ == "__main__":
    unittest.main()
