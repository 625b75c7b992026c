// The checks of a GenerateRequest before any work is done for it: no field it does not know (a typo names the closest
// known one), every field's type and range against the model (its vocabulary, whether it has a tokenizer), every
// message's role. Each refusal is an InvalidRequestError that names the field ('stop[3]', 'logitBias[70000]',
// 'messages[2].role') and says what is accepted, bounds included. The bounds are the contract's REQUEST_LIMITS, which
// the OpenAI surface checks too. resolveOptions (sequence.ts) runs these, then fills in defaults; what depends on what
// is loaded (a draft model, the layers that can self-draft) is resolveSpeculative's, later. A preload's request is
// checked here too (checkPreload), and what its messages become for the chat template (templateMessages).

import { REQUEST_LIMITS as L, type ChatMessage, type GenerateRequest, type PreloadRequest } from './contract.ts';
import { formatOf } from './constraint.ts';
import { GENERATE_FIELDS, PRELOAD_FIELDS, TOKEN_ID_KEY, bad, checkKnownFields, checkRole, checkStopStrings, checkToolChoice, checkTools, given, isRecord, shownKey, templateRole } from './field-checks.ts';

export { given, shownKey };

const isNumber = (v: unknown): v is number => typeof v === 'number' && !Number.isNaN(v);

function tokenIds(field: string, ids: unknown, vocab: number, nonEmpty: boolean): void {
  if (!Array.isArray(ids) || (nonEmpty && ids.length === 0)) bad(field, ids, `${nonEmpty ? 'a non-empty' : 'an'} array of token ids in [0, ${vocab})`);
  // An index loop, not forEach: a sparse array's holes are undefined ids too.
  for (let i = 0; i < ids.length; i++) {
    const id: unknown = ids[i];
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= vocab) bad(`${field}[${i}]`, id, `a token id in [0, ${vocab})`);
  }
}

function boolean(r: GenerateRequest, field: keyof GenerateRequest, what: string): void {
  const v = r[field];
  if (given(v) && typeof v !== 'boolean') bad(field, v, `a boolean${what ? ` (${what})` : ''}`);
}

/** A number in [lo, hi] (lo excluded when `open`). */
function range(r: GenerateRequest, field: keyof GenerateRequest, lo: number, hi: number, expected: string, open = false): void {
  const v = r[field];
  if (!given(v)) return;
  if (!isNumber(v) || (open ? v <= lo : v < lo) || v > hi) bad(field, v, expected);
}

// ---- the prompt ----

/** Exactly one of prompt, promptIds and messages, each of its shape. */
function checkPrompt(r: GenerateRequest, vocab: number): void {
  const sent = (['prompt', 'promptIds', 'messages'] as const).filter((k) => given(r[k]));
  if (sent.length !== 1) bad('prompt', sent.length ? sent.join(' and ') : 'none of them', 'exactly one of prompt, promptIds or messages');
  if (given(r.prompt) && typeof r.prompt !== 'string') bad('prompt', r.prompt, 'a string');
  if (given(r.promptIds)) tokenIds('promptIds', r.promptIds, vocab, true);
  if (given(r.messages)) {
    const ms: unknown = r.messages;
    if (!Array.isArray(ms) || ms.length === 0) bad('messages', ms, 'a non-empty array of { role, content } messages');
    for (let i = 0; i < ms.length; i++) {
      const m: unknown = ms[i];
      if (typeof m !== 'object' || m === null || Array.isArray(m)) bad(`messages[${i}]`, m, 'a message { role: string, content: string }');
      checkMessage(m as Record<string, unknown>, i);
    }
  }
}

/**
 * One chat message: a role and string content; an assistant message may instead (or also) carry toolCalls (content
 * null or ''), each with an id, a name and arguments that are a JSON object's text; a 'tool' message names the call it
 * answers (toolCallId).
 */
