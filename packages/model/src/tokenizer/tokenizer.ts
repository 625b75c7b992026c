// One Tokenizer for every model intab runs: a Hugging Face tokenizer.json (BPE byte-level, SentencePiece-style
// BPE with byte fallback, Unigram, WordPiece) run by @huggingface/tokenizers, with the special-token ids the
// engine needs (BOS/EOS/PAD, stop ids) read from tokenizer_config.json. A GGUF's embedded tokenizer is turned
// into the same tokenizer.json object first (gguf-tokenizer.ts), so both paths share this code. A damaged
// tokenizer.json is a ModelFormatError naming the file and field; the library never throws at the caller.

import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { IntabModelError, ModelFormatError, UnsupportedModelError } from '../errors.ts';
import type { ChatTemplateSource } from './chat-template.ts';

// ---- public shapes ----

/** How a tokenizer turns text into pieces; decides what a detokenizer must hold back. */
export type TokenizerKind = 'byte-level-bpe' | 'sentencepiece-bpe' | 'bpe' | 'unigram' | 'wordpiece';

/** A token matched whole in text before the model runs (tokenizer.json `added_tokens`). */
export interface AddedTokenInfo {
  readonly id: number;
  readonly content: string;
  /** Special tokens (BOS, <|im_end|>, ...) are dropped by `decode(ids, { skipSpecialTokens: true })`. */
  readonly special: boolean;
}

export interface EncodeOptions {
  /** Add what the tokenizer's post-processor adds (BOS for Llama/Mistral, nothing for Qwen). Default true. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Drop special tokens (BOS, EOS, <|im_start|>, ...). Default false. */
  skipSpecialTokens?: boolean;
  /**
   * Apply transformers' `clean_up_tokenization_spaces` (" ." → "."). Default false: llama.cpp never does it and it
   * would make streamed text depend on tokens not yet generated.
   */
  cleanUpSpaces?: boolean;
}

export interface Tokenizer {
  /** The file it came from (tokenizer.json or the GGUF), for messages. */
  readonly file: string;
  readonly kind: TokenizerKind;
  /** Highest token id + 1, added tokens included (the model's embedding may be larger: padded rows). */
  readonly vocabSize: number;
  readonly bosId: number | undefined;
  readonly eosId: number | undefined;
  readonly padId: number | undefined;
  readonly unkId: number | undefined;
  /** Ids that end a generation: EOS plus end-of-turn tokens (GGUF eot/eom, generation_config eos_token_id list). */
  readonly stopIds: readonly number[];
  /** The text of BOS / EOS, as chat templates receive them (`bos_token`, `eos_token`). */
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  /** Whether `encode(text)` (addSpecialTokens: true) puts BOS first / EOS last. */
  readonly addBos: boolean;
  readonly addEos: boolean;
  /** Every added token (special or not), in id order. */
  readonly addedTokens: readonly AddedTokenInfo[];
  /** The chat template(s) shipped with the tokenizer (tokenizer_config.json or GGUF `tokenizer.chat_template`). */
  readonly chatTemplate: ChatTemplateSource | undefined;
  /** The tokenizer.json object this tokenizer runs (for a GGUF, the converted one). */
  readonly json: Readonly<Record<string, unknown>>;
  encode(text: string, options?: EncodeOptions): number[];
  /** Ids without a token (padding rows past the vocabulary) decode to nothing. */
  decode(ids: readonly number[], options?: DecodeOptions): string;
  idToToken(id: number): string | undefined;
  tokenToId(token: string): number | undefined;
  /** Whether `id` is a special added token (dropped by skipSpecialTokens). */
  isSpecial(id: number): boolean;
}

export interface LoadTokenizerOptions {
  /** tokenizer.json: its bytes, its text, or the parsed object (as readHfFolder returns it). */
  tokenizerJson: Uint8Array | ArrayBuffer | string | Record<string, unknown>;
  /** tokenizer_config.json, parsed: bos/eos/pad token names, chat_template. */
  tokenizerConfig?: Record<string, unknown>;
  /** generation_config.json, parsed: its eos_token_id (number or list) joins stopIds. */
  generationConfig?: Record<string, unknown>;
  /** Name for messages; default 'tokenizer.json'. */
  file?: string;
}

