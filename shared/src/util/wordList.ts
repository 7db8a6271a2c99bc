/**
 * How English a text is, and whether it is about the right thing: the share of its words
 * in a dictionary word list (e.g. wamerican's /usr/share/dict/american-english, read by
 * the caller), and the content words (not stopwords, compared by a crude stem) it shares
 * with a reference text. Used by the demo model's evaluation and its e2e test.
 */

/** Words of a text: letters with inner apostrophes ("don't", "dog's"); hyphens split. */
export function wordsOf(text: string): string[] {
  return text.match(/[A-Za-z]+(?:['’][A-Za-z]+)*/g) ?? [];
}

export class WordList {
  private constructor(private readonly words: ReadonlySet<string>) {}

  static fromText(text: string): WordList {
    return new WordList(new Set(text.split('\n').map((w) => w.trim()).filter((w) => w.length > 0)));
  }

  get size(): number {
    return this.words.size;
  }

  /** As written, in lower case, or capitalised (sentence starts, names). */
  has(word: string): boolean {
    const w = word.replace(/’/g, "'");
    const lower = w.toLowerCase();
    return this.words.has(w) || this.words.has(lower) || this.words.has(lower.charAt(0).toUpperCase() + lower.slice(1));
  }

  /** Words of `text` and how many of them are in the list. */
  score(text: string): { words: number; inList: number; missing: string[] } {
    const words = wordsOf(text);
    const missing = words.filter((w) => !this.has(w));
    return { words: words.length, inList: words.length - missing.length, missing };
  }
}

const STOPWORDS = new Set(
  (
    'a about above after again against all also am an and any are as at be because been before being below between both but by can could did do does doing ' +
    'down during each either etc few for from further had has have having he her here hers herself him himself his how i if in into is it its itself just ' +
    'like made make may me means meaning might more most much must my myself no nor not now of off often on once one only or other our ours out over own ' +
    'same she should so some something someone such than that the their theirs them themselves then there these they thing things this those through to ' +
    'too under until up upon usually used very was we were what when where which while who whom why will with word would you your used use kind'
  ).split(' '),
);

/** A crude English stem: enough to match "ships" with "ship" and "giving" with "give". */
export function stem(word: string): string {
  let w = word.toLowerCase();
  for (const [suffix, repl] of [['ies', 'y'], ['ing', ''], ['ed', ''], ['es', ''], ['ly', ''], ['s', '']] as const) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 3) {
      w = w.slice(0, w.length - suffix.length) + repl;
      break;
    }
  }
  return w.endsWith('e') && w.length >= 4 ? w.slice(0, -1) : w;
}

/** Content-word stems of a text, without stopwords and without the words in `exclude`. */
export function contentStems(text: string, exclude: readonly string[] = []): Set<string> {
  const skip = new Set(exclude.flatMap((w) => wordsOf(w)).map(stem));
  const out = new Set<string>();
  for (const w of wordsOf(text)) {
    const lower = w.toLowerCase();
    if (lower.length < 3 || STOPWORDS.has(lower)) continue;
    const s = stem(lower);
    if (!skip.has(s)) out.add(s);
  }
  return out;
}

/** The content-word stems an answer shares with the reference (the asked word excluded). */
export function sharedContent(answer: string, reference: string, askedWord: string): string[] {
  const ref = contentStems(reference, [askedWord]);
  return [...contentStems(answer, [askedWord])].filter((s) => ref.has(s)).sort();
}
