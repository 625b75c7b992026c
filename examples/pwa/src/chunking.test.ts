// How notes are cut into passages for search by meaning: word pieces estimated, paragraphs kept whole when they fit
// (short ones joined), long ones cut at sentences with the last sentence carried over, never over the limit, every
// sentence in some passage and each passage the source's own text (offsets into it), headings starting passages.
import { describe, expect, it } from 'vitest';
import { CHUNKING, chunkText, estimateTokens } from './chunking.ts';

/** A paragraph of `n` numbered sentences of 8 estimated word pieces each ("Fact 3 is about the topic 3."). */
const paragraph = (from: number, n: number) => Array.from({ length: n }, (_, i) => `Fact ${from + i} is about the topic ${from + i}.`).join(' ');

describe('estimateTokens', () => {
  it('counts words, long words, digits, punctuation and CJK characters', () => {
    expect(estimateTokens('The locker code is 4512.')).toBe(7); // 4 words, 2 digit groups, '.'
    expect(estimateTokens('internationalization')).toBe(3); // 20 letters: 3 pieces
    expect(estimateTokens('東京タワー')).toBe(5);
    expect(estimateTokens('   ')).toBe(0);
    expect(estimateTokens(paragraph(1, 1))).toBe(8);
  });
});

describe('chunkText', () => {
  it('keeps a short note whole, and gives nothing for an empty one', () => {
    expect(chunkText('  Milk, eggs and bread.  ')).toEqual([{ text: 'Milk, eggs and bread.', start: 2, end: 23, tokens: 6 }]);
    expect(chunkText('')).toEqual([]);
    expect(chunkText('\n\n  \n')).toEqual([]);
  });

  it('joins short paragraphs into one passage up to the limit, and cuts between paragraphs without overlap', () => {
    const text = [paragraph(1, 2), paragraph(3, 2), paragraph(5, 2)].join('\n\n');
    // 16 pieces a paragraph, 1 for each break between two.
    const chunks = chunkText(text, { maxTokens: 40 });
    expect(chunks.map((c) => c.text)).toEqual([`${paragraph(1, 2)}\n\n${paragraph(3, 2)}`, paragraph(5, 2)]);
    expect(chunks.map((c) => c.tokens)).toEqual([33, 16]);
  });

  it('cuts a long paragraph at sentences, the next passage starting with the sentence before the cut', () => {
    const text = paragraph(1, 10);
    const chunks = chunkText(text, { maxTokens: 32, overlapTokens: 10 });
    const numbers = chunks.map((c) => [...c.text.matchAll(/Fact (\d+)/g)].map((m) => Number(m[1])));
    expect(numbers).toEqual([
      [1, 2, 3, 4],
      [4, 5, 6, 7],
      [7, 8, 9, 10],
    ]);
    // No overlap asked: consecutive passages.
    expect(chunkText(text, { maxTokens: 32, overlapTokens: 0 }).map((c) => c.text.match(/Fact (\d+)/)![1])).toEqual(['1', '5', '9']);
  });

  it('holds every sentence in order within the limit, each passage the source text between its offsets', () => {
    const text = `# Trip to Lisbon\n\n${paragraph(1, 30)}\n\n## Packing\n\n- passport\n- ${paragraph(31, 3)}\n\n${'word '.repeat(400)}`;
    const chunks = chunkText(text);
    for (const c of chunks) {
      expect(c.text).toBe(text.slice(c.start, c.end));
      expect(c.tokens).toBeLessThanOrEqual(CHUNKING.maxTokens);
      expect(c.tokens).toBe(estimateTokens(c.text) + (c.text.match(/\n\s*\n|\n(?=[-#])/g)?.length ?? 0));
    }
    for (let i = 1; i < chunks.length; i++) expect(chunks[i].start).toBeGreaterThan(chunks[i - 1].start);
    for (let n = 1; n <= 33; n++) expect(chunks.some((c) => c.text.includes(`Fact ${n} is about the topic ${n}.`))).toBe(true);
    // A heading starts a passage (the one before it is long enough), and a list item is a paragraph of its own.
    expect(chunks.some((c) => c.text.startsWith('## Packing\n\n- passport\n- Fact 31'))).toBe(true);
    // A sentence past the limit (400 words, no full stop) is cut into windows of words.
    const words = chunks.filter((c) => c.text.startsWith('word'));
    expect(words.length).toBe(Math.ceil(400 / CHUNKING.maxTokens));
    expect(words.map((c) => c.text.split(' ').length).reduce((a, b) => a + b)).toBe(400);
  });

  it('cuts a word longer than a passage by characters', () => {
    const blob = 'x'.repeat(2000);
    const chunks = chunkText(blob, { maxTokens: 100 });
    expect(chunks.map((c) => c.end - c.start)).toEqual([400, 400, 400, 400, 400]);
    expect(chunks.every((c) => c.tokens <= 100)).toBe(true);
  });
});