/** Ids that a GGUF states outright; they win over names looked up in the config. */
export interface SpecialIdOverrides {
  bos?: number;
  eos?: number;
  pad?: number;
  unk?: number;
  stop?: readonly number[];
  /** The GGUF's token count (its list may repeat a text, which the id → token map then lacks). */
  vocabSize?: number;
}

// ---- limits ----

/** Token ids at or above this are refused as absurd (the largest real vocabularies are ~260k). */
export const MAX_TOKEN_ID = 1 << 24;
const SUPPORTED_MODELS = ['BPE', 'Unigram', 'WordPiece'] as const;

// ---- validation (before the library sees anything) ----

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isTokenId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < MAX_TOKEN_ID;
}

function parseJson(input: LoadTokenizerOptions['tokenizerJson'], file: string): Record<string, unknown> {
  let value: unknown = input;
  if (typeof input === 'string' || input instanceof Uint8Array || input instanceof ArrayBuffer) {
    let text: string;
    try {
      text = typeof input === 'string' ? input : new TextDecoder('utf-8', { fatal: true }).decode(input);
    } catch (e) {
      throw new ModelFormatError(file, 'tokenizer.json', 'the file is not valid UTF-8', { cause: e });
    }
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new ModelFormatError(file, 'tokenizer.json', `the JSON does not parse (${(e as Error).message})`, { cause: e });
    }
  }
  if (!isObject(value)) throw new ModelFormatError(file, 'tokenizer.json', 'the JSON is not an object');
  return value;
}

/** Infers a missing model.type the way the library does, so a wrong guess fails here, typed. */
function modelType(model: Record<string, unknown>, file: string): (typeof SUPPORTED_MODELS)[number] {
  const t = model.type;
  if (t === undefined) {
    if (Array.isArray(model.vocab)) return 'Unigram';
    if ('merges' in model) return 'BPE';
    if (isObject(model.vocab)) return 'WordPiece';
    throw new ModelFormatError(file, 'model.type', 'is missing and the model has no vocab to tell it by');
  }
  if (typeof t !== 'string') throw new ModelFormatError(file, 'model.type', `should be a string but is ${typeof t}`);
  if (!(SUPPORTED_MODELS as readonly string[]).includes(t)) {
    throw new UnsupportedModelError(file, 'model.type', t, `intab runs ${SUPPORTED_MODELS.join(', ')} tokenizers; convert this one with a current transformers`);
  }
  return t as (typeof SUPPORTED_MODELS)[number];
}

function checkVocabObject(vocab: unknown, file: string, field: string): void {
  if (!isObject(vocab)) throw new ModelFormatError(file, field, 'should be an object of token → id');
  for (const token in vocab) {
    const id = vocab[token];
    if (!isTokenId(id)) throw new ModelFormatError(file, `${field}[${JSON.stringify(token)}]`, `the id ${JSON.stringify(id)} is not an integer in 0..${MAX_TOKEN_ID - 1}`);
  }
}

