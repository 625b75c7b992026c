// Chat templates: the real templates shipped in Qwen3's and Llama 3's tokenizer_config.json and hand-written
// Mistral/Zephyr-style ones, against expected strings worked out from each template's text; BOS exactly once
// whether the template writes it, the tokenizer adds it, or both would; named templates, GGUF templates and
// typed errors for templates that do not parse or refuse the conversation.

import { beforeAll, describe, expect, it } from 'vitest';
import { ChatTemplateError, ModelFormatError } from '../errors.ts';
import { applyChatTemplate, CHAT_TEMPLATE_LIMITS, encodeChat, renderChat, selectChatTemplate, type ChatMessage } from './chat-template.ts';
import { tokenizerFromGguf } from './gguf-tokenizer.ts';
import { realTokenizerConfig, realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { loadTokenizer } from './tokenizer.ts';

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

const count = (ids: number[], id: number) => ids.filter((x) => x === id).length;

describe('Qwen3 (real template from tokenizer_config.json)', () => {
  let template: string;
  beforeAll(() => {
    template = realTokenizerConfig('qwen3').chat_template as string;
  });

  it('one user turn with the generation prompt', () => {
    const text = applyChatTemplate(template, [{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true });
    expect(text).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('drops the reasoning of earlier turns and honours enable_thinking = false', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Q1' },
      { role: 'assistant', content: '<think>\nr1\n</think>\n\nA1' },
      { role: 'user', content: 'Q2' },
    ];
    expect(applyChatTemplate(template, messages, { addGenerationPrompt: true, variables: { enable_thinking: false } })).toBe(
      '<|im_start|>system\nYou are terse.<|im_end|>\n' +
        '<|im_start|>user\nQ1<|im_end|>\n' +
        '<|im_start|>assistant\nA1<|im_end|>\n' +
        '<|im_start|>user\nQ2<|im_end|>\n' +
        '<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });

  it('keeps reasoning_content on the last assistant turn', () => {
    const text = applyChatTemplate(template, [{ role: 'user', content: 'Q' }, { role: 'assistant', content: 'A', reasoning_content: 'R' }]);
    expect(text).toBe('<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nR\n</think>\n\nA<|im_end|>\n');
  });

  it('tools, a tool call and its response', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: '{"temp": 20}' },
    ];
    expect(applyChatTemplate(template, messages, { tools, addGenerationPrompt: true })).toBe(
      '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        '{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}' +
        '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\nWeather in Paris?<|im_end|>\n' +
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\n{"temp": 20}\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });
});

describe('BOS exactly once', () => {
  it('Llama 3: the template writes <|begin_of_text|> and the tokenizer adds it too; encodeChat keeps one', () => {
    const files = realTokenizerFiles('llama3');
    // Meta's later tokenizer.json adds BOS in the post-processor (the npm copy is the first release, which did not).
    const tokenizerJson = {
      ...files.tokenizerJson,
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [128000], tokens: ['<|begin_of_text|>'] } },
      },
    };
    const tok = loadTokenizer({ tokenizerJson, tokenizerConfig: files.tokenizerConfig });
    expect([tok.bosId, tok.bosToken, tok.addBos, tok.eosId]).toEqual([128000, '<|begin_of_text|>', true, 128001]);
    const text = renderChat(tok, [{ role: 'system', content: 'S' }, { role: 'user', content: '  Hi  ' }]);
    // The real template: bos_token before the first message, `| trim` on content, and it always opens the reply.
    expect(text).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>' +
        '<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
    const ids = encodeChat(tok, text);
    expect(ids.slice(0, 2)).toEqual([128000, 128006]);
    expect(count(ids, 128000)).toBe(1);
    expect(count(tok.encode(text), 128000)).toBe(2); // what a plain encode would have sent
  });

  const MISTRAL_STYLE =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}" +
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}" +
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}";
  const ZEPHYR_STYLE =
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}{% endfor %}" +
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

  it('SentencePiece: a Mistral-style template writes <s>, a Zephyr-style one does not; one BOS either way', () => {
    const tok = loadTokenizer(realTokenizerFiles('llama2'));
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }, { role: 'user', content: 'Bye' }];
    const mistral = applyChatTemplate(MISTRAL_STYLE, messages, { bosToken: tok.bosToken, eosToken: tok.eosToken });
    expect(mistral).toBe('<s>[INST] Hi [/INST]Hello</s>[INST] Bye [/INST]');
    const ids = encodeChat(tok, mistral);
    expect(ids[0]).toBe(1);
    expect(count(ids, 1)).toBe(1);
    expect(count(ids, 2)).toBe(1);
    // Same ids as the tokenizer's own BOS + text, since the template's <s> is parsed as the special token.
    expect(encodeChat(tok, '<s>[INST] Hi [/INST]')).toEqual(tok.encode('[INST] Hi [/INST]'));

    const zephyr = applyChatTemplate(ZEPHYR_STYLE, messages.slice(0, 1), { addGenerationPrompt: true, eosToken: '</s>' });
    expect(zephyr).toBe('<|user|>\nHi</s>\n<|assistant|>\n');
    const zids = encodeChat(tok, zephyr);
    expect(zids[0]).toBe(1);
    expect(count(zids, 1)).toBe(1);
    expect(zids).toEqual(tok.encode(zephyr));
  });

  it('ChatML with a tokenizer that adds no BOS: special-token texts become ids, nothing is added', () => {
    const tok = tokenizerFromGguf({
      'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'qwen2',
      'tokenizer.ggml.tokens': ['H', 'i', 'Hi', 'Ċ', 'u', 's', 'e', 'r', 'us', 'use', 'user', '<|im_start|>', '<|im_end|>'],
      'tokenizer.ggml.token_type': [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3],
      'tokenizer.ggml.merges': ['H i', 'u s', 'us e', 'use r'],
      'tokenizer.ggml.eos_token_id': 12,
      'tokenizer.chat_template': realTokenizerConfig('qwen3').chat_template as string,
    }, 'chatml.gguf');
    expect([tok.addBos, tok.bosId, tok.eosToken]).toEqual([false, undefined, '<|im_end|>']);
    const text = renderChat(tok, [{ role: 'user', content: 'Hi' }]);
    expect(text).toBe('<|im_start|>user\nHi<|im_end|>\n');
    expect(encodeChat(tok, text)).toEqual([11, 10, 3, 2, 12, 3]);
  });

  it('a template that refuses the conversation is a ChatTemplateError carrying its message', () => {
    const e = thrown(() => applyChatTemplate(MISTRAL_STYLE, [{ role: 'assistant', content: 'x' }], { bosToken: '<s>', eosToken: '</s>' })) as ChatTemplateError;
    expect(e).toBeInstanceOf(ChatTemplateError);
    expect([e.field, e.reason]).toEqual(['chat_template', 'failed']);
    expect(e.message).toContain('Conversation roles must alternate');
  });
});

