// The registry of tool-call formats: how each model family writes its calls, and how to tell which one a model uses
// from its chat template and vocabulary. A format is data: the text around the list of calls and around each call,
// the key of the arguments, the trigger that begins the calls (a special token or text), whether several calls may
// follow each other. The parser (parser.ts), the grammar (grammar.ts) and the rendering (render.ts) read it, so a new
// family is one entry here.

import type { ToolFormatName } from '../contract.ts';

export interface ToolFormat {
  readonly name: ToolFormatName;
  /** The text that begins the calls (a prefix of `listOpen + callOpen`): the lazy grammar waits for it. */
  readonly trigger: string;
  /** Before the first call. */
  readonly listOpen: string;
  /** Around each call object. */
  readonly callOpen: string;
  readonly callClose: string;
  /** Between two calls. */
  readonly separator: string;
  /** After the last call. */
  readonly listClose: string;
  /** The key of a call object's arguments (the other key is always "name"). */
  readonly argumentsKey: 'arguments' | 'parameters';
  /** Whether the model's format (and template) knows several calls in one reply. */
  readonly parallel: boolean;
  /** Texts that are special tokens in the model's vocabulary and belong to the call syntax (kept in the parsed text). */
  readonly specialTokens: readonly string[];
  /** Text before the calls that the parser skips (Llama 3.1's `<|python_tag|>`). */
  readonly optionalPrefix?: string;
}

/** One call object, as the grammar writes it: `{"name": "NAME", "<key>": ARGS}`. */
export function callHead(format: ToolFormat, name: string): string {
  return `{"name": "${name}", "${format.argumentsKey}": `;
}

export const TOOL_FORMATS: Readonly<Record<ToolFormatName, ToolFormat>> = {
  // Hermes 2 Pro, Qwen2.5, Qwen3, SmolLM3: one <tool_call> block per call, a newline inside each tag.
  hermes: {
    name: 'hermes', trigger: '<tool_call>', listOpen: '', callOpen: '<tool_call>\n', callClose: '\n</tool_call>', separator: '\n', listClose: '',
    argumentsKey: 'arguments', parallel: true, specialTokens: ['<tool_call>', '</tool_call>'],
  },
  // Llama 3.1 / 3.2 (JSON-based calling): one object with "parameters"; the template refuses more than one call per turn.
  llama3: {
    name: 'llama3', trigger: '{"name"', listOpen: '', callOpen: '', callClose: '', separator: '', listClose: '',
    argumentsKey: 'parameters', parallel: false, specialTokens: ['<|python_tag|>'], optionalPrefix: '<|python_tag|>',
  },
  // Mistral (v3 tekken and later): [TOOL_CALLS] then a JSON array of calls.
  mistral: {
    name: 'mistral', trigger: '[TOOL_CALLS]', listOpen: '[TOOL_CALLS][', callOpen: '', callClose: '', separator: ', ', listClose: ']',
    argumentsKey: 'arguments', parallel: true, specialTokens: ['[TOOL_CALLS]'],
  },
  // Phi-4-mini: a JSON array of calls between <|tool_call|> and <|/tool_call|>.
  phi4: {
    name: 'phi4', trigger: '<|tool_call|>', listOpen: '<|tool_call|>[', callOpen: '', callClose: '', separator: ', ', listClose: ']<|/tool_call|>',
    argumentsKey: 'arguments', parallel: true, specialTokens: ['<|tool_call|>', '<|/tool_call|>'],
  },
  // Templates that know no tools: intab writes the tool list and this syntax into the system message (render.ts).
  generic: {
    name: 'generic', trigger: '<tool_call>', listOpen: '', callOpen: '<tool_call>', callClose: '</tool_call>', separator: '\n', listClose: '',
    argumentsKey: 'arguments', parallel: true, specialTokens: [],
  },
};

/**
 * The format a model writes its calls in, from its chat template (the text, or every named template joined) and the
 * texts of its special/added tokens; null without a template. A template that renders `tools` in a syntax named here
 * picks that format; one that renders no tools (or an unknown syntax) gets 'generic', where intab writes the tools into
 * the system message.
 * @example
 * detectToolFormat(qwen3.chatTemplate, qwen3.addedTokens.map((t) => t.content)); // 'hermes'
 */
export function detectToolFormat(template: string | readonly { name: string; template: string }[] | undefined, tokens: readonly string[] = []): ToolFormatName | null {
  if (template === undefined) return null;
  const text = typeof template === 'string' ? template : template.map((t) => t.template).join('\n');
  const vocab = new Set(tokens);
  const knowsTools = /\btools\b/.test(text);
  if (!knowsTools) return 'generic';
  if (text.includes('[TOOL_CALLS]') || (vocab.has('[TOOL_CALLS]') && text.includes('tool_calls'))) return 'mistral';
  if (text.includes('<|tool_call|>') || (vocab.has('<|tool_call|>') && vocab.has('<|/tool_call|>'))) return 'phi4';
  if (text.includes('<tool_call>')) return 'hermes';
  if (text.includes('"parameters"') && (text.includes('<|start_header_id|>') || text.includes('<|python_tag|>') || vocab.has('<|python_tag|>'))) return 'llama3';
  return 'generic';
}