function checkModel(json: Record<string, unknown>, file: string): (typeof SUPPORTED_MODELS)[number] {
  const model = json.model;
  if (model === undefined) throw new ModelFormatError(file, 'model', 'is missing: a tokenizer.json needs its model section');
  if (!isObject(model)) throw new ModelFormatError(file, 'model', 'should be an object');
  const type = modelType(model, file);
  if (type === 'BPE' || type === 'WordPiece') {
    if (model.vocab === undefined) throw new ModelFormatError(file, 'model.vocab', 'is missing');
    checkVocabObject(model.vocab, file, 'model.vocab');
    if (model.unk_token != null && typeof model.unk_token !== 'string') throw new ModelFormatError(file, 'model.unk_token', 'should be a string or null');
  }
  if (type === 'BPE') {
    const merges = model.merges;
    if (merges === undefined) throw new ModelFormatError(file, 'model.merges', 'is missing');
    if (!Array.isArray(merges)) throw new ModelFormatError(file, 'model.merges', 'should be an array');
    // The library reads the first merge to pick the format; a mixed list would be read wrongly.
    const pairs = merges.length > 0 && Array.isArray(merges[0]);
    for (let i = 0; i < merges.length; i++) {
      const m: unknown = merges[i];
      const ok = typeof m === 'string'
        ? m.indexOf(' ', 1) > 0
        : Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string';
      if (!ok) throw new ModelFormatError(file, `model.merges[${i}]`, `${JSON.stringify(m)?.slice(0, 60)} is neither "a b" nor ["a", "b"]`);
      if (Array.isArray(m) !== pairs) throw new ModelFormatError(file, `model.merges[${i}]`, 'mixes "a b" strings and ["a", "b"] pairs');
    }
    for (const key of ['byte_fallback', 'ignore_merges', 'fuse_unk'] as const) {
      if (model[key] != null && typeof model[key] !== 'boolean') throw new ModelFormatError(file, `model.${key}`, 'should be a boolean');
    }
  }
  if (type === 'Unigram') {
    if (!Array.isArray(model.vocab)) throw new ModelFormatError(file, 'model.vocab', 'should be an array of [piece, score]');
    model.vocab.forEach((e, i) => {
      if (!Array.isArray(e) || typeof e[0] !== 'string' || typeof e[1] !== 'number') {
        throw new ModelFormatError(file, `model.vocab[${i}]`, 'should be [piece, score]');
      }
    });
    if (model.vocab.length >= MAX_TOKEN_ID) throw new ModelFormatError(file, 'model.vocab', `${model.vocab.length} pieces is absurd`);
    if (model.unk_id != null && !isTokenId(model.unk_id)) throw new ModelFormatError(file, 'model.unk_id', 'should be a token id or null');
  }
  return type;
}

function checkAddedTokens(json: Record<string, unknown>, file: string): void {
  const added = json.added_tokens;
  if (added == null) return;
  if (!Array.isArray(added)) throw new ModelFormatError(file, 'added_tokens', 'should be an array');
  added.forEach((t, i) => {
    if (!isObject(t)) throw new ModelFormatError(file, `added_tokens[${i}]`, 'should be an object');
    if (!isTokenId(t.id)) throw new ModelFormatError(file, `added_tokens[${i}].id`, `${JSON.stringify(t.id)} is not a token id`);
    if (typeof t.content !== 'string' || t.content.length === 0) throw new ModelFormatError(file, `added_tokens[${i}].content`, 'should be a non-empty string');
    for (const key of ['special', 'normalized', 'lstrip', 'rstrip', 'single_word'] as const) {
      if (t[key] != null && typeof t[key] !== 'boolean') throw new ModelFormatError(file, `added_tokens[${i}].${key}`, 'should be a boolean');
    }
  });
}

const SECTIONS = ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder'] as const;

/** Maps the library's "Unknown X type: Y" to the section it came from. */
const LIBRARY_KINDS: Record<string, (typeof SECTIONS)[number]> = {
  Normalizer: 'normalizer', PreTokenizer: 'pre_tokenizer', PostProcessor: 'post_processor', Decoder: 'decoder',
};

function checkSections(json: Record<string, unknown>, file: string): void {
  for (const key of SECTIONS) {
    const v = json[key];
    if (v == null) continue;
    if (!isObject(v)) throw new ModelFormatError(file, key, 'should be an object or null');
    if (typeof v.type !== 'string') throw new ModelFormatError(file, `${key}.type`, 'should be a string');
    checkPatterns(v, key, file);
  }
}

/**
 * Why a regex could take exponential time on some texts, or undefined: a quantifier of unbounded count (* + {n,})
 * on a group that itself repeats without bound or holds alternatives ((a+)+, (\s*x)*, (a|aa)+), the classic
 * catastrophic backtracking. JS regexes backtrack, the tokenizer runs them on every prompt, and a tab cannot stop a
 * running regex: such a pattern is refused at load. Real tokenizers' split patterns (GPT-2, Llama 3, Qwen, o200k)
 * repeat characters and classes, and groups only optionally.
 */
