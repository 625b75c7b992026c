// Constrained decoding for one request: the grammar its format compiles to (JSON Schema, any JSON, GBNF,
// regex; @intab/grammar), a TokenMatcher that turns the grammar's state into an allowed-token bitmask for the
// GPU sampler, accepts sampled tokens, rolls back rejected speculative proposals and reports the tokens the
// grammar forces, and, for JSON formats, the incremental parser that turns the output into partial-JSON events.

import { PartialJsonParser, TokenMatcher, TokenVocabulary, anyJson, compileGbnf, compileJsonSchema, compileRegex, jsonValueType, type Grammar, type GrammarWarning, type JsonEvent } from '@intab/grammar';
import type { GenerateRequest, ResponseFormat } from './contract.ts';
import { InvalidRequestError } from './errors.ts';

/** The format of a request (responseFormat, or the grammar / regex shortcuts), checked; undefined when unconstrained. */
export function formatOf(r: GenerateRequest): ResponseFormat | undefined {
  const given = [r.responseFormat, r.grammar, r.regex].filter((x) => x !== undefined).length;
  if (given > 1) throw new InvalidRequestError('responseFormat', 'responseFormat with grammar or regex', 'at most one of responseFormat, grammar and regex');
  if (r.grammar !== undefined) {
    if (typeof r.grammar !== 'string' || !r.grammar.trim()) throw new InvalidRequestError('grammar', r.grammar, 'a GBNF grammar (text with a root rule)');
    return { type: 'grammar', grammar: r.grammar };
  }
  if (r.regex !== undefined) {
    if (typeof r.regex !== 'string' || !r.regex) throw new InvalidRequestError('regex', r.regex, 'a non-empty regular expression');
    return { type: 'regex', pattern: r.regex };
  }
  const f = r.responseFormat;
  if (f === undefined) return undefined;
  if (typeof f !== 'object' || f === null) throw new InvalidRequestError('responseFormat', f, "{ type: 'json_schema', schema } or { type: 'json_object' } (or 'grammar', 'regex')");
  switch (f.type) {
    case 'json_schema':
      if (typeof f.schema !== 'boolean' && (typeof f.schema !== 'object' || f.schema === null || Array.isArray(f.schema))) {
        throw new InvalidRequestError('responseFormat.schema', f.schema, 'a JSON Schema (an object, or true/false)');
      }
      if (f.strict !== undefined && typeof f.strict !== 'boolean') throw new InvalidRequestError('responseFormat.strict', f.strict, 'a boolean');
      break;
    case 'json_object':
      break;
    case 'grammar':
      if (typeof f.grammar !== 'string' || !f.grammar.trim()) throw new InvalidRequestError('responseFormat.grammar', f.grammar, 'a GBNF grammar (text with a root rule)');
      break;
    case 'regex':
      if (typeof f.pattern !== 'string' || !f.pattern) throw new InvalidRequestError('responseFormat.pattern', f.pattern, 'a non-empty regular expression');
      break;
    default:
      throw new InvalidRequestError('responseFormat.type', (f as { type?: unknown }).type, "'json_schema', 'json_object', 'grammar' or 'regex'");
  }
  const ws = (f as { whitespace?: unknown }).whitespace;
  if (ws !== undefined && ws !== 'compact' && ws !== 'pretty') throw new InvalidRequestError('responseFormat.whitespace', ws, "'compact' or 'pretty'");
  return f;
}

/** Compiles a format to its grammar (typed grammar errors — UnsupportedSchemaError, GrammarSyntaxError... — pass through). */
export function compileFormat(f: ResponseFormat): Grammar {
  switch (f.type) {
    case 'json_schema':
      return compileJsonSchema(f.schema, { strict: f.strict ?? true, whitespace: f.whitespace ?? 'compact' });
    case 'json_object':
      return anyJson({ whitespace: f.whitespace ?? 'compact' });
    case 'grammar':
      return compileGbnf(f.grammar);
    case 'regex':
      return compileRegex(f.pattern);
  }
}

/** The output format of a request with tools (its grammar is the tool calls', tools/grammar.ts). */
export interface ToolsFormat {
  type: 'tools';
}

