/**
 * The held-out "What is X?" questions through the serving path (chat template, scheduler,
 * engine sampler, detokenizer), greedy and sampled, each answer scored by wordScore.
 */
import { sharedContent, type WordList } from '@afd/shared';
import type { ServingEngine } from '../../serving/ServingEngine.js';
import type { TextTokenizer } from '../../serving/tokenizer/TextTokenizer.js';
import type { QuestionRecord } from './corpusFile.js';

export interface Answer {
  id: string;
  question: string;
  reference: string;
  answer: string;
  promptIds: number[];
  tokenIds: number[];
  finishReason: string;
  words: number;
  inWordList: number;
  notInWordList: string[];
  sharedWithReference: string[];
  /** Content words shared with the training set's GCIDE definition of the word (recall, not the target). */
  sharedWithTrainDefinition: string[];
}

export interface ModeReport {
  temperature: number;
  /** Words in the word list over all words of all answers. */
  wordListShare: number;
  /** Answers sharing at least one content word with their reference. */
  contentOverlapShare: number;
  /** Answers sharing a content word with the word's GCIDE definition seen in training: how much the model recalls. */
  trainDefinitionOverlapShare: number;
  meanWords: number;
  answers: Answer[];
}

export interface SamplingMode {
  temperature: number;
  /** Seed of question i is seedBase + i (ignored when greedy). */
  seedBase: number;
}

/** Generates one answer per question, one request at a time (so batching cannot change a greedy answer). */
export async function answerQuestions(
  serving: ServingEngine,
  tokenizer: TextTokenizer,
  questions: readonly QuestionRecord[],
  words: WordList,
  mode: SamplingMode,
  maxTokens: number,
): Promise<ModeReport> {
  const answers: Answer[] = [];
  for (const [i, q] of questions.entries()) {
    const promptIds = tokenizer.encodeChat([{ role: 'user', content: q.question }], { addGenerationPrompt: true });
    const handle = serving.submit({ promptIds, sampling: { temperature: mode.temperature, topP: 1, topK: 0, seed: mode.seedBase + i }, maxTokens });
    let text = '';
    const tokenIds: number[] = [];
    let finishReason = '';
    for await (const ev of handle.events) {
      if (ev.type === 'delta') {
        text += ev.text;
        tokenIds.push(...ev.tokenIds);
      } else if (ev.type === 'done') finishReason = ev.finishReason;
      else throw ev.error;
    }
    const s = words.score(text);
    answers.push({
      id: q.id,
      question: q.question,
      reference: q.reference,
      answer: text.trim(),
      promptIds,
      tokenIds,
      finishReason,
      words: s.words,
      inWordList: s.inList,
      notInWordList: s.missing,
      sharedWithReference: sharedContent(text, q.reference, q.word),
      sharedWithTrainDefinition: sharedContent(text, q.train_definition, q.word),
    });
  }
  return summarize(mode.temperature, answers);
}

export function summarize(temperature: number, answers: Answer[]): ModeReport {
  const totalWords = answers.reduce((n, a) => n + a.words, 0);
  const inList = answers.reduce((n, a) => n + a.inWordList, 0);
  return {
    temperature,
    wordListShare: totalWords === 0 ? 0 : inList / totalWords,
    contentOverlapShare: shareOf(answers, (a) => a.sharedWithReference.length > 0),
    trainDefinitionOverlapShare: shareOf(answers, (a) => a.sharedWithTrainDefinition.length > 0),
    meanWords: answers.length === 0 ? 0 : totalWords / answers.length,
    answers,
  };
}

function shareOf<T>(items: readonly T[], pick: (item: T) => boolean): number {
  return items.length === 0 ? 0 : items.filter(pick).length / items.length;
}

/**
 * Questions whose training-set (GCIDE) definition itself shares a content word with the
 * held-out (WordNet) reference: the overlap a model would score by reciting, word for
 * word, the one definition of the word it was trained on.
 */
export function recitationCeiling(questions: readonly QuestionRecord[]): number {
  return shareOf(questions, (q) => sharedContent(q.train_definition, q.reference, q.word).length > 0);
}