function checkMessage(m: Record<string, unknown>, i: number): void {
  const { role, content, toolCalls, toolCallId, name } = m;
  const at = `messages[${i}]`;
  checkRole(role, `${at}.role`);
  const calls = given(toolCalls);
  if (calls && role !== 'assistant') bad(`${at}.toolCalls`, toolCalls, "absent except on an 'assistant' message");
  if (typeof content !== 'string' && !(calls && content === null)) bad(`${at}.content`, content, calls ? 'a string, or null' : 'a string');
  if (calls) {
    if (!Array.isArray(toolCalls)) bad(`${at}.toolCalls`, toolCalls, "an array of { id, type: 'function', function: { name, arguments } }");
    for (let j = 0; j < toolCalls.length; j++) {
      const c: unknown = toolCalls[j];
      const cat = `${at}.toolCalls[${j}]`;
      if (!isRecord(c) || !isRecord(c.function)) bad(cat, c, "{ id, type: 'function', function: { name, arguments } }");
      if (typeof c.id !== 'string' || !c.id) bad(`${cat}.id`, c.id, 'the call\'s id (a non-empty string)');
      if (given(c.type) && c.type !== 'function') bad(`${cat}.type`, c.type, "'function'");
      if (typeof c.function.name !== 'string' || !c.function.name) bad(`${cat}.function.name`, c.function.name, 'the called function\'s name');
      const args = c.function.arguments;
      let parsed: unknown;
      try {
        parsed = typeof args === 'string' ? JSON.parse(args) : undefined;
      } catch {
        parsed = undefined;
      }
      if (!isRecord(parsed)) bad(`${cat}.function.arguments`, typeof args === 'string' ? args.slice(0, 64) : args, 'the arguments as a JSON object\'s text (as the model wrote them)');
    }
  }
  // A tool result names its call (OpenAI requires it; templates that print ids need it), but a chat from before tool
  // calling (a 'tool' message of content alone) is still rendered as it was.
  if (given(toolCallId)) {
    if (role !== 'tool') bad(`${at}.toolCallId`, toolCallId, "absent except on a 'tool' message");
    if (typeof toolCallId !== 'string' || !toolCallId) bad(`${at}.toolCallId`, toolCallId, 'the id of the call whose result this message carries');
  }
  if (given(name) && typeof name !== 'string') bad(`${at}.name`, name, 'a string');
}

/** tools, toolChoice and parallelToolCalls: with messages only, not with another format; see checkTools. */
function checkToolFields(r: GenerateRequest): void {
  boolean(r, 'parallelToolCalls', 'false: at most one call per reply');
  if (!given(r.tools)) {
    checkToolChoice(r.toolChoice, undefined);
    return;
  }
  if (!given(r.messages)) bad('tools', '(with prompt or promptIds)', 'absent unless the request sends messages (tools are rendered by the chat template)');
  for (const other of ['responseFormat', 'grammar', 'regex'] as const) {
    if (given(r[other])) bad('tools', `(with ${other})`, `absent when ${other} is given (the call syntax is the output's format), or drop ${other}`);
  }
  checkTools(r.tools);
  checkToolChoice(r.toolChoice, r.tools);
}

// ---- sampling ----

function checkSampling(r: GenerateRequest, vocab: number): void {
  range(r, 'temperature', 0, L.temperature, `a number in [0, ${L.temperature}] (0 = greedy)`);
  if (given(r.topK) && (!Number.isSafeInteger(r.topK) || r.topK! < 0)) bad('topK', r.topK, 'an integer ≥ 0 (0 = off)');
  range(r, 'topP', 0, 1, 'a number in (0, 1] (1 = off; for greedy decoding set temperature: 0)', true);
  range(r, 'minP', 0, 1, 'a number in [0, 1] (0 = off)');
  const [repLo, repHi] = L.repetitionPenalty;
  range(r, 'repetitionPenalty', repLo, repHi, `a number in [${repLo}, ${repHi}] (1 = off)`);
  range(r, 'presencePenalty', -L.penalty, L.penalty, `a number in [-${L.penalty}, ${L.penalty}] (0 = off)`);
  range(r, 'frequencyPenalty', -L.penalty, L.penalty, `a number in [-${L.penalty}, ${L.penalty}] (0 = off)`);
  if (given(r.logitBias)) {
    const bias: unknown = r.logitBias;
    if (!isRecord(bias)) bad('logitBias', bias, 'an object { "<token id>": bias }');
    const entries = Object.entries(bias);
    if (entries.length > L.logitBiasEntries) bad('logitBias', `${entries.length} entries`, `an object of at most ${L.logitBiasEntries} { "<token id>": bias } entries`);
    for (const [k, v] of entries) {
      if (!TOKEN_ID_KEY.test(k) || Number(k) >= vocab) bad(`logitBias[${shownKey(k)}]`, k, `a key that is a token id in [0, ${vocab})`);
      if (!isNumber(v) || !((v >= -L.logitBias && v <= L.logitBias) || v === -Infinity)) {
        bad(`logitBias[${k}]`, v, `a bias in [-${L.logitBias}, ${L.logitBias}], or -Infinity to ban the token`);
      }
    }
  }
  if (given(r.seed) && !Number.isSafeInteger(r.seed)) bad('seed', r.seed, 'an integer in [-(2^53 - 1), 2^53 - 1]');
  boolean(r, 'logprobs', 'true: return each token\'s logprob');
  if (given(r.topLogprobs)) {
    const maxTop = Math.min(L.topLogprobs, vocab);
    if (!Number.isInteger(r.topLogprobs) || r.topLogprobs! < 0 || r.topLogprobs! > maxTop) bad('topLogprobs', r.topLogprobs, `an integer in [0, ${maxTop}]`);
    if (r.topLogprobs! > 0 && r.logprobs !== true) bad('topLogprobs', r.topLogprobs, '0 unless logprobs is true (set logprobs: true to get alternatives)');
  }
}

// ---- stopping ----

