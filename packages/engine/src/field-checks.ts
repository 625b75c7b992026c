// The pieces every request checker shares: the engine's (request-checks.ts, GenerateRequest fields), the OpenAI
// surface's (intab's openai-checks.ts, a body's fields under their OpenAI names) and the remote backend's (intab's
// remote/api.ts): the list of GenerateRequest fields, the refusal of an unknown one naming the closest, the chat roles.
// It imports only the errors and the contract, so the page side can use it without the engine (and its grammar compiler).

import { REQUEST_LIMITS as L, type EmbedRequest, type GenerateRequest, type PreloadRequest, type RerankRequest } from './contract.ts';
import { InvalidRequestError } from './errors.ts';

/** Whether a field was sent: undefined and null both mean "absent" (JSON bodies send null for "the default"). */
export function given(v: unknown): boolean {
  return v !== undefined && v !== null;
}

export function bad(field: string, value: unknown, expected: string): never {
  throw new InvalidRequestError(field, value, expected);
}

/** An object of fields (not an array, not a Map or other class instance, whose own keys would be invisible). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A token id as a JSON object key (logit bias): a whole number, no sign, no exponent, no leading zero. */
export const TOKEN_ID_KEY = /^(?:0|[1-9]\d{0,15})$/;

/**
 * Stop strings: at most REQUEST_LIMITS.stop of them (refused as 'stop'), each non-empty and at most stopLength long
 * (refused as `fieldOf(i)`). An index loop: a sparse array's holes are refused too.
 */
export function checkStopStrings(stop: readonly unknown[], fieldOf: (i: number) => string): void {
  if (stop.length > L.stop) bad('stop', `${stop.length} strings`, `at most ${L.stop} stop strings`);
  for (let i = 0; i < stop.length; i++) {
    const s: unknown = stop[i];
    if (typeof s !== 'string' || s.length === 0 || s.length > L.stopLength) bad(fieldOf(i), s, `a non-empty string of at most ${L.stopLength} characters`);
  }
}

/** A key as part of a field name, cut so that a hostile key cannot make the error's field or message huge. */
export function shownKey(k: string): string {
  return k.length > 24 ? `${k.slice(0, 21)}...` : k;
}

// ---- the fields of a request ----

/**
 * Every field of a GenerateRequest, the one list the unknown-field check reads. The `satisfies` refuses a name the type
 * lacks, and AllListed below refuses a field of the type missing here: the two cannot drift apart.
 */
export const GENERATE_FIELDS = [
  'prompt', 'promptIds', 'messages', 'truncate',
  'maxTokens', 'strictContext', 'temperature', 'topK', 'topP', 'minP', 'repetitionPenalty', 'presencePenalty',
  'frequencyPenalty', 'logitBias', 'seed', 'stop', 'stopTokenIds', 'ignoreEos', 'logprobs', 'topLogprobs', 'speculative',
  'responseFormat', 'grammar', 'regex', 'cache', 'tools', 'toolChoice', 'parallelToolCalls',
] as const satisfies readonly (keyof GenerateRequest)[];

/** Every key of any member of a union (keyof a union is only the keys all members share). */
type KeysOf<T> = T extends unknown ? keyof T : never;

/** The fields of a PreloadRequest: one prompt, nothing else (a preload samples nothing). */
export const PRELOAD_FIELDS = ['messages', 'prompt', 'promptIds', 'tools'] as const satisfies readonly KeysOf<PreloadRequest>[];

/** The fields of an EmbedRequest. */
export const EMBED_FIELDS = ['input', 'dimensions', 'truncate'] as const satisfies readonly (keyof EmbedRequest)[];
export const RERANK_FIELDS = ['query', 'documents', 'topN', 'truncate'] as const satisfies readonly (keyof RerankRequest)[];

/** `true` when `Listed` names every key of `T`; otherwise the missing keys, which `true` does not fit. */
type AllListed<T, Listed extends PropertyKey> = [Exclude<T, Listed>] extends [never] ? true : Exclude<T, Listed>;
// A GenerateRequest or PreloadRequest field missing from its list fails the typecheck here, naming the field.
const generateFieldsListed: AllListed<keyof GenerateRequest, (typeof GENERATE_FIELDS)[number]> = true;
const preloadFieldsListed: AllListed<KeysOf<PreloadRequest>, (typeof PRELOAD_FIELDS)[number]> = true;
const embedFieldsListed: AllListed<keyof EmbedRequest, (typeof EMBED_FIELDS)[number]> = true;
const rerankFieldsListed: AllListed<keyof RerankRequest, (typeof RERANK_FIELDS)[number]> = true;

