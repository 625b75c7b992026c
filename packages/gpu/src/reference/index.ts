// CPU twins of every kernel (plain loops, float64 accumulation) and the ggml block codecs.
export * from './blocks.ts';
export * from './random.ts';
export * from './matmul.ts';
export * from './norm.ts';
export * from './elementwise.ts';
export * from './embedding.ts';
export * from './rope.ts';
export * from './attention.ts';
export * from './sampling.ts';
export * from './accept.ts';