function checkStopping(r: GenerateRequest, vocab: number, hasTokenizer: boolean): void {
  if (given(r.maxTokens) && (!Number.isSafeInteger(r.maxTokens) || r.maxTokens! < 1)) bad('maxTokens', r.maxTokens, 'an integer ≥ 1 (the most new tokens)');
  boolean(r, 'strictContext', 'true: refuse a maxTokens the context cannot hold instead of clamping it');
  if (given(r.stop)) {
    const stop: unknown = r.stop;
    if (!Array.isArray(stop)) bad('stop', stop, `an array of at most ${L.stop} strings (a single stop string goes in [ ])`);
    checkStopStrings(stop, (i) => `stop[${i}]`);
    if (stop.length > 0 && !hasTokenizer) bad('stop', stop, 'absent: this model has no tokenizer to produce text (use stopTokenIds)');
  }
  if (given(r.stopTokenIds)) tokenIds('stopTokenIds', r.stopTokenIds, vocab, false);
  boolean(r, 'ignoreEos', 'true: keep generating past the model\'s end-of-text tokens');
  if (given(r.truncate)) {
    if (r.truncate !== 'oldest' && r.truncate !== 'none') bad('truncate', r.truncate, "'oldest' (drop the oldest turns to fit) or 'none'");
    if (r.truncate === 'oldest' && !given(r.messages)) bad('truncate', r.truncate, "absent or 'none' unless the request sends messages (only chat turns can be dropped)");
  }
}

// ---- the rest ----

const METHODS = ['ngram', 'draft', 'self', 'auto'];

function checkOther(r: GenerateRequest): void {
  boolean(r, 'cache', 'false: neither read nor fill the prefix cache');
  // The shape of `speculative`; its numbers and what the loaded models allow are resolveSpeculative's.
  const sp: unknown = r.speculative;
  if (given(sp) && sp !== false) {
    if (typeof sp === 'string') {
      if (!METHODS.includes(sp)) bad('speculative', sp, "false or a method: 'ngram', 'draft', 'self' or 'auto'");
    } else if (isRecord(sp)) {
      if (typeof sp.method !== 'string' || !METHODS.includes(sp.method)) bad('speculative.method', sp.method, "'ngram', 'draft', 'self' or 'auto'");
    } else bad('speculative', sp, "false, a method ('ngram', 'draft', 'self', 'auto') or { method, k?, adaptive?, ngramMax?, ngramMin?, layers? }");
  }
  formatOf(r); // responseFormat / grammar / regex: at most one, of its shape
}

/**
 * Checks every field of a request against a model of `vocab` tokens (with a tokenizer or not). Throws an
 * InvalidRequestError naming the first bad field (an unknown one first); returns nothing (resolveOptions fills in the
 * defaults).
 * @example
 * checkRequest({ promptIds: [1, 2], stop: ['\n', ''] }, 512, true); // throws: 'stop[1]' should be a non-empty string...
 * checkRequest({ prompt: 'hi', maxToken: 5 }, 512, true); // throws: generate(): unknown field 'maxToken': did you mean 'maxTokens'?...
 */
export function checkRequest(r: GenerateRequest, vocab: number, hasTokenizer: boolean): void {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) bad('request', r, 'an object with prompt, promptIds or messages');
  checkKnownFields(r, GENERATE_FIELDS, 'generate()'); // first: 'promt' is a typo of prompt, not a request without one
  checkPrompt(r, vocab);
  checkStopping(r, vocab, hasTokenizer);
  checkSampling(r, vocab);
  checkOther(r);
  checkToolFields(r);
}

/**
 * Checks a preload's request: an object of exactly one of messages, prompt or promptIds (nothing else: a preload
 * samples nothing), that prompt of its shape and its messages' roles, as generate() checks them.
 * @example
 * checkPreload({ messages: [{ role: 'wizard', content: 'x' }] }, 512); // throws: 'messages[0].role' should be one of...
 */
export function checkPreload(r: PreloadRequest, vocab: number): void {
  const expected = 'exactly one of { messages }, { prompt } or { promptIds }';
  if (!isRecord(r)) bad('preload', r, expected);
  checkKnownFields(r, PRELOAD_FIELDS, 'preload()');
  if ((['messages', 'prompt', 'promptIds'] as const).filter((k) => given((r as Record<string, unknown>)[k])).length !== 1) bad('preload', r, expected);
  checkPrompt(r as GenerateRequest, vocab);
  const tools = (r as { tools?: unknown }).tools;
  if (given(tools)) {
    if (!given((r as { messages?: unknown }).messages)) bad('tools', '(with prompt or promptIds)', 'absent unless the preload sends messages');
    checkTools(tools);
  }
}

/**
 * A chat's messages as the chat template gets them: copies (the template never sees the caller's objects), 'developer'
 * as 'system' (templateRole: most templates know only 'system'), every other field (name, tool_call_id...) as it is.
 */
export function templateMessages(messages: readonly ChatMessage[]): { role: string; [field: string]: unknown }[] {
  return messages.map((m) => ({ ...m, role: templateRole(m.role) }));
}