export function catastrophicBacktracking(pattern: string): string | undefined {
  const groups: { repeats: boolean; alternatives: boolean; start: number }[] = [];
  const unbounded = (at: number): boolean => {
    const c = pattern[at];
    return c === '*' || c === '+' || (c === '{' && /^\{\d*,\}/.test(pattern.slice(at, at + 24)));
  };
  const inner = () => groups[groups.length - 1];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      i++; // an escape: \s* is seen here, \p{L}+ on its last character (the })
      const g = inner();
      if (g && unbounded(i + 1)) g.repeats = true;
      continue;
    }
    if (c === '[') {
      // a class: skip to its end (escapes and a leading ] included)
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      for (; j < pattern.length && pattern[j] !== ']'; j++) if (pattern[j] === '\\') j++;
      i = j;
    } else if (c === '(') {
      groups.push({ repeats: false, alternatives: false, start: i });
      continue;
    } else if (c === '|') {
      const g = inner();
      if (g) g.alternatives = true;
      continue;
    } else if (c === ')') {
      const g = groups.pop();
      if (g === undefined) continue;
      if (unbounded(i + 1) && (g.repeats || g.alternatives)) {
        return `the group at ${g.start} repeats without bound and ${g.repeats ? 'contains a repetition without bound' : 'holds alternatives'}`;
      }
      const outer = inner();
      if (outer && (g.repeats || unbounded(i + 1))) outer.repeats = true;
      continue;
    }
    const g = inner();
    if (g && unbounded(i + 1)) g.repeats = true;
  }
  return undefined;
}

/** Every `pattern` of the pre-tokenizer, normalizer and decoder: a { Regex } or { String }, and no backtracking bomb. */
function checkPatterns(v: unknown, path: string, file: string): void {
  if (Array.isArray(v)) {
    v.forEach((x, i) => checkPatterns(x, `${path}[${i}]`, file));
    return;
  }
  if (!isObject(v)) return;
  for (const [k, x] of Object.entries(v)) {
    if (k === 'pattern') {
      if (!isObject(x) || (typeof x.Regex !== 'string' && typeof x.String !== 'string')) {
        throw new ModelFormatError(file, `${path}.pattern`, 'should be { "Regex": "..." } or { "String": "..." }');
      }
      const why = typeof x.Regex === 'string' ? catastrophicBacktracking(x.Regex) : undefined;
      if (why !== undefined) {
        throw new UnsupportedModelError(file, `${path}.pattern.Regex`, JSON.stringify(x.Regex).slice(0, 80), `${why}, which can take exponential time on some texts; tokenizers split with patterns that repeat characters or classes, not groups of repetitions or alternatives`);
      }
    } else checkPatterns(x, `${path}.${k}`, file);
  }
}

/** Where in a section an object has `type: value`, as 'normalizer.normalizers[1].type'. */
function pathOfType(v: unknown, type: string, path: string): string | undefined {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = pathOfType(v[i], type, `${path}[${i}]`);
      if (p) return p;
    }
  } else if (isObject(v)) {
    if (String(v.type) === type) return `${path}.type`;
    for (const [k, x] of Object.entries(v)) {
      const p = pathOfType(x, type, `${path}.${k}`);
      if (p) return p;
    }
  }
  return undefined;
}

// ---- config helpers ----

/** A token named in tokenizer_config.json: a string, or an AddedToken dict `{ content: ... }`. */
function configToken(config: Record<string, unknown> | undefined, key: string, file: string): string | undefined {
  const v = config?.[key];
  if (v == null) return undefined;
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.content === 'string') return v.content;
  throw new ModelFormatError(file, key, 'should be a token string or { "content": ... }');
}

function configIds(v: unknown): number[] {
  if (isTokenId(v)) return [v];
  if (Array.isArray(v)) return v.filter(isTokenId);
  return [];
}

function detectKind(json: Record<string, unknown>, type: (typeof SUPPORTED_MODELS)[number]): TokenizerKind {
  if (type === 'Unigram') return 'unigram';
  if (type === 'WordPiece') return 'wordpiece';
  const text = JSON.stringify([json.decoder, json.pre_tokenizer]);
  if (text.includes('"ByteLevel"')) return 'byte-level-bpe';
  const model = json.model as Record<string, unknown>;
  if (model.byte_fallback === true || text.includes('\u2581') || text.includes('"Metaspace"')) return 'sentencepiece-bpe';
  return 'bpe';
}

