// rerankPair against the tokenizer library's own pair encoding (@huggingface/tokenizers' encode(query, { text_pair }),
// which runs the post_processor as transformers does): the same ids and the same token types, for BERT's template
// (a WordPiece tokenizer.json, and the same vocabulary read back from a GGUF), RoBERTa's processor, and a GGUF that
// says add_sep_token (the converted XLM-R form); then truncation (the document's end, never the query's) and refusals.
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { describe, expect, test } from 'vitest';
import { wordPieceTokenizerFiles } from '@intab/testing/wordpiece-vocab';
import { RERANK_PAIRS } from '@intab/testing/embed-inputs';
import { RerankInputError } from './errors.ts';
import { pairTemplate, rerankPair } from './rerank-pair.ts';
import { loadTokenizer, type Tokenizer } from './tokenizer/tokenizer.ts';
import { tokenizerFromGguf, tokenizerToGgufMetadata } from './tokenizer/gguf-tokenizer.ts';
import { parseGguf } from './formats/gguf.ts';
import { writeGguf } from './formats/gguf-writer.ts';
import { bytesSource } from './source.ts';

const files = wordPieceTokenizerFiles();
const bert = loadTokenizer(files);
const roberta = loadTokenizer({ ...files, tokenizerJson: { ...files.tokenizerJson, post_processor: { type: 'RobertaProcessing', cls: ['[CLS]', 101], sep: ['[SEP]', 102], trim_offsets: true, add_prefix_space: false } } });
const bertProcessor = loadTokenizer({ ...files, tokenizerJson: { ...files.tokenizerJson, post_processor: { type: 'BertProcessing', cls: ['[CLS]', 101], sep: ['[SEP]', 102] } } });

/** The WordPiece vocabulary written into a GGUF (as make-model does) and read back. */
async function fromGguf(extra: Record<string, boolean> = {}): Promise<Tokenizer> {
  const bytes = writeGguf({ metadata: { 'general.architecture': 'bert', ...tokenizerToGgufMetadata(bert), ...extra } });
  return tokenizerFromGguf((await parseGguf(bytesSource('model.gguf', bytes))).metadata, 'model.gguf');
}

/** The library's pair encoding of the same tokenizer.json: ids and token types. */
function library(tok: Tokenizer, query: string, document: string): { ids: number[]; types: number[] } {
  const hf = new HfTokenizer(tok.json as Record<string, unknown>, {});
  const e = hf.encode(query, { text_pair: document, return_token_type_ids: true }) as unknown as { ids: number[]; token_type_ids?: number[] };
  return { ids: e.ids, types: e.token_type_ids ?? e.ids.map(() => 0) };
}

describe('rerankPair: the tokenizer library\'s pair encoding', () => {
  test.each([
    ['BERT (tokenizer.json)', () => bert, { first: [101], middle: [102], last: [102], type1: { part: 'document', at: 0 } }],
    ['BERT (read from a GGUF)', () => fromGguf(), { first: [101], middle: [102], last: [102], type1: { part: 'document', at: 0 } }],
    ['BERT processor', () => bertProcessor, { first: [101], middle: [102], last: [102], type1: { part: 'document', at: 0 } }],
    ['RoBERTa processor', () => roberta, { first: [101], middle: [102, 102], last: [102], type1: { part: 'middle', at: 1 } }],
    ['GGUF with add_sep_token (converted XLM-R)', () => fromGguf({ 'tokenizer.ggml.add_sep_token': true }), { first: [101], middle: [102, 102], last: [102], type1: null }],
  ] as const)('%s', async (_, open, template) => {
    const tok = await open();
    expect(pairTemplate(tok)).toEqual(template);
    for (const { query, document } of RERANK_PAIRS) {
      const pair = rerankPair(tok, query, document);
      const want = library(tok, query, document);
      expect(pair.ids).toEqual(want.ids);
      expect(pair.truncated).toBe(0);
      // Token types: 0 before the split, 1 from it on — the library's.
      expect(pair.ids.map((_, i) => (i >= pair.typeSplit ? 1 : 0))).toEqual(want.types);
    }
  });
});

describe('rerankPair: truncation and refusals', () => {
  const query = 'What is the capital of France?';
  const document = RERANK_PAIRS[4].document;

  test('the document loses its end to fit maxTokens; the query and the special tokens stay', () => {
    const full = rerankPair(bert, query, document);
    const cut = rerankPair(bert, query, document, { maxTokens: 40 });
    expect(cut.ids).toHaveLength(40);
    expect(cut.truncated).toBe(full.ids.length - 40);
    expect(cut.typeSplit).toBe(full.typeSplit);
    expect(cut.ids.slice(0, 39)).toEqual(full.ids.slice(0, 39));
    expect(cut.ids.at(-1)).toBe(102);
    expect(rerankPair(bert, query, document, { maxTokens: full.ids.length })).toEqual(full);
  });

  test('a query that leaves no room for the document, a bad maxTokens, and a tokenizer without a pair template', () => {
    const q = bert.encode(query, { addSpecialTokens: false }).length;
    expect(() => rerankPair(bert, query, document, { maxTokens: q + 3 })).toThrow(RerankInputError);
    expect(() => rerankPair(bert, query, document, { maxTokens: q + 3 })).toThrow(/shorten the query/);
    expect(rerankPair(bert, query, document, { maxTokens: q + 4 }).ids).toHaveLength(q + 4);
    expect(() => rerankPair(bert, query, document, { maxTokens: 0 })).toThrow(/positive integer/);
    const single = loadTokenizer({ ...files, tokenizerJson: { ...files.tokenizerJson, post_processor: null } });
    expect(() => pairTemplate(single)).toThrow(/no pair template .*cross-encoder/);
  });
});