/** Edit distance (insertions, deletions, substitutions) between two names. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/**
 * The known name closest to `name` when it is close enough to be a slip of the keyboard (at most 2 edits, or a third
 * of the name's length), else undefined. Case, '_' and '-' do not count: 'max_tokens' and 'MaxTokens' are 'maxTokens'.
 * @example
 * closestName('maxToken', GENERATE_FIELDS); // 'maxTokens'
 * closestName('top_p', GENERATE_FIELDS);    // 'topP'
 * closestName('stream', GENERATE_FIELDS);   // undefined
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const plain = (s: string) => s.toLowerCase().replace(/[_-]/g, '');
  const n = plain(name.length > 64 ? name.slice(0, 64) : name); // a hostile key costs no more than a long name
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = editDistance(n, plain(k));
    if (d < bestD) [best, bestD] = [k, d];
  }
  return bestD <= Math.max(2, Math.floor(n.length / 3)) ? best : undefined;
}

/**
 * Refuses a field of `r` that `surface` does not take (one given: undefined and null mean absent, as everywhere), as an
 * InvalidRequestError whose field is the unknown name and whose message names the closest known one, or lists them
 * all when none is close. A typo must not run silently with the default (`maxToken: 5` ran to 256 tokens).
 * @example
 * checkKnownFields({ prompt: 'hi', maxToken: 5 }, GENERATE_FIELDS, 'generate()');
 * // throws: generate(): unknown field 'maxToken': did you mean 'maxTokens'? Rename it and try again.
 */
export function checkKnownFields(r: object, known: readonly string[], surface: string): void {
  for (const key of Object.keys(r)) {
    const value: unknown = (r as Record<string, unknown>)[key];
    if (known.includes(key) || !given(value)) continue;
    const name = shownKey(key);
    const near = closestName(key, known);
    const err = new InvalidRequestError(name, value, near ? `absent (did you mean '${near}'?)` : `absent (${surface} takes ${known.join(', ')})`);
    // The message leads with what is wrong and what to do; the fields stay InvalidRequestError's (field, value, expected).
    err.message = near
      ? `${surface}: unknown field '${name}': did you mean '${near}'? Rename it and try again.`
      : `${surface}: unknown field '${name}': remove it. ${surface} takes ${known.join(', ')}.`;
    throw err;
  }
}

// ---- chat roles ----

/**
 * The roles a chat message may have, on every surface (generate, preload, chat.completions, a remote engine). 'developer'
 * is OpenAI's newer name of 'system' and reaches the chat template as 'system' (templateRole). 'tool' carries a tool's
 * result as string content, rendered by the template as it renders tool turns (tool calling itself is issue 24's).
 */
export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool', 'developer'] as const;

export type ChatRole = (typeof CHAT_ROLES)[number];

const ROLES_TEXT = "'system', 'user', 'assistant', 'tool' or 'developer' (OpenAI's name of 'system')";

/** Refuses a role that is not one of CHAT_ROLES, as `field` ('messages[2].role'), naming the closest when one is close. */
export function checkRole(role: unknown, field: string): asserts role is ChatRole {
  if (typeof role === 'string' && (CHAT_ROLES as readonly string[]).includes(role)) return;
  const near = typeof role === 'string' ? closestName(role, CHAT_ROLES) : undefined;
  bad(field, role, `one of ${ROLES_TEXT}${near ? `: did you mean '${near}'?` : ''}`);
}

/**
 * The role a chat template gets: 'developer' becomes 'system', since most templates (ChatML, Llama 3, Gemma, Mistral)
 * know only 'system' and render an unknown role as a turn the model never saw, or raise on it. Others are unchanged.
 */
export function templateRole(role: string): string {
  return role === 'developer' ? 'system' : role;
}

// ---- tools ----

/** OpenAI's rule for a function's name. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** The most tools one request may offer (OpenAI's limit). */
export const MAX_TOOLS = 128;
/**
 * The most characters of JSON all of a request's `parameters` schemas may take together (1 KiB for each of 128 tools):
 * compiling costs about 10 µs a character for pattern-heavy schemas, so this bounds a request's compile time to about a
 * second before the grammar's own budgets come in.
 */
export const MAX_TOOL_SCHEMA_CHARS = 131_072;

/**
 * A request's `tools` (at `field`): at most MAX_TOOLS, each `{ type: 'function', function: { name, description?,
 * parameters?, strict? } }`, names by TOOL_NAME and distinct. The schemas themselves are the grammar compiler's to judge.
 * @example
 * checkTools([{ type: 'function', function: { name: 'get weather' } }], 'tools'); // throws: 'tools[0].function.name' should be 1-64 of a-z, A-Z, 0-9, _ and -...
 */