// ---- the tokenizer ----

class HfBackedTokenizer implements Tokenizer {
  readonly file: string;
  readonly kind: TokenizerKind;
  readonly vocabSize: number;
  readonly bosId: number | undefined;
  readonly eosId: number | undefined;
  readonly padId: number | undefined;
  readonly unkId: number | undefined;
  readonly stopIds: readonly number[];
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addedTokens: readonly AddedTokenInfo[];
  readonly chatTemplate: ChatTemplateSource | undefined;
  readonly json: Readonly<Record<string, unknown>>;
  private readonly hf: HfTokenizer;
  private readonly special: ReadonlySet<number>;
  private readonly vocab: Map<string, number>;

  constructor(hf: HfTokenizer, json: Record<string, unknown>, kind: TokenizerKind, file: string, config: Record<string, unknown> | undefined,
    generationConfig: Record<string, unknown> | undefined, ids: SpecialIdOverrides) {
    this.hf = hf;
    this.json = json;
    this.kind = kind;
    this.file = file;
    this.vocab = hf.get_vocab(true);
    const added = [...hf.get_added_tokens_decoder().values()].sort((a, b) => a.id - b.id);
    this.addedTokens = added.map((t) => ({ id: t.id, content: t.content, special: t.special }));
    const extra = new Set(Array.isArray(config?.additional_special_tokens) ? config.additional_special_tokens.filter((x) => typeof x === 'string') : []);
    this.special = new Set(added.filter((t) => t.special || extra.has(t.content)).map((t) => t.id));
    let size = 0;
    for (const id of this.vocab.values()) size = Math.max(size, id + 1);
    this.vocabSize = Math.max(size, ids.vocabSize ?? 0);

    // BOS/EOS named but missing is a broken pair of files; a missing pad/unk name is common and harmless.
    const byName = (key: string, required = true): number | undefined => {
      const name = configToken(config, key, 'tokenizer_config.json');
      if (name === undefined) return undefined;
      const id = this.vocab.get(name);
      if (id === undefined && required) throw new ModelFormatError('tokenizer_config.json', key, `names ${JSON.stringify(name)}, which ${file} does not have`);
      return id;
    };
    // Without a config, what the post-processor wraps a text in tells BOS and EOS.
    const wrap = hf.encode('', { add_special_tokens: true }).ids;
    this.bosId = ids.bos ?? byName('bos_token') ?? (config === undefined ? wrap[0] : undefined);
    this.eosId = ids.eos ?? byName('eos_token') ?? (config === undefined && wrap.length > 1 ? wrap[wrap.length - 1] : undefined);
    this.padId = ids.pad ?? byName('pad_token', false);
    this.unkId = ids.unk ?? byName('unk_token', false) ?? (hf.model?.unk_token_id as number | undefined);
    this.bosToken = this.bosId === undefined ? undefined : this.idToToken(this.bosId);
    this.eosToken = this.eosId === undefined ? undefined : this.idToToken(this.eosId);
    this.addBos = wrap.length > 0 && wrap[0] === this.bosId;
    this.addEos = wrap.length > 0 && wrap[wrap.length - 1] === this.eosId && (wrap.length > 1 || !this.addBos);
    const stop = new Set<number>();
    if (this.eosId !== undefined) stop.add(this.eosId);
    for (const id of ids.stop ?? []) stop.add(id);
    for (const id of configIds(generationConfig?.eos_token_id)) if (id < this.vocabSize) stop.add(id);
    this.stopIds = [...stop];
    this.chatTemplate = chatTemplateOf(config, file);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    if (typeof text !== 'string') throw new TypeError(`encode() takes a string, not ${typeof text}`);
    const ids = this.guard('encoding', () => this.hf.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids);
    // A piece outside the vocabulary with no unk token to stand for it is dropped, as the Rust tokenizers do.
    return ids.every((id) => id !== undefined) ? ids : ids.filter((id) => id !== undefined);
  }

