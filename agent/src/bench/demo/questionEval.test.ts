import { describe, expect, it } from 'vitest';
import { recitationCeiling, summarize, type Answer } from './questionEval.js';
import type { QuestionRecord } from './corpusFile.js';

const question = (word: string, reference: string, trainDefinition: string): QuestionRecord => ({
  kind: 'qa',
  id: `qa:${word}`,
  split: 'qa',
  word,
  question: `What is a ${word}?`,
  reference,
  train_definition: trainDefinition,
});

const answer = (sharedWithReference: string[], sharedWithTrainDefinition: string[]): Answer => ({
  id: 'qa:x',
  question: '',
  reference: '',
  answer: '',
  promptIds: [],
  tokenIds: [],
  finishReason: 'stop',
  words: 4,
  inWordList: 3,
  notInWordList: ['zzz'],
  sharedWithReference,
  sharedWithTrainDefinition,
});

describe('question scores', () => {
  it('counts overlap with the reference and with the trained definition separately', () => {
    const r = summarize(0, [answer(['tower'], []), answer([], ['ship']), answer(['light'], ['light']), answer([], [])]);
    expect(r.contentOverlapShare).toBe(0.5);
    expect(r.trainDefinitionOverlapShare).toBe(0.5);
    expect(r.wordListShare).toBe(0.75);
    expect(summarize(0, []).trainDefinitionOverlapShare).toBe(0);
  });

  it('the recitation ceiling is the share of trained definitions that share a content word with their reference', () => {
    const qs = [
      question('lighthouse', 'a tower with a light that gives warning of shoals', 'A tower or other building with a powerful light'),
      question('smithy', 'a workplace where metal is worked', 'The workshop of a smith'),
      question('dime', 'a United States coin worth one tenth of a dollar', 'A silver coin of the United States'),
      // the asked word itself never counts
      question('bridge', 'a bridge over water', 'a bridge of stone'),
    ];
    expect(recitationCeiling(qs)).toBe(0.5);
    expect(recitationCeiling([])).toBe(0);
  });
});
