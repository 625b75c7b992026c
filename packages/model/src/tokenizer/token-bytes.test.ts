// tokenBytes on the real tokenizers (Qwen3 and Llama 3 byte-level BPE, Mistral-vocabulary SentencePiece with byte
// fallback) and on the same vocabularies converted through GGUF metadata: for many texts, the bytes of the tokens
// encode() produces, concatenated, are the text's UTF-8 (as the normalizer left it); special tokens are null.

import { beforeAll, describe, expect, it } from 'vitest';
import { tokenizerFromGguf, tokenizerToGgufMetadata } from './gguf-tokenizer.ts';
import { CORPUS, randomTexts, realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { tokenBytes } from './token-bytes.ts';
import { loadTokenizer, type Tokenizer } from './tokenizer.ts';

const utf8 = new TextEncoder();

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The text as the tokenizer sees it: NFC for Qwen3, SentencePiece's prepended '▁' (a space) for Llama 2. */
function normalized(name: RealTokenizerName, text: string): string {
  if (name === 'qwen3') return text.normalize('NFC');
  if (name === 'llama2') return text === '' ? '' : ` ${text}`;
  return text;
}

function checkRoundTrip(name: RealTokenizerName, tok: Tokenizer, bytes: (Uint8Array | null)[]): number {
  let checked = 0;
  for (const text of [...CORPUS, ...randomTexts(400, 11)]) {
    const ids = tok.encode(text, { addSpecialTokens: false });
    // Texts that spell a special token encode it as that token, which has no bytes: those are checked below.
    if (ids.some((id) => tok.isSpecial(id))) continue;
    const got = concat(ids.map((id) => {
      const b = bytes[id];
      if (b === null) throw new Error(`${name}: token ${id} (${tok.idToToken(id)}) has no bytes`);
      return b;
    }));
    expect([...got], `${name}: ${JSON.stringify(text)}`).toEqual([...utf8.encode(normalized(name, text))]);
    checked++;
  }
  return checked;
}

describe.each<RealTokenizerName>(['qwen3', 'llama3', 'llama2'])('tokenBytes: %s', (name) => {
  let tok: Tokenizer;
  let bytes: (Uint8Array | null)[];
  beforeAll(() => {
    tok = loadTokenizer(realTokenizerFiles(name));
    bytes = tokenBytes(tok);
  });

  it('one entry per id; null exactly for the special tokens', () => {
    expect(bytes.length).toBe(tok.vocabSize);
    const wrong: string[] = [];
    for (let id = 0; id < bytes.length; id++) {
      if (tok.isSpecial(id) !== (bytes[id] === null)) wrong.push(`${id} ${tok.idToToken(id)}`);
    }
    expect(wrong).toEqual([]);
    for (const id of tok.stopIds) expect(bytes[id]).toBeNull();
  });

  it('concatenated token bytes give back the text', () => {
    expect(checkRoundTrip(name, tok, bytes)).toBeGreaterThan(300);
  });

  it('each token alone decodes to its bytes where they are whole UTF-8', () => {
    const dec = new TextDecoder('utf-8', { fatal: true });
    let n = 0;
    for (let id = 0; id < bytes.length; id += 97) {
      const b = bytes[id];
      if (b === null) continue;
      let text: string;
      try {
        text = dec.decode(b);
      } catch {
        continue; // a piece of a multi-byte character
      }
      // SentencePiece's decoder strips the leading space of a whole text: compare after it.
      const want = name === 'llama2' && text.startsWith(' ') ? text.slice(1) : text;
      expect(tok.decode([id]), `${id}`).toBe(want);
      n++;
    }
    expect(n).toBeGreaterThan(200);
  });

  it('known pieces', () => {
    const str = (id: number) => new TextDecoder().decode(bytes[id]!);
    if (name === 'qwen3') {
      expect(str(9707)).toBe('Hello');
      expect(str(1879)).toBe(' world');
      expect(str(198)).toBe('\n');
      expect(str(151667)).toBe('<think>'); // a non-special added token is its text
      expect(bytes[151644]).toBeNull(); // <|im_start|>
    } else if (name === 'llama2') {
      expect(str(22557)).toBe(' Hello');
      expect([...bytes[243]!]).toEqual([0xf0]); // <0xF0>
      expect([...bytes[3 + 0x20]!]).toEqual([0x20]); // <0x20>
      expect([bytes[0], bytes[1], bytes[2]]).toEqual([null, null, null]); // <unk> <s> </s>
    } else {
      expect(str(tok.encode('Hello', { addSpecialTokens: false })[0])).toBe('Hello');
      expect(bytes[128000]).toBeNull(); // <|begin_of_text|>
    }
  });
});

describe.each<RealTokenizerName>(['qwen3', 'llama2'])('tokenBytes through GGUF metadata: %s', (name) => {
  it('the converted tokenizer gives the same bytes', () => {
    const original = loadTokenizer(realTokenizerFiles(name));
    // The values parseGguf would read back from the written metadata (typed wrappers unwrapped).
    const metadata: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(tokenizerToGgufMetadata(original))) {
      const typed = typeof v === 'object' && v !== null && !Array.isArray(v) && 'type' in v ? (v as { type: string; value: unknown }) : undefined;
      metadata[key] = typed ? (typed.type === 'array' ? (typed.value as { value: unknown }[]).map((x) => x.value) : typed.value) : v;
    }
    const converted = tokenizerFromGguf({ 'general.architecture': 'llama', ...metadata }, `${name}.gguf`);
    const a = tokenBytes(original);
    const b = tokenBytes(converted);
    expect(b.length).toBe(a.length);
    let differ = 0;
    for (let id = 0; id < a.length; id++) {
      const x = a[id], y = b[id];
      if ((x === null) !== (y === null) || (x && y && (x.length !== y.length || x.some((v, i) => v !== y[i])))) differ++;
    }
    expect(differ).toBe(0);
    expect(checkRoundTrip(name, converted, b)).toBeGreaterThan(300);
  }, 60_000);
});

describe('tokenBytes: user-defined byte pieces (stories260K-vocab-ud.gguf)', () => {
  it("a GGUF's user-defined '<0xNN>' tokens are the bytes decode() gives them", async () => {
    const { readFileSync } = await import('node:fs');
    const { fileURLToPath } = await import('node:url');
    const { join } = await import('node:path');
    const { parseGguf } = await import('../formats/gguf.ts');
    const { bytesSource } = await import('../source.ts');
    const shared = process.env.INTAB_SHARED ?? fileURLToPath(new URL('../../../../../shared/', import.meta.url));
    const path = join(shared, 'models/stories260K/stories260K-vocab-ud.gguf');
    const gguf = await parseGguf(bytesSource(path, new Uint8Array(readFileSync(path))));
    const tok = tokenizerFromGguf(gguf.metadata, path);
    const bytes = tokenBytes(tok);
    for (let b = 0; b < 256; b++) {
      expect(bytes[3 + b], `<0x${b.toString(16)}>`).toEqual(Uint8Array.of(b));
      if (b > 0x20 && b < 0x80) expect(utf8.encode(tok.decode([3 + b]))).toEqual(Uint8Array.of(b)); // (decode() strips a leading space)
    }
  });
});