/**
 * One sequence's constraint: masks for the next token (and for speculative rows after proposals), sampled and
 * forced tokens, and the JSON events of its text.
 */
export class Constraint {
  private readonly matcher: TokenMatcher;
  private readonly parser?: PartialJsonParser;
  readonly warnings: readonly GrammarWarning[];
  /**
   * UTF-8 bytes of the accepted tokens and of the text the parser has read. Type-ahead reads the grammar state, so
   * it runs only while the two agree (text held back by the detokenizer or a stop string is not parsed yet).
   */
  private acceptedBytes = 0;
  private parsedBytes = 0;

  constructor(
    readonly format: ResponseFormat | ToolsFormat,
    grammar: Grammar,
    /** Built with the model's vocabulary size, so masks fit its sampler. */
    private readonly vocab: TokenVocabulary,
  ) {
    this.matcher = new TokenMatcher(grammar, vocab);
    this.warnings = grammar.warnings;
    if (format.type === 'json_schema' || format.type === 'json_object') this.parser = new PartialJsonParser({ snapshots: 'none' });
  }

  get json(): boolean {
    return this.parser !== undefined;
  }

  /** The grammar is complete and allows nothing more, or an end token was accepted: the sequence ends. */
  get done(): boolean {
    return this.matcher.done;
  }

  /** The allowed-token mask of the next token, or of the token after `proposals` (speculative rows). */
  mask(proposals: readonly number[] = []): Uint32Array {
    if (proposals.length === 0) return this.matcher.mask();
    const n = this.matcher.acceptTokens(proposals);
    try {
      // Proposals past one the grammar refuses never reach a verify row (see allowedPrefix); this row is unreachable.
      return n === proposals.length ? this.matcher.mask() : new Uint32Array(this.vocab.words);
    } finally {
      this.matcher.rollback(n);
    }
  }

  /**
   * How many of `proposals` a verify step may take: the grammar must allow each, and none may lead to a state
   * that forces text — plain decoding inserts forced tokens there without sampling (in their own
   * tokenization), so a verify row sampling at such a state would leave plain decoding's path.
   */
  allowedPrefix(proposals: readonly number[]): number {
    let accepted = 0;
    let keep = 0;
    for (const t of proposals) {
      if (!this.matcher.accept(t)) break;
      accepted++;
      if (this.matcher.done || this.matcher.forced().length > 0) break;
      keep = accepted;
    }
    this.matcher.rollback(accepted);
    return keep;
  }

  /** A generated token; false when the grammar refuses it (the sampler's mask makes that impossible). */
  accept(token: number): boolean {
    if (!this.matcher.accept(token)) return false;
    if (!this.vocab.eos.includes(token)) this.acceptedBytes += this.vocab.tokens[token]?.length ?? 0;
    return true;
  }

  /** Tokens the grammar forces next (emitted without sampling), or none. */
  forced(): number[] {
    return this.matcher.forced();
  }

  /**
   * JSON formats: the events of newly emitted text, then type-ahead: where a value must start and the grammar allows
   * one type only (the schema fixes it), a `type` event for the value's path before any of its text.
   */
  events(text: string): JsonEvent[] {
    const parser = this.parser;
    if (!parser) return [];
    const out = text ? parser.push(text) : [];
    this.parsedBytes += utf8Length(text);
    if (this.parsedBytes === this.acceptedBytes && !this.matcher.done) {
      const path = parser.valueAhead;
      const type = path && jsonValueType(this.matcher.grammar, this.matcher.state);
      if (path && type) out.push(...parser.announce(path, type));
    }
    return out;
  }

  /** JSON formats: the events that end the document, when it is complete (maxTokens may cut it short). */
  end(): JsonEvent[] {
    if (!this.parser || !this.matcher.canEnd) return [];
    try {
      return this.parser.end();
    } catch {
      return []; // cut short (maxTokens, abort): the document stays partial
    }
  }

  /** JSON formats: the document so far. */
  get partial(): unknown {
    return this.parser?.snapshot;
  }
}

/** Bytes of `text` in UTF-8 (lone surrogates count as U+FFFD's three, as TextEncoder writes them). */
function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