describe('template sources', () => {
  const named = [
    { name: 'default', template: 'D{{ messages[0].content }}' },
    { name: 'tool_use', template: 'T{{ tools | length }}' },
  ];

  it('named templates: default, tool_use when tools are given, or by name', () => {
    const m = [{ role: 'user', content: 'x' }];
    expect(applyChatTemplate(named, m)).toBe('Dx');
    expect(applyChatTemplate(named, m, { tools: [{}, {}] })).toBe('T2');
    expect(applyChatTemplate(named, m, { templateName: 'default', tools: [{}] })).toBe('Dx');
    const e = thrown(() => selectChatTemplate(named, { templateName: 'rag' })) as ModelFormatError;
    expect([e.name, e.field]).toEqual(['ModelFormatError', "chat_template['rag']"]);
  });

  it('a template that does not parse is a ModelFormatError naming the file', () => {
    const e = thrown(() => applyChatTemplate('{% for m in %}{{ m }}', [{ role: 'user', content: 'x' }], { file: 'm.gguf' })) as ModelFormatError;
    expect([e.name, e.file, e.field]).toEqual(['ModelFormatError', 'm.gguf', 'chat_template']);
  });

  it('a GGUF carries its templates as tokenizer.chat_template and tokenizer.chat_template.<name>', () => {
    const metadata = {
      'tokenizer.ggml.model': 'llama',
      'tokenizer.ggml.tokens': ['<unk>', '<s>', '</s>', '\u2581', 'a'],
      'tokenizer.ggml.scores': [0, 0, 0, -1, -2],
      'tokenizer.ggml.token_type': [2, 3, 3, 1, 1],
      'tokenizer.ggml.bos_token_id': 1,
      'tokenizer.ggml.eos_token_id': 2,
      'tokenizer.chat_template': '{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}',
    };
    const tok = tokenizerFromGguf(metadata, 'tiny.gguf');
    expect(renderChat(tok, [{ role: 'user', content: 'a' }])).toBe('<s>a</s>');
    expect(encodeChat(tok, renderChat(tok, [{ role: 'user', content: 'a' }]))).toEqual([1, 3, 4, 2]);
    const withNamed = tokenizerFromGguf({ ...metadata, 'tokenizer.chat_templates': ['rag'], 'tokenizer.chat_template.rag': 'R' }, 'tiny.gguf');
    expect(withNamed.chatTemplate).toEqual([{ name: 'default', template: metadata['tokenizer.chat_template'] }, { name: 'rag', template: 'R' }]);
    expect(renderChat(withNamed, [], { templateName: 'rag' })).toBe('R');
  });

  it('a tokenizer without a template says so, typed', () => {
    const tok = tokenizerFromGguf({ 'tokenizer.ggml.model': 'llama', 'tokenizer.ggml.tokens': ['<unk>', 'a'], 'tokenizer.ggml.scores': [0, 0] }, 'bare.gguf');
    const e = thrown(() => renderChat(tok, [{ role: 'user', content: 'a' }])) as ChatTemplateError;
    expect(e).toBeInstanceOf(ChatTemplateError);
    expect([e.name, e.code, e.reason, e.file, e.field]).toEqual(['ChatTemplateError', 'chat_template_error', 'missing', 'bare.gguf', 'chat_template']);
    expect(e.message).toMatch(/plain text/);
  });
});

