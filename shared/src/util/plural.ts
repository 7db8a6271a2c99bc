/** Counted nouns in messages: "1 rank", "2 ranks", "1 prompt token". */
export function countOf(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
