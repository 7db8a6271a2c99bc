/** The dictionary word list the demo model's answers are scored with (scoring: @afd/shared's WordList). */
import { readFile } from 'node:fs/promises';
import { WordList } from '@afd/shared';

/** Debian's wamerican word list. */
export const defaultWordListPath = '/usr/share/dict/american-english';

/** Reads a word list, one word a line; a missing or tiny file is an error saying what to install. */
export async function readWordList(path: string = defaultWordListPath): Promise<WordList> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the word list ${path} (${(err as Error).message}); on Debian: apt-get install wamerican`);
  }
  const list = WordList.fromText(text);
  if (list.size < 1000) throw new Error(`${path} has only ${list.size} words; expected a dictionary word list such as wamerican's`);
  return list;
}