describe('a hostile template is stopped by the render bounds', () => {
  const hi = [{ role: 'user', content: 'Hi' }];
  const bounded = (template: string, messages = hi): ChatTemplateError => {
    const e = thrown(() => applyChatTemplate(template, messages, { file: 'evil.gguf' })) as ChatTemplateError;
    expect([e.name, e.reason, e.file, e.field]).toEqual(['ChatTemplateError', 'bounds', 'evil.gguf', 'chat_template']);
    expect(e.message).toContain('use another chat template');
    return e;
  };
  const stepLimit = CHAT_TEMPLATE_LIMITS.steps + CHAT_TEMPLATE_LIMITS.stepsPerItem;

  it('loops over huge ranges, nested loops with empty bodies, and recursion that doubles: a step bound', () => {
    expect(bounded('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}').message).toContain(`more than ${stepLimit.toLocaleString('en-US')} steps`);
    expect(bounded('{% for i in range(99999) %}{{ i }}{% endfor %}{% for i in range(99999) %}{{ i }}{% endfor %}').message).toContain('steps');
    expect(bounded('{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}').message).toContain('steps');
  });

  it('a range() past its bound, and strings that double, are refused before they are built', () => {
    expect(bounded('{% for i in range(10000000000) %}{% endfor %}').message).toContain(`range() of 10000000000 items is over the limit of ${CHAT_TEMPLATE_LIMITS.range.toLocaleString('en-US')}`);
    expect(bounded('{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}').message).toMatch(/built a string of [\d,]+ characters/);
  });

  it('long conversations stay far inside the bounds: the step allowance grows with the messages', () => {
    const qwen = realTokenizerConfig('qwen3').chat_template as string;
    const many = Array.from({ length: 2000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(250) }));
    const text = applyChatTemplate(qwen, many, { addGenerationPrompt: true });
    expect(text.length).toBeGreaterThan(CHAT_TEMPLATE_LIMITS.chars); // longer than the bound on what a template adds
    expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
  });
});
