// Stand-in encoders and a small BERT tokenizer for the engine's embeddings and rerank tests (not part of the package's
// API). The encoders are exact and record their passes: a sequence's output is a function of its ids (and, for the
// reranker, of its token types), so order and packing mistakes show. The real encoders are tested against llama.cpp
// and the CPU reference in their own files.

import { expect } from 'vitest';
import { loadTokenizer, type EncodeOptions, type EncoderFacts, type EncoderRunner } from '@intab/model';

export const FACTS: EncoderFacts = { arch: 'bert', layers: 1, hidden: 4, vocab: 64, contextLength: 8, dimensions: 4, pooling: 'mean', normalized: true, matryoshka: false };

/** An encoder whose vector of ids is [length, sum, first, last], normalised; it records each pass's sequences. */
export class RecordingEncoder implements EncoderRunner {
  readonly passes: number[][][] = [];
  readonly weightBytes = 0;
  destroyed = false;
  /** Resolves the pass in flight when set (to hold a pass open). */
  hold?: Promise<void>;
  constructor(
    readonly facts: EncoderFacts = FACTS,
    readonly maxTokensPerPass = 16,
    readonly maxSequencesPerPass = 4,
  ) {}
  async encode(sequences: readonly (readonly number[])[]): Promise<Float32Array[]> {
    expect(sequences.length).toBeLessThanOrEqual(this.maxSequencesPerPass);
    expect(sequences.reduce((n, s) => n + s.length, 0)).toBeLessThanOrEqual(this.maxTokensPerPass);
    this.passes.push(sequences.map((s) => [...s]));
    await this.hold;
    return sequences.map((s) => unit(vectorOf(s)));
  }
  destroy(): void {
    this.destroyed = true;
  }
}

export const vectorOf = (s: readonly number[]) => [s.length, s.reduce((a, b) => a + b, 0), s[0], s.at(-1)!];
export function unit(v: number[]): Float32Array {
  const n = Math.hypot(...v);
  return Float32Array.from(v, (x) => x / n);
}

/** A WordPiece tokenizer as BERT's: lower-cased words, ## pieces, [CLS] first and [SEP] last. */
export function wordPiece() {
  const special = (id: number, content: string) => ({ id, content, special: true, normalized: false, lstrip: false, rstrip: false, single_word: false });
  const vocab: Record<string, number> = { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3 };
  for (let c = 0; c < 26; c++) vocab[String.fromCharCode(97 + c)] = 4 + c;
  for (let c = 0; c < 26; c++) vocab[`##${String.fromCharCode(97 + c)}`] = 30 + c;
  vocab.note = 56;
  vocab.hello = 57;
  return loadTokenizer({
    tokenizerJson: {
      version: '1.0',
      added_tokens: [special(0, '[PAD]'), special(1, '[UNK]'), special(2, '[CLS]'), special(3, '[SEP]')],
      normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
        special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } },
      },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
      model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
    },
  });
}


export const RERANK_FACTS: EncoderFacts = { ...FACTS, dimensions: 1, pooling: 'cls', normalized: false, classifier: { outputs: 1, labels: ['LABEL_0'] } };

/**
 * A reranker whose score of a pair is how many of its type-1 tokens (the document's words) also occur before the
 * split (the query's), special tokens aside: relevance by shared words, exact and easy to predict. It records each
 * pass's sequences and type splits.
 */
export class RecordingReranker implements EncoderRunner {
  readonly passes: { sequences: number[][]; typeSplits?: number[] }[] = [];
  readonly weightBytes = 0;
  readonly facts = RERANK_FACTS;
  destroyed = false;
  constructor(
    readonly maxTokensPerPass = 64,
    readonly maxSequencesPerPass = 4,
    private readonly specials: ReadonlySet<number> = new Set([0, 1, 2, 3]),
  ) {}
  async encode(sequences: readonly (readonly number[])[], options?: EncodeOptions): Promise<Float32Array[]> {
    expect(sequences.length).toBeLessThanOrEqual(this.maxSequencesPerPass);
    expect(sequences.reduce((n, s) => n + s.length, 0)).toBeLessThanOrEqual(this.maxTokensPerPass);
    this.passes.push({ sequences: sequences.map((s) => [...s]), ...(options?.typeSplits ? { typeSplits: [...options.typeSplits] } : {}) });
    return sequences.map((s, b) => {
      const split = options?.typeSplits?.[b] ?? s.length;
      const query = new Set(s.slice(0, split).filter((id) => !this.specials.has(id)));
      return Float32Array.of(s.slice(split).filter((id) => !this.specials.has(id) && query.has(id)).length);
    });
  }
  destroy(): void {
    this.destroyed = true;
  }
}
