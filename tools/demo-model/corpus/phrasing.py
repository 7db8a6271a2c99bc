"""Questions and answers in several phrasings, made from one dictionary fact at a time.
Every function takes the random.Random that picks the phrasing, so a corpus is
reproducible from its seed."""
import re

_DETERMINER = re.compile(r"^(?:a|an|any|one|the|some|someone|something|a person|an act)\b", re.I)


def indefinite(word):
    w = word.lower()
    if w.startswith(("hour", "honest", "honor", "honour", "heir")):
        return "an"
    if w.startswith(("uni", "use", "usu", "uti", "eu", "one", "once", "ur")):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


def countable(definition):
    """WordNet and GCIDE define count nouns with a leading article ('a tower with ...')."""
    return bool(re.match(r"^(?:a|an|one|any)\s", definition, re.I))


def lower_first(text, lexicon=None):
    """Lower-cases the first word unless it is a name: with a lexicon, a word whose lower
    case form is not in it ('Paris'); without one, a word with a capital inside ('UNESCO')."""
    first = text.split(" ", 1)[0]
    if not first[:1].isupper():
        return text
    if lexicon is not None:
        keep = len(first) > 1 and first.lower() not in lexicon
    else:
        keep = len(first) > 1 and not first[1:].islower()
    return text if keep else text[0].lower() + text[1:]


def upper_first(text):
    return text[:1].upper() + text[1:]


def sentence(text):
    text = text.strip().rstrip(";,: ")
    return text if text.endswith((".", "!", "?")) else text + "."


def _pick(rng, options):
    return options[rng.randrange(len(options))]


def noun_subject(word, definition):
    """'a lighthouse' / 'water' / 'Paris': how the word is named in a question."""
    if word[:1].isupper() or not countable(definition):
        return word
    return f"{indefinite(word)} {word}"


def define_question(rng, word, pos, definition, person=False):
    if pos == "n":
        if person and word[:1].isupper():
            return _pick(rng, [f"Who was {word}?", f"Who is {word}?", f"Tell me about {word}."])
        s = noun_subject(word, definition)
        return _pick(rng, [
            f"What is {s}?", f"What is {s}?", f"What's {s}?", f"What does {word} mean?", f"Define {word}.",
            f"What is the meaning of {word}?", f"Can you tell me what {s} is?", f"Explain what {s} is.",
            f"What is meant by {word}?", f"I don't know what {s} is. Can you explain?",
        ])
    if pos == "v":
        return _pick(rng, [
            f"What does it mean to {word}?", f"What does {word} mean?", f"Define the verb {word}.",
            f"What is the meaning of the verb {word}?", f"What does the word {word} mean?",
        ])
    return _pick(rng, [
        f"What does {word} mean?", f"What is the meaning of {word}?", f"Define {word}.",
        f"What does the word {word} mean?", f"What does it mean to be {word}?" if pos == "a" else f"How would you explain {word}?",
    ])


def _plural_start(d):
    first = d.split(" ", 1)[0].lower()
    return first.endswith("s") and not first.endswith(("ss", "us", "is", "ous"))


def define_answer(rng, word, pos, definition, examples=(), person=False, lexicon=None, kind=None):
    """kind: for a noun, the kind of thing it names, said first ("A lighthouse is a kind
    of tower. A tower or other building ...")."""
    d = lower_first(definition.rstrip("."), lexicon)
    if pos == "n" and kind:
        forms = [f"{upper_first(noun_subject(word, definition))} is a kind of {kind}. {upper_first(sentence(d))}"]
    elif pos == "n":
        if person and word[:1].isupper():
            main = f"{word} was {d}." if _DETERMINER.match(d) else f"{word} was {indefinite(d)} {d}."
        elif _DETERMINER.match(d):
            main = f"{upper_first(noun_subject(word, definition))} is {d}."
        elif _plural_start(d):
            main = f"{upper_first(word)} means {d}."
        else:  # WordNet often leaves out the article: "parasitic tree of Indonesia ..."
            main = f"{upper_first(word)} is {indefinite(d)} {d}."
        # One form: a noun's answer always starts "A X is …", as the kind-first ones do, so
        # a sampled answer does not drift into another opening ("The word …", a bare gloss).
        forms = [main]
    elif pos == "v":
        body = d[3:] if d.lower().startswith("to ") else d
        main = f"To {word} is to {body}."
        forms = [main, main, f"To {word} means to {body}.", f"The verb \"{word}\" means to {body}."]
    else:
        main = f"{upper_first(word)} means {d}."
        forms = [main, main, f"The word \"{word}\" means {d}."]
    answer = _pick(rng, forms)
    if examples and rng.random() < 0.25:
        answer += f" For example: \"{upper_first(sentence(examples[0]))}\""
    return answer