export function checkTools(tools: unknown, field = 'tools'): void {
  if (!Array.isArray(tools)) bad(field, tools, `an array of at most ${MAX_TOOLS} { type: 'function', function: { name, description?, parameters?, strict? } }`);
  if (tools.length > MAX_TOOLS) bad(field, `${tools.length} tools`, `at most ${MAX_TOOLS} tools (offer the ones this turn needs)`);
  const names = new Set<string>();
  let chars = 0;
  for (let i = 0; i < tools.length; i++) {
    const t: unknown = tools[i];
    const at = `${field}[${i}]`;
    if (!isRecord(t)) bad(at, t, "{ type: 'function', function: { name, description?, parameters?, strict? } }");
    if (t.type !== 'function') bad(`${at}.type`, t.type, "'function' (the only kind of tool)");
    const f = t.function;
    if (!isRecord(f)) bad(`${at}.function`, f, '{ name, description?, parameters?, strict? }');
    const name = f.name;
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) bad(`${at}.function.name`, typeof name === 'string' ? shownKey(name) : name, '1-64 characters of a-z, A-Z, 0-9, _ and -');
    if (names.has(name)) bad(`${at}.function.name`, name, 'a name no other tool of the request has');
    names.add(name);
    if (given(f.description) && typeof f.description !== 'string') bad(`${at}.function.description`, f.description, 'a string');
    if (given(f.parameters) && !isRecord(f.parameters)) bad(`${at}.function.parameters`, f.parameters, "a JSON Schema object of the arguments ({ type: 'object', properties: {...} })");
    if (given(f.parameters)) {
      const n = schemaChars(f.parameters, MAX_TOOL_SCHEMA_CHARS - chars);
      if (n === null) bad(`${at}.function.parameters`, `a schema nested more than ${MAX_SCHEMA_DEPTH} levels deep`, `a schema nested at most ${MAX_SCHEMA_DEPTH} levels deep`);
      chars += n;
      if (chars > MAX_TOOL_SCHEMA_CHARS) bad(`${at}.function.parameters`, `schemas of more than ${MAX_TOOL_SCHEMA_CHARS} characters so far`, `schemas of at most ${MAX_TOOL_SCHEMA_CHARS.toLocaleString('en-US')} characters of JSON for all tools together (offer fewer tools, or smaller schemas)`);
    }
    if (given(f.strict) && typeof f.strict !== 'boolean') bad(`${at}.function.strict`, f.strict, 'a boolean');
  }
}

/** Nesting of JSON values in a schema past which it is refused before anything walks it recursively. */
const MAX_SCHEMA_DEPTH = 256;

/**
 * A value's JSON length, counted only up to a little past `limit` (a hostile schema is not serialized whole); null when
 * it nests deeper than MAX_SCHEMA_DEPTH.
 */
function schemaChars(v: unknown, limit: number): number | null {
  let n = 0;
  let deep = false;
  const walk = (x: unknown, depth: number): void => {
    if (n > limit || deep) return;
    if (typeof x === 'string') n += x.length + 2;
    else if (x === null || typeof x !== 'object') n += String(x).length;
    else if (depth > MAX_SCHEMA_DEPTH) deep = true;
    else {
      const entries = Array.isArray(x) ? x.map((e) => ['', e] as const) : Object.entries(x);
      n += 2;
      for (const [k, e] of entries) {
        n += k.length + (Array.isArray(x) ? 1 : 4);
        walk(e, depth + 1);
        if (n > limit || deep) return;
      }
    }
  };
  walk(v, 0);
  return deep ? null : n;
}

/** `toolChoice` against the request's tools: named functions must be among them; 'required' or a name needs tools. */
export function checkToolChoice(choice: unknown, tools: readonly { function: { name: string } }[] | undefined, field = 'toolChoice'): void {
  if (!given(choice)) return;
  const expected = "'auto', 'none', 'required' or { type: 'function', function: { name } }";
  if (choice === 'auto' || choice === 'none') return;
  if (choice === 'required') {
    if (!tools?.length) bad(field, choice, "'auto' or 'none' unless the request gives tools (pass tools to require a call)");
    return;
  }
  if (!isRecord(choice) || choice.type !== 'function' || !isRecord(choice.function)) bad(field, choice, expected);
  const name = choice.function.name;
  if (typeof name !== 'string') bad(`${field}.function.name`, name, 'the name of one of the request\'s tools');
  if (!tools?.some((t) => t.function.name === name)) {
    bad(`${field}.function.name`, shownKey(name), tools?.length ? `one of the request's tools: ${tools.slice(0, 8).map((t) => t.function.name).join(', ')}${tools.length > 8 ? ', ...' : ''}` : 'the name of a tool the request gives (pass tools)');
  }
}
