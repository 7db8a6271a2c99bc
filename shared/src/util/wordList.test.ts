import { describe, expect, it } from 'vitest';
import { contentStems, sharedContent, stem, WordList, wordsOf } from './wordList.js';

const list = WordList.fromText(['a', 'tower', 'with', 'light', 'ship', "ship's", 'Paris', 'is', 'the', 'of', 'France', "don't"].join('\n'));

describe('WordList', () => {
  it('splits words on anything but letters and inner apostrophes', () => {
    expect(wordsOf("A light-house: don't stop, ship's 3 masts!")).toEqual(['A', 'light', 'house', "don't", 'stop', "ship's", 'masts']);
    expect(wordsOf('42 ...')).toEqual([]);
  });

  it('finds words as written, in lower case or capitalised, and lists the missing ones', () => {
    expect(list.has('Tower')).toBe(true);
    expect(list.has('PARIS')).toBe(true);
    expect(list.has('paris')).toBe(true);
    expect(list.has('ship’s')).toBe(true);
    expect(list.score('The tower of Paris is a zorbl.')).toEqual({ words: 7, inList: 6, missing: ['zorbl'] });
  });

  it('stems the usual suffixes and keeps short words', () => {
    expect(stem('ships')).toBe(stem('ship'));
    expect(stem('giving')).toBe(stem('give'));
    expect(stem('houses')).toBe(stem('house'));
    expect(stem('bodies')).toBe('body');
    expect(stem('is')).toBe('is');
  });

  it('shares content words only, never stopwords or the asked word', () => {
    expect([...contentStems('A lighthouse is a tower with a light', ['lighthouse'])].sort()).toEqual(['light', 'tower']);
    expect(sharedContent('A lighthouse is a tall tower on the coast.', 'a tower with a light that gives warning of shoals', 'lighthouse')).toEqual(['tower']);
    expect(sharedContent('A lighthouse is a lighthouse.', 'lighthouses of the world', 'lighthouse')).toEqual([]);
    expect(sharedContent('It is what it is.', 'what it is', 'x')).toEqual([]);
  });
});