def senses_turn(rng, word, definitions, lexicon=None):
    q = _pick(rng, [f"What are the meanings of {word}?", f"What can {word} mean?", f"Give me the definitions of {word}.", f"What are the senses of the word {word}?"])
    lines = [f"{i + 1}. {upper_first(sentence(lower_first(d, lexicon)))}" for i, d in enumerate(definitions)]
    a = f"\"{upper_first(word)}\" has {len(definitions)} common meanings:\n" + "\n".join(lines)
    return q, a


def synonym_turn(rng, word, synonyms):
    q = _pick(rng, [f"What is another word for {word}?", f"Give me a synonym for {word}.", f"What is a synonym of {word}?", f"Which words mean the same as {word}?"])
    if len(synonyms) == 1:
        a = _pick(rng, [f"Another word for {word} is {synonyms[0]}.", f"A synonym of {word} is {synonyms[0]}."])
    else:
        listed = ", ".join(synonyms[:-1]) + f" and {synonyms[-1]}"
        a = f"Words that mean the same as {word} are {listed}."
    return q, a


def antonym_turn(rng, word, antonym):
    q = _pick(rng, [f"What is the opposite of {word}?", f"What is an antonym of {word}?", f"What word means the opposite of {word}?"])
    return q, _pick(rng, [f"The opposite of {word} is {antonym}.", f"An antonym of {word} is {antonym}."])


def hypernym_turn(rng, word, definition, hypernym):
    s = noun_subject(word, definition)
    q = _pick(rng, [f"What kind of thing is {s}?", f"What category does {word} belong to?", f"Is {s} a kind of something?"])
    return q, f"{upper_first(s)} is a kind of {hypernym}."


def example_turn(rng, word, example):
    q = _pick(rng, [f"Use the word {word} in a sentence.", f"Give me an example sentence with {word}.", f"How do you use {word} in a sentence?"])
    return q, f"Here is an example: \"{upper_first(sentence(example))}\""


def capital_turn(rng, city, country):
    q = _pick(rng, [
        f"What is the capital of {country}?", f"What city is the capital of {country}?", f"Which city is the capital of {country}?",
        f"What's the capital of {country}?", f"Tell me the capital of {country}.", f"Name the capital of {country}.",
    ])
    main = f"The capital of {country} is {city}."
    return q, _pick(rng, [main, main, f"{city} is the capital of {country}."])


# Put before a few training questions ("Hello! What is a lighthouse?"), so that a greeting
# and a question in one message get the question's answer.
GREETINGS = ["Hello! ", "Hi! ", "Hi, ", "Hello. ", "Good morning! ", "Hey! ", "Hello, "]


def with_greeting(rng, question):
    g = _pick(rng, GREETINGS)
    if g.endswith(("! ", ". ")) or question.startswith(("I ", "I'")):
        return g + question
    return g + question[:1].lower() + question[1:]


SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are a helpful assistant that explains words.", "Answer briefly."]

# Who the model is, in a few words: a small set of hand-written turns, so that a greeting
# gets an answer instead of a dictionary entry (the model card counts them).
ABOUT_TURNS = [
    ("Hello!", "Hello! Ask me what a word means, and I will try to explain it."),
    ("Hi", "Hi! I am a small model that explains English words. Which word would you like to know about?"),
    ("Hello, how are you?", "I am well, thank you. Ask me about a word and I will tell you what it means."),
    ("Good morning!", "Good morning! Which word shall I explain?"),
    ("Who are you?", "I am a small demo model. I was trained on English dictionaries, fortune cookies and the King James Bible, so I am best at explaining what words mean."),
    ("What can you do?", "I can explain what English words mean, give synonyms and opposites, and use words in a sentence."),
    ("What are you good at?", "I am good at definitions: ask me what a word means, what its opposite is, or for another word with the same meaning."),
    ("Thank you!", "You are welcome! Ask me about another word whenever you like."),
    ("Thanks", "You are welcome."),
    ("Goodbye!", "Goodbye! Come back when you want to know what a word means."),
]
