// Chat templates: the Jinja program a model ships (tokenizer_config.json `chat_template`, or GGUF
// `tokenizer.chat_template`) that turns a list of messages into the exact prompt text it was trained on. Rendered
// with @huggingface/jinja and the variables transformers passes (messages, add_generation_prompt, bos_token,
// eos_token, tools, ...). encodeChat then makes sure BOS appears exactly once: some templates write it (Llama 2/3,
// Mistral), some tokenizers add it (add_bos_token), and doing both would put two BOS tokens in front of the prompt.

import { Template } from '@huggingface/jinja';
import { ChatTemplateError, IntabModelError, ModelFormatError, UnsupportedModelError } from '../errors.ts';
import type { Tokenizer } from './tokenizer.ts';

/** A template string, or transformers' named list (`[{ name: 'default', template }, { name: 'tool_use', ... }]`). */
export type ChatTemplateSource = string | readonly NamedChatTemplate[];

export interface NamedChatTemplate {
  readonly name: string;
  readonly template: string;
}

/** One message. Extra fields (tool_calls, reasoning_content, name, tool_call_id) reach the template as they are. */
export interface ChatMessage {
  role: string;
  content?: string | readonly unknown[] | null;
  [field: string]: unknown;
}

export interface ApplyChatTemplateOptions {
  /** End with the header that opens the assistant's turn (`<|im_start|>assistant\n`). Default false. */
  addGenerationPrompt?: boolean;
  bosToken?: string;
  eosToken?: string;
  unkToken?: string;
  padToken?: string;
  /** JSON-schema tool descriptions, as OpenAI's `tools`. */
  tools?: readonly unknown[];
  /** Retrieval documents, for templates that take them. */
  documents?: readonly unknown[];
  /** Which named template to use; default 'tool_use' when tools are given and it exists, else 'default'. */
  templateName?: string;
  /** Further template variables, e.g. `{ enable_thinking: false }` for Qwen3. */
  variables?: Readonly<Record<string, unknown>>;
  /** Where the template came from, for messages. Default 'tokenizer_config.json'. */
  file?: string;
}


// ---- template choice and compile cache ----

/**
 * The template text to use from a source: a string as is; from a named list, `templateName`, else 'tool_use' when
 * tools are given (transformers' rule), else 'default'.
 */
export function selectChatTemplate(source: ChatTemplateSource, options: { templateName?: string; tools?: readonly unknown[]; file?: string } = {}): string {
  const file = options.file ?? 'tokenizer_config.json';
  if (typeof source === 'string') return source;
  const byName = new Map(source.map((t) => [t.name, t.template]));
  const want = options.templateName ?? (options.tools?.length && byName.has('tool_use') ? 'tool_use' : 'default');
  const t = byName.get(want);
  if (t === undefined) {
    throw new ModelFormatError(file, `chat_template['${want}']`, `there is no template of that name (have: ${[...byName.keys()].join(', ') || 'none'})`);
  }
  return t;
}

const compiled = new Map<string, Template>();
const MAX_CACHED = 16;

function compile(text: string, file: string, field: string): Template {
  let t = compiled.get(text);
  if (t) return t;
  try {
    t = new Template(text);
  } catch (e) {
    throw new ModelFormatError(file, field, `the Jinja template does not parse (${(e as Error).message})`, { cause: e });
  }
  if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value!);
  compiled.set(text, t);
  return t;
}

// ---- rendering ----

/**
 * Renders a chat template into prompt text.
 * @example
 * const text = applyChatTemplate(config.chat_template, [{ role: 'user', content: 'Hi' }],
 *   { addGenerationPrompt: true, eosToken: '<|im_end|>' });
 * // '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'
 */
export function applyChatTemplate(template: ChatTemplateSource, messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
  const file = options.file ?? 'tokenizer_config.json';
  if (!Array.isArray(messages)) throw new TypeError('applyChatTemplate(): messages must be an array of { role, content }');
  messages.forEach((m, i) => {
    if (typeof m !== 'object' || m === null || typeof m.role !== 'string') throw new TypeError(`applyChatTemplate(): messages[${i}] needs a string role`);
  });
  const text = selectChatTemplate(template, { templateName: options.templateName, tools: options.tools, file });
  const program = compile(text, file, 'chat_template');
  const variables: Record<string, unknown> = {
    ...options.variables,
    messages,
    add_generation_prompt: options.addGenerationPrompt ?? false,
  };
  const tokens: [string, string | undefined][] = [
    ['bos_token', options.bosToken], ['eos_token', options.eosToken], ['unk_token', options.unkToken], ['pad_token', options.padToken],
  ];
  for (const [key, value] of tokens) if (value !== undefined) variables[key] = value;
  if (options.tools !== undefined) variables.tools = options.tools;
  if (options.documents !== undefined) variables.documents = options.documents;
  try {
    return program.render(variables);
  } catch (e) {
    throw new ChatTemplateError(file, 'chat_template', `rendering failed: ${(e as Error)?.message ?? String(e)}`, { cause: e });
  }
}

/**
 * Renders the tokenizer's own chat template with its BOS/EOS texts filled in.
 * @example
 * const prompt = renderChat(tok, [{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true });
 * const ids = encodeChat(tok, prompt);
 */
export function renderChat(tokenizer: Tokenizer, messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
  if (tokenizer.chatTemplate === undefined) {
    throw new UnsupportedModelError(tokenizer.file, 'chat_template', 'absent', 'this model ships no chat template (a base model?): give the prompt as plain text, or pass a template.');
  }
  const token = (id: number | undefined) => (id === undefined ? undefined : tokenizer.idToToken(id));
  return applyChatTemplate(tokenizer.chatTemplate, messages, {
    bosToken: tokenizer.bosToken,
    eosToken: tokenizer.eosToken,
    unkToken: token(tokenizer.unkId),
    padToken: token(tokenizer.padId),
    file: tokenizer.file,
    ...options,
  });
}

/**
 * Token ids of a rendered chat prompt with BOS exactly as the model expects: special-token texts in the prompt
 * become their ids, EOS is never appended, and BOS is put first only when the tokenizer adds BOS and the template
 * did not already write it (so Llama 3's `<|begin_of_text|>` is not doubled).
 * @example
 * encodeChat(llama3, '<|begin_of_text|><|start_header_id|>user...'); // one 128000 at the front
 */
export function encodeChat(tokenizer: Tokenizer, prompt: string): number[] {
  const ids = tokenizer.encode(prompt, { addSpecialTokens: false });
  if (tokenizer.addBos && tokenizer.bosId !== undefined && ids[0] !== tokenizer.bosId) ids.unshift(tokenizer.bosId);
  return ids;
}
