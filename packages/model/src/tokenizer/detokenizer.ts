// Streaming text from generated ids. Tokens are not characters: an emoji can span four byte-fallback tokens
// (<0xF0><0x9F>...) or two byte-level BPE pieces, and SentencePiece drops the '▁' space of the first token only.
// Decoding each id alone would print U+FFFD halves and wrong spaces, so this keeps a small window of ids and emits
// only text that can no longer change:
//   - `prefix..read` are ids already emitted (kept as context), `read..end` are ids not yet emitted;
//   - delta = decode(prefix..end) minus decode(prefix..read), emitted only when it grew and does not end in an
//     unfinished character (U+FFFD); both decodes start at the same id, so a start-of-window space strip cancels.
// The concatenation of all deltas and flush() equals tokenizer.decode(all ids).

import type { Tokenizer } from './tokenizer.ts';

export interface DetokenizerOptions {
  /** Drop special tokens (as decode's skipSpecialTokens). Default false. */
  skipSpecialTokens?: boolean;
}

export interface Detokenizer {
  /** Adds one generated id; returns the text it completes ('' while a character or a space is still open). */
  push(id: number): string;
  /** Ends the sequence: returns whatever was held back (an unfinished character decodes as U+FFFD, as decode does). */
  flush(): string;
}

const REPLACEMENT = '\uFFFD';

/**
 * An incremental detokenizer for one sequence.
 * @example
 * const detok = createDetokenizer(tok);
 * let text = '';
 * for (const id of ids) text += detok.push(id);
 * text += detok.flush(); // === tok.decode(ids)
 */
export function createDetokenizer(tokenizer: Tokenizer, options: DetokenizerOptions = {}): Detokenizer {
  const decodeOptions = { skipSpecialTokens: options.skipSpecialTokens ?? false };
  const decode = (ids: readonly number[]) => tokenizer.decode(ids, decodeOptions);
  // Only the window is kept: ids[0] is the prefix id; everything before it has been emitted and no longer matters.
  let ids: number[] = [];
  let read = 0; // ids[0..read) emitted
  let readText = ''; // decode(ids[0..read))

  /** Text that can no longer change: it grew past what was emitted and does not end in an unfinished character. */
  const final = (text: string) => text.length > readText.length && !text.endsWith(REPLACEMENT) && text.startsWith(readText);
  /** Emits decode(ids[0..end)) past readText and slides the window: the emitted ids become the new prefix. */
  const advance = (end: number, text: string): string => {
    const delta = text.slice(readText.length);
    ids = ids.slice(read);
    end -= read;
    read = end;
    readText = decode(ids.slice(0, end));
    return delta;
  };

  return {
    push(id: number): string {
      ids.push(id);
      const text = decode(ids);
      if (final(text)) return advance(ids.length, text);
      // Held back. A character is at most 4 bytes, so ids older than the last 4 are not waiting for theirs: emit up
      // to there, which keeps the window (and each decode) short even on a stream of invalid bytes.
      const cut = ids.length - 4;
      if (cut > read) {
        const older = decode(ids.slice(0, cut));
        if (final(older)) return advance(cut, older);
      }
      return '';
    },
    flush(): string {
      const text = decode(ids);
      const rest = text.startsWith(readText) ? text.slice(readText.length) : '';
      ids = [];
      read = 0;
      readText = '';
      return rest;
    },
  };
}