  /** A tokenizer.json that loads but breaks on some input is still a damaged file: say so, typed. */
  private guard<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if (e instanceof IntabModelError) throw e;
      throw new ModelFormatError(this.file, 'tokenizer.json', `${what} failed inside the tokenizer (${(e as Error)?.message ?? String(e)})`, { cause: e });
    }
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const known: number[] = [];
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0) throw new RangeError(`decode(): ${id} is not a token id (${this.file})`);
      if (this.hf.model!.vocab[id] !== undefined) known.push(id);
    }
    if (known.length === 0) return '';
    const hfOptions = { skip_special_tokens: options.skipSpecialTokens ?? false, clean_up_tokenization_spaces: options.cleanUpSpaces ?? false };
    return this.guard('decoding', () => this.hf.decode(known, hfOptions));
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? this.hf.id_to_token(id) : undefined;
  }

  tokenToId(token: string): number | undefined {
    return this.vocab.get(token);
  }

  isSpecial(id: number): boolean {
    return this.special.has(id);
  }
}

/** chat_template from tokenizer_config.json: a string, or a list of { name, template }. */
function chatTemplateOf(config: Record<string, unknown> | undefined, file: string): ChatTemplateSource | undefined {
  const t = config?.chat_template;
  if (t == null) return undefined;
  if (typeof t === 'string') return t;
  if (Array.isArray(t) && t.every((x) => isObject(x) && typeof x.name === 'string' && typeof x.template === 'string')) {
    return t.map((x) => ({ name: x.name as string, template: x.template as string }));
  }
  throw new ModelFormatError(file === 'tokenizer.json' ? 'tokenizer_config.json' : file, 'chat_template', 'should be a string or a list of { "name", "template" }');
}

/**
 * Builds a Tokenizer from a tokenizer.json object and its config, with ids stated elsewhere (a GGUF) winning.
 * Internal to the tokenizer folder; callers use loadTokenizer or tokenizerFromGguf.
 */
export function createTokenizer(input: LoadTokenizerOptions, ids: SpecialIdOverrides = {}): Tokenizer {
  const file = input.file ?? 'tokenizer.json';
  const json = parseJson(input.tokenizerJson, file);
  const type = checkModel(json, file);
  checkAddedTokens(json, file);
  checkSections(json, file);
  if (input.tokenizerConfig !== undefined && !isObject(input.tokenizerConfig)) {
    throw new ModelFormatError('tokenizer_config.json', 'tokenizer_config.json', 'the JSON is not an object');
  }
  // The library requires every section key to be present (null when unused).
  const full: Record<string, unknown> = { ...json, added_tokens: json.added_tokens ?? [] };
  for (const key of SECTIONS) full[key] = json[key] ?? null;
  let hf: HfTokenizer;
  try {
    hf = new HfTokenizer(full, { ...(input.tokenizerConfig ?? {}), clean_up_tokenization_spaces: false });
    hf.encode('a', { add_special_tokens: true }); // a config that breaks on first use breaks here, typed
  } catch (e) {
    if (e instanceof IntabModelError) throw e;
    const msg = (e as Error)?.message ?? String(e);
    const unknown = /^Unknown (Normalizer|PreTokenizer|PostProcessor|Decoder) type: (.*)$/.exec(msg);
    if (unknown) {
      const section = LIBRARY_KINDS[unknown[1]];
      const field = pathOfType(json[section], unknown[2], section) ?? `${section}.type`;
      throw new UnsupportedModelError(file, field, unknown[2], 'this tokenizer.json uses a component @huggingface/tokenizers does not implement; try a newer intab');
    }
    throw new ModelFormatError(file, 'tokenizer.json', `the tokenizer does not load (${msg})`, { cause: e });
  }
  return new HfBackedTokenizer(hf, json, detectKind(json, type), file, input.tokenizerConfig, input.generationConfig, ids);
}

/**
 * Loads a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json).
 * @example
 * const tok = loadTokenizer({ tokenizerJson: folder.tokenizerJson!, tokenizerConfig: folder.tokenizerConfig });
 * tok.encode('Hello'); // [9707] for Qwen3
 * tok.decode([9707]);  // 'Hello'
 */
export function loadTokenizer(options: LoadTokenizerOptions): Tokenizer {
  return createTokenizer(options);
}
