// llama.cpp's rerank scores as the oracle of the rerank tests (node tier, and the browser tier's global setup):
// node-llama-cpp's embedding context on a rank GGUF returns the classification head's raw output (n_cls_out floats per
// input, llama_get_embeddings_seq) for exactly the ids given, and its ranking context rank() returns sigmoid of it for
// a (query, document) text pair. llama.cpp embeds every token as type 0 (llm_build_bert: "token types are hardcoded
// to zero"); for a pair whose document is type 1 (BERT rerankers), typeOneCopy writes a copy of the GGUF whose
// doubled vocabulary holds the type-1 rows, so that llama.cpp computes those pairs too. Test-only.

import { writeFileSync } from 'node:fs';
import type { Token } from 'node-llama-cpp';
import { openEncoderGguf, pathSource, writeGguf, type GgufWriteTensor, type GgufWriteValue } from '@intab/model';
import { llamaCpp } from './test-llamacpp.ts';

/** What llama.cpp makes of a rank GGUF: the head's outputs per id list, the tokenization of each pair, rank()'s probabilities. */
export interface LlamaCppRank {
  /** One list of n_cls_out raw outputs per input (the logit is [0]). */
  logits: number[][];
  /** llama.cpp's tokenization of each pair's query and document (no special tokens). */
  tokens: { query: number[]; document: number[] }[];
  /** rank(query, document) for each pair (sigmoid of the logit of [BOS] q [EOS] [SEP] d [EOS]), when asked. */
  probabilities?: number[];
}

/**
 * llama.cpp's scores of `ids` on `file` (one input at a time, one thread, context 512), and optionally its tokenization
 * and rank() of text pairs.
 * @example
 * const { logits } = await llamaCppRank('ms-marco.gguf', [[101, 2054, 102, 3000, 102]]);
 */
export async function llamaCppRank(file: string, ids: readonly (readonly number[])[], pairs: readonly { query: string; document: string }[] = [], rank = false): Promise<LlamaCppRank> {
  const model = await (await llamaCpp()).loadModel({ modelPath: file });
  try {
    const tokens = pairs.map((p) => ({ query: [...model.tokenize(p.query)] as number[], document: [...model.tokenize(p.document)] as number[] }));
    // One thread (llama.cpp's default spins every core of a busy small machine); a pair must fit one batch.
    const embedding = await model.createEmbeddingContext({ contextSize: 512, batchSize: 512, threads: 1 });
    const logits: number[][] = [];
    try {
      for (const seq of ids) logits.push([...(await embedding.getEmbeddingFor([...seq] as Token[])).vector]);
    } finally {
      await embedding.dispose();
    }
    let probabilities: number[] | undefined;
    if (rank) {
      const ranking = await model.createRankingContext({ contextSize: 512, batchSize: 512, threads: 1 });
      try {
        probabilities = [];
        for (const p of pairs) probabilities.push(await ranking.rank(p.query, p.document));
      } finally {
        await ranking.dispose();
      }
    }
    return { logits, tokens, ...(probabilities ? { probabilities } : {}) };
  } finally {
    await model.dispose();
  }
}

/**
 * Writes to `out` a copy of an f32 two-type BERT GGUF whose vocabulary is doubled: row V + i = token_embd[i] +
 * token_types[1] − token_types[0], so that llama.cpp, which adds type row 0 to every token, embeds id V + i as token i
 * of type 1. The second half's pieces are unused ones ('[TYPE1-i]', type 5): llama.cpp never tokenizes into them. [SEP]
 * (`sep`) trades places — its own row becomes the type-1 [SEP], row V + sep the type-0 one — because node-llama-cpp
 * appends [SEP] to an input that does not end with that id. Returns the ids to give llama.cpp for each typed pair.
 * @example
 * const shift = await typeOneCopy('ms-marco.gguf', 'copy.gguf', 102);
 * const { logits } = await llamaCppRank('copy.gguf', pairs.map((p) => shift(p.ids, p.typeSplit)));
 */
export async function typeOneCopy(file: string, out: string, sep: number): Promise<(ids: readonly number[], typeSplit: number) => number[]> {
  const model = await openEncoderGguf(await pathSource(file));
  const gguf = model.gguf!;
  const { hidden: C, vocab: V } = model.config;
  if (model.config.typeVocab < 2) throw new Error(`typeOneCopy: ${file} has ${model.config.typeVocab} token type(s); a copy adds type 1`);
  const read = async (name: string) => {
    const t = gguf.tensors.find((x) => x.name === name)!;
    if (t.dtype !== 'f32') throw new Error(`typeOneCopy reads f32 files; ${name} is ${t.dtype}`);
    return new Float32Array((await t.source.read(t.offset, t.byteLength)).slice().buffer);
  };
  const tokens = await read('token_embd.weight');
  const types = await read('token_types.weight');
  const doubled = new Float32Array(2 * V * C);
  doubled.set(tokens);
  for (let i = 0; i < V; i++) for (let j = 0; j < C; j++) doubled[(V + i) * C + j] = tokens[i * C + j] + types[C + j] - types[j];
  const typeOneSep = doubled.slice((V + sep) * C, (V + sep + 1) * C);
  doubled.copyWithin((V + sep) * C, sep * C, (sep + 1) * C);
  doubled.set(typeOneSep, sep * C);
  const tensors: GgufWriteTensor[] = [];
  for (const t of gguf.tensors) {
    const data = t.name === 'token_embd.weight' ? doubled : await read(t.name);
    tensors.push({ name: t.name, type: 'f32', shape: t.name === 'token_embd.weight' ? [2 * V, C] : t.shape, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
  }
  const metadata: Record<string, GgufWriteValue> = {};
  for (const [k, v] of gguf.metadata) if (k !== 'general.alignment') metadata[k] = v as GgufWriteValue;
  const pieces = gguf.metadata.get('tokenizer.ggml.tokens') as string[];
  const kinds = gguf.metadata.get('tokenizer.ggml.token_type') as number[];
  metadata['tokenizer.ggml.tokens'] = [...pieces, ...pieces.map((_, i) => `[TYPE1-${i}]`)];
  metadata['tokenizer.ggml.token_type'] = [...kinds, ...kinds.map(() => 5)];
  writeFileSync(out, writeGguf({ metadata, tensors }));
  return (ids, typeSplit) => ids.map((id, k) => (id === sep ? (k >= typeSplit ? sep : V + sep) : k >= typeSplit ? V + id : id));
}
