import { describe, expect, it } from 'vitest';
import { chatChunkTokens, completionChunkTokens } from './tokenLogprobs.js';

describe('token view data from stream chunks', () => {
  it('a chat chunk: each content entry with its top alternatives (bytes dropped)', () => {
    const logprobs = {
      content: [
        { token: ' the', logprob: -0.1, bytes: [32, 116, 104, 101], top_logprobs: [{ token: ' the', logprob: -0.1, bytes: null }, { token: ' a', logprob: -2.5, bytes: null }] },
        { token: ' cat', logprob: -1.2, bytes: null, top_logprobs: [] },
      ],
    };
    expect(chatChunkTokens(logprobs)).toEqual([
      { token: ' the', logprob: -0.1, top: [{ token: ' the', logprob: -0.1 }, { token: ' a', logprob: -2.5 }] },
      { token: ' cat', logprob: -1.2, top: [] },
    ]);
    expect(chatChunkTokens(null)).toEqual([]);
    expect(chatChunkTokens({ content: null })).toEqual([]);
  });

  it('a completions chunk: parallel lists, the alternatives map sorted best first, a token without a logprob left out', () => {
    const logprobs = { tokens: ['Once', ' upon'], token_logprobs: [null, -0.7], top_logprobs: [null, { ' a': -3, ' upon': -0.7 }], text_offset: [0, 4] };
    expect(completionChunkTokens(logprobs)).toEqual([{ token: ' upon', logprob: -0.7, top: [{ token: ' upon', logprob: -0.7 }, { token: ' a', logprob: -3 }] }]);
    expect(completionChunkTokens(undefined)).toEqual([]);
  });
});
