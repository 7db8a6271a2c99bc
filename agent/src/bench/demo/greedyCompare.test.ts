import { describe, expect, it } from 'vitest';
import { compareGreedy } from './greedyCompare.js';
import type { Answer, ModeReport } from './questionEval.js';
import type { TrainingMetrics } from './trainingMetrics.js';

const answer = (id: string, promptIds: number[], tokenIds: number[]): Answer => ({
  id, question: id, reference: '', answer: '', promptIds, tokenIds, finishReason: 'stop', words: 0, inWordList: 0, notInWordList: [], sharedWithReference: [], sharedWithTrainDefinition: [],
});
const mode = (answers: Answer[]): ModeReport => ({ temperature: 0, wordListShare: 1, contentOverlapShare: 1, trainDefinitionOverlapShare: 1, meanWords: 0, answers });
const metrics = (refs: { id: string; promptIds: number[]; greedyIds: number[] }[]): TrainingMetrics =>
  ({ reference_answers: refs.map((r) => ({ ...r, question: r.id, answer: '' })) }) as unknown as TrainingMetrics;

describe('compareGreedy', () => {
  it('ignores a trailing stop token on either side, and nothing else', () => {
    const ref = metrics([
      { id: 'a', promptIds: [1, 2], greedyIds: [5, 6, 2] },
      { id: 'b', promptIds: [1, 3], greedyIds: [5, 7] },
      { id: 'c', promptIds: [1, 4], greedyIds: [5, 8, 2] },
      { id: 'd', promptIds: [1, 5], greedyIds: [5, 9, 2] },
    ]);
    const ours = mode([
      answer('a', [1, 2], [5, 6, 2]), // both keep the stop token
      answer('b', [1, 3], [5, 7, 2]), // only ours keeps it
      answer('c', [1, 4], [5, 8]), // only transformers keeps it
      answer('d', [1, 9], [5, 9, 3]), // a different last token is a difference
      answer('x', [1], [1]), // no reference: not compared
    ]);
    expect(compareGreedy(ours, ref, [2])).toEqual({ compared: 4, sameTokens: 3, samePrompt: 3, differing: ['d'] });
  });

  it('has nothing to say without reference answers', () => {
    expect(compareGreedy(mode([answer('a', [1], [2])]), null, [2])).toBeNull();
    expect(compareGreedy(mode([answer('a', [1], [2])]), {} as TrainingMetrics, [2])).toBeNull();
  });
});
