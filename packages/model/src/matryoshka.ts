// Which embedding models were trained with Matryoshka Representation Learning (MRL), so that the first d values of
// their vectors are an embedding of their own (EmbedRequest.dimensions cuts them, then normalises again). Neither a
// GGUF nor a config.json has a key for it; the model's name does say which model it is (GGUF general.name, or
// general.basename with general.version; config.json's _name_or_path), and these models' cards state that they were
// trained for it. A model not listed keeps `dimensions` refused: cutting a vector that was not trained for it loses
// quality without a word.

/** Models whose cards state Matryoshka training, by the names their converted files carry. */
const TRAINED: readonly RegExp[] = [
  /nomic[-_ ]?embed[-_ ]?text[-_ ]?v1\.5/i, // 768, 512, 256, 128, 64
  /embedding[-_ ]?gemma/i, // 768, 512, 256, 128
  /qwen3[-_ ]?embedding/i, // 32 .. the hidden size
  /mxbai[-_ ]?embed[-_ ]?large[-_ ]?v1/i, // 1024 .. 64
  /snowflake[-_ ]?arctic[-_ ]?embed[-_ ]?[ml][-_ ]?v(1\.5|2\.0)/i, // 256 and the full width
  /jina[-_ ]?embeddings[-_ ]?v3/i, // 1024 .. 32
];

/**
 * Whether any of a model's names is one of a model trained with Matryoshka dimensions.
 * @example
 * trainedForMatryoshka(['nomic-embed-text-v1.5']); // true
 * trainedForMatryoshka(['nomic-embed-text-v1']); // false
 */
export function trainedForMatryoshka(names: readonly unknown[]): boolean {
  return names.some((n) => typeof n === 'string' && TRAINED.some((p) => p.test(n)));
}

/** The names a GGUF's metadata gives its model: general.name, and general.basename joined with general.version. */
export function ggufModelNames(metadata: Record<string, unknown>): string[] {
  const names: string[] = [];
  const name = metadata['general.name'];
  const base = metadata['general.basename'];
  const version = metadata['general.version'];
  if (typeof name === 'string') names.push(name);
  if (typeof base === 'string') names.push(typeof version === 'string' ? `${base}-${version}` : base);
  return names;
}
