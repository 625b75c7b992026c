// How a note is cut into passages for search by meaning: paragraphs first (a blank line, a Markdown heading or a list
// item starts one), then sentences (Intl.Segmenter), then words, packed greedily into passages of about
// CHUNKING.maxTokens word pieces. One passage is what one vector stands for, and what the search returns to the model:
// small enough that a mean-pooled vector keeps one topic (all-MiniLM was trained on ≤128-token texts and
// sentence-transformers cuts it at 256), large enough to carry the sentence around a fact. Where a cut falls inside a
// paragraph, the next passage starts again with the last sentence before the cut (CHUNKING.overlapTokens at most), so a
// fact told over two sentences is whole in one of them; paragraph boundaries get no overlap (a paragraph is its own
// topic). Pure and synchronous: the page and the node tests run the same code.

/** The passage sizes, in estimated word pieces (estimateTokens). */
export const CHUNKING = {
  /** A passage holds at most this many (a single longer word is cut by characters). */
  maxTokens: 160,
  /** A sentence carried over into the next passage, when the cut falls inside a paragraph, holds at most this many. */
  overlapTokens: 40,
  /** A heading starts a new passage unless the one so far is shorter than this. */
  minTokens: 24,
} as const;

/** A passage of a text: `text` is `source.slice(start, end)`. */
export interface TextChunk {
  text: string;
  start: number;
  end: number;
  /** Estimated word pieces (estimateTokens). */
  tokens: number;
}

/**
 * Word pieces a BERT WordPiece tokenizer makes of `text`, estimated without its vocabulary: one per punctuation mark,
 * one per CJK character, one per 3 digits, and a word of letters one piece per 7 letters (rounded up: common words are
 * one piece, long or rare ones split). The embedding model's real count is in its embed() result; this only sizes
 * passages, and `truncate: true` catches an underestimate.
 * @example
 * estimateTokens('The locker code is 4512.'); // 7
 */
export function estimateTokens(text: string): number {
  let n = 0;
  for (const m of text.matchAll(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|\p{N}+|[\p{L}\p{M}]+|[^\s\p{L}\p{M}\p{N}]/gu)) {
    const w = m[0];
    if (/^\p{N}/u.test(w)) n += Math.ceil(w.length / 3);
    else if (/^[\p{L}\p{M}]{2,}/u.test(w)) n += Math.ceil(w.length / 7);
    else n += 1;
  }
  return n;
}

/** A span of the source: [start, end). */
interface Span {
  start: number;
  end: number;
  tokens: number;
}

/** A paragraph's spans and whether it is a heading. */
interface Paragraph {
  heading: boolean;
  start: number;
  end: number;
}

/** The paragraphs of `text`: split at blank lines, and before a Markdown heading or list item. */
function paragraphs(text: string): Paragraph[] {
  const out: Paragraph[] = [];
  let start = -1;
  let end = 0;
  let heading = false;
  const close = () => {
    if (start >= 0) out.push({ heading, start, end });
    start = -1;
  };
  for (const line of text.matchAll(/[^\n]*(?:\n|$)/g)) {
    if (line.index >= text.length && line[0] === '') break;
    const content = line[0].replace(/\s+$/, '');
    const lineStart = line.index + (content.length - content.trimStart().length);
    if (content.trim() === '') {
      close();
      continue;
    }
    const isHeading = /^\s{0,3}#{1,6}\s/.test(content);
    const isItem = /^\s*(?:[-*+]|\d+[.)])\s/.test(content);
    if (isHeading || isItem || heading) close();
    if (start < 0) {
      start = lineStart;
      heading = isHeading;
    }
    end = line.index + content.length;
  }
  close();
  return out;
}

/** The sentences of text[p.start, p.end), each cut into word windows of at most `max` when longer. */
function sentences(text: string, p: Paragraph, max: number): Span[] {
  const out: Span[] = [];
  const body = text.slice(p.start, p.end);
  const segmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });
  for (const s of segmenter.segment(body)) {
    const trimmed = s.segment.trimEnd();
    if (!trimmed.trim()) continue;
    const lead = trimmed.length - trimmed.trimStart().length;
    const start = p.start + s.index + lead;
    const end = p.start + s.index + trimmed.length;
    const tokens = estimateTokens(text.slice(start, end));
    if (tokens <= max) out.push({ start, end, tokens });
    else out.push(...words(text, start, end, max));
  }
  return out;
}

/** text[start, end) in windows of whole words of at most `max` estimated pieces (a longer word cut by characters). */
function words(text: string, start: number, end: number, max: number): Span[] {
  const out: Span[] = [];
  let cur: Span | undefined;
  for (const m of text.slice(start, end).matchAll(/\S+/g)) {
    const ws = start + m.index;
    const we = ws + m[0].length;
    const t = estimateTokens(m[0]);
    if (t > max) {
      // One "word" past a passage (a URL, base64): cut by characters, ~4 a piece.
      if (cur) out.push(cur);
      cur = undefined;
      for (let s = ws; s < we; s += max * 4) {
        const e = Math.min(we, s + max * 4);
        out.push({ start: s, end: e, tokens: estimateTokens(text.slice(s, e)) });
      }
      continue;
    }
    if (cur && cur.tokens + t > max) {
      out.push(cur);
      cur = undefined;
    }
    if (cur) {
      cur.end = we;
      cur.tokens += t;
    } else cur = { start: ws, end: we, tokens: t };
  }
  if (cur) out.push(cur);
  return out;
}

/**
 * `text` cut into passages (see the file's header): in order, covering every sentence, each of at most `maxTokens`
 * estimated word pieces; consecutive passages of one paragraph share the sentence at the cut when it is at most
 * `overlapTokens`. Empty text: no passage.
 * @example
 * chunkText('First paragraph.\n\nSecond one. It has two sentences.', { maxTokens: 9 }).map((c) => c.text);
 * // ['First paragraph.\n\nSecond one.', 'Second one. It has two sentences.'] (cut inside a paragraph: overlap)
 */
export function chunkText(text: string, o: { maxTokens?: number; overlapTokens?: number; minTokens?: number } = {}): TextChunk[] {
  const max = o.maxTokens ?? CHUNKING.maxTokens;
  const overlap = o.overlapTokens ?? CHUNKING.overlapTokens;
  const min = o.minTokens ?? CHUNKING.minTokens;
  const out: TextChunk[] = [];
  let cur: Span | undefined;
  /** The last sentence added to `cur`, and its paragraph. */
  let last: { span: Span; paragraph: number } | undefined;
  const flush = () => {
    if (cur) out.push({ text: text.slice(cur.start, cur.end), start: cur.start, end: cur.end, tokens: cur.tokens });
    cur = undefined;
  };
  for (const [pi, p] of paragraphs(text).entries()) {
    if (p.heading && cur && cur.tokens >= min) flush();
    for (const s of sentences(text, p, max)) {
      // Paragraphs joined in one passage count one piece for the break between them.
      const join = cur && last && last.paragraph !== pi ? 1 : 0;
      if (cur && cur.tokens + join + s.tokens > max) {
        const carried = last && last.paragraph === pi && last.span.tokens <= overlap && last.span.start > cur.start && last.span.tokens + s.tokens <= max ? last.span : undefined;
        flush();
        if (carried) cur = { ...carried };
      }
      if (cur) {
        cur.tokens += (last && last.paragraph !== pi ? 1 : 0) + s.tokens;
        cur.end = s.end;
      } else cur = { ...s };
      last = { span: s, paragraph: pi };
    }
  }
  flush();
  return out;
}
