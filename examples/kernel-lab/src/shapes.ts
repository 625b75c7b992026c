// Real shapes of the models intab targets, for the kernel benchmarks (from each model's config.json).

export interface ModelShape {
  name: string;
  /** C: hidden size. */
  hidden: number;
  /** F: MLP intermediate size. */
  ffn: number;
  /** V: vocabulary. */
  vocab: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

export const MODELS: readonly ModelShape[] = [
  { name: 'SmolLM2-135M', hidden: 576, ffn: 1536, vocab: 49152, heads: 9, kvHeads: 3, headDim: 64 },
  { name: 'Qwen2.5-0.5B', hidden: 896, ffn: 4864, vocab: 151936, heads: 14, kvHeads: 2, headDim: 64 },
  { name: 'Llama-3.2-1B', hidden: 2048, ffn: 8192, vocab: 128256, heads: 32, kvHeads: 8, headDim: 64 },
];

/** The decode GEMVs of one layer plus the lm_head: (name, N, K). */
export function gemvShapes(m: ModelShape): [string, number, number][] {
  return [
    ['attn.q', m.heads * m.headDim, m.hidden],
    ['ffn.up', m.ffn, m.hidden],
    ['ffn.down', m.hidden, m.ffn],
    ['lm_head', m.vocab, m.hidden],
  ];
}
