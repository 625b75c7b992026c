// Chat templates: the Jinja program a model ships (tokenizer_config.json `chat_template`, or GGUF
// `tokenizer.chat_template`) that turns a list of messages into the exact prompt text it was trained on. Rendered
// with @huggingface/jinja and the variables transformers passes (messages, add_generation_prompt, bos_token,
// eos_token, tools, ...). encodeChat then makes sure BOS appears exactly once: some templates write it (Llama 2/3,
// Mistral), some tokenizers add it (add_bos_token), and doing both would put two BOS tokens in front of the prompt.
// A template comes with the model file, so it is untrusted code: a render is bounded in steps, in the length of
// the strings it builds and in the size of range(), and ends in a ChatTemplateError past a bound.

import { Environment, Interpreter, Template } from '@huggingface/jinja';
import { ChatTemplateError, IntabModelError, ModelFormatError } from '../errors.ts';
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

// ---- bounded rendering ----

/**
 * The bounds of one render. Real templates take tens of steps per message (Qwen3's, with tools, about 52; Llama 3's
 * about 21: 26,000 and 10,500 for 500 messages), so a render may take `steps` plus `stepsPerItem` for each message,
 * tool and document: four times what Qwen3's needs, and about half a second (@huggingface/jinja takes 2-5 µs a
 * step) for a template that loops over a huge range or recurses twice per call instead.
 */
export const CHAT_TEMPLATE_LIMITS = {
  /** Expressions and statements evaluated (each loop iteration counts its body's), besides the per-item allowance. */
  steps: 100_000,
  /** Steps allowed per message, tool and document. */
  stepsPerItem: 200,
  /** Characters of any string the template builds, the rendered prompt included, besides twice the variables' own text. */
  chars: 4_000_000,
  /** Items of one range(). */
  range: 100_000,
} as const;

type EvaluateArgs = Parameters<Interpreter['evaluate']>;
type RuntimeValue = ReturnType<Interpreter['evaluate']>;

/** The interpreter with a step meter and a bound on the strings it builds. */
class BoundedInterpreter extends Interpreter {
  private steps = 0;
  constructor(
    env: Environment,
    private readonly maxSteps: number,
    private readonly maxChars: number,
    private readonly fail: (problem: string) => Error,
  ) {
    super(env);
    // A loop body runs through evaluateBlock once per iteration, also when it is empty (so evaluates nothing):
    // each block counts a step, or nested loops over ranges with empty bodies would never be stopped. (An internal
    // method of @huggingface/jinja 0.5: the chat-template fuzzer's nested empty loops fail if it goes away.)
    const self = this as unknown as { evaluateBlock?: (statements: unknown, environment: unknown) => RuntimeValue };
    const block = self.evaluateBlock;
    if (typeof block === 'function') {
      self.evaluateBlock = (statements, environment) => {
        this.step();
        return block.call(this, statements, environment);
      };
    }
  }
  private step(): void {
    if (++this.steps > this.maxSteps) {
      throw this.fail(`rendering took more than ${this.maxSteps.toLocaleString('en-US')} steps (a loop over a huge range, or recursion that multiplies)`);
    }
  }
  override evaluate(statement: EvaluateArgs[0], environment: EvaluateArgs[1]): RuntimeValue {
    this.step();
    const v = super.evaluate(statement, environment);
    const text = (v as { value?: unknown }).value;
    if (typeof text === 'string' && text.length > this.maxChars) {
      throw this.fail(`the template built a string of ${text.length.toLocaleString('en-US')} characters (the limit for these messages is ${this.maxChars.toLocaleString('en-US')})`);
    }
    return v;
  }
}

/** A bound of the render was reached inside a template function (the template is at fault, not the messages). */
class RenderBoundError extends Error {}

/** range() as Python's, refusing more than CHAT_TEMPLATE_LIMITS.range items before allocating them. */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  if (step === 0) throw new Error('range() step must not be zero');
  const n = Math.max(0, Math.ceil((stop - start) / step));
  if (Number.isNaN(n)) throw new Error('range() takes integers');
  if (!(n <= CHAT_TEMPLATE_LIMITS.range)) throw new RenderBoundError(`range() of ${n} items is over the limit of ${CHAT_TEMPLATE_LIMITS.range.toLocaleString('en-US')}`);
  return Array.from({ length: n }, (_, i) => start + i * step);
}

/** strftime_now() as @huggingface/jinja has it (%Y %m %d %b %B %H %M %%). */
function strftimeNow(format: string): string {
  const date = new Date();
  const pad2 = (n: number) => String(n).padStart(2, '0');
  return String(format).replace(/%[YmdbBHM%]/g, (token) => {
    switch (token) {
      case '%Y': return String(date.getFullYear());
      case '%m': return pad2(date.getMonth() + 1);
      case '%d': return pad2(date.getDate());
      case '%b': return new Intl.DateTimeFormat(undefined, { month: 'short' }).format(date);
      case '%B': return new Intl.DateTimeFormat(undefined, { month: 'long' }).format(date);
      case '%H': return pad2(date.getHours());
      case '%M': return pad2(date.getMinutes());
      default: return '%';
    }
  });
}

/** Characters of the strings in a value (the messages' own text: the template may repeat it, within bounds). */
function textSize(v: unknown, depth = 0): number {
  if (typeof v === 'string') return v.length;
  if (v === null || typeof v !== 'object' || depth > 32) return 0;
  let n = 0;
  for (const x of Array.isArray(v) ? v : Object.values(v)) n += textSize(x, depth + 1);
  return n;
}

/**
 * Template.render() with the bounds: the same globals as @huggingface/jinja's (true/false/none, raise_exception,
 * range, strftime_now), run by the bounded interpreter.
 */
function renderBounded(program: Template, variables: Record<string, unknown>, fail: (problem: string) => Error): string {
  const env = new Environment();
  const globals: [string, unknown][] = [
    ['false', false], ['true', true], ['none', null], ['False', false], ['True', true], ['None', null],
    ['raise_exception', (message: unknown) => { throw new Error(String(message)); }],
    ['range', boundedRange],
    ['strftime_now', strftimeNow],
  ];
  for (const [key, value] of globals) env.set(key, value);
  for (const [key, value] of Object.entries(variables)) env.set(key, value);
  const items = [variables.messages, variables.tools, variables.documents].reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 0), 0);
  const maxSteps = CHAT_TEMPLATE_LIMITS.steps + CHAT_TEMPLATE_LIMITS.stepsPerItem * items;
  const maxChars = CHAT_TEMPLATE_LIMITS.chars + 2 * textSize(variables);
  const result = new BoundedInterpreter(env, maxSteps, maxChars, fail).run(program.parsed) as { value?: unknown };
  return String(result.value);
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
  const bound = (problem: string) =>
    new ChatTemplateError(file, 'chat_template', problem, { reason: 'bounds', fix: 'The template does not end in reasonable time or size: use another chat template for this model (applyChatTemplate takes one), or fix this one.' });
  try {
    return renderBounded(program, variables, bound);
  } catch (e) {
    if (e instanceof ChatTemplateError) throw e;
    if (e instanceof RenderBoundError) throw bound(e.message);
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
    throw ChatTemplateError.missing(tokenizer.file);
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
