// A GGUF carries its tokenizer as `tokenizer.ggml.*` arrays, not as a tokenizer.json. This file converts them into
// the tokenizer.json object @huggingface/tokenizers runs, for the kinds llama.cpp models use:
//   'gpt2'  — byte-level BPE with merges; the pre-tokenizer regex is named by `tokenizer.ggml.pre`;
//   'llama' — SentencePiece BPE: pieces + scores + token types, <0xNN> byte fallback, '▁' for spaces. SentencePiece
//             merges the adjacent pair whose joined piece scores highest; the equivalent BPE merge list (every split
//             of every piece, best score first) is what transformers' SentencePieceExtractor writes, rebuilt here;
//   'bert'  — BERT's WordPiece in llama.cpp's phantom-space form (gguf-wordpiece.ts), for encoder (embedding) models.
// tokenizerToGgufMetadata goes the other way (as convert_hf_to_gguf.py does), so tests can round-trip real files.

import { ModelFormatError, UnsupportedModelError } from '../errors.ts';
import { ggufTyped, type GgufWriteValue } from '../formats/gguf-writer.ts';
import type { ChatTemplateSource } from './chat-template.ts';
import { BERT_DEFAULT_IDS, bertTokenizerSections, wordPiecesFromPhantom, wordPieceToGgufMetadata } from './gguf-wordpiece.ts';
import { createTokenizer, MAX_TOKEN_ID, type SpecialIdOverrides, type Tokenizer } from './tokenizer.ts';

/** llama.cpp's token types (`tokenizer.ggml.token_type`). */
export const GGUF_TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

const SPACE = '\u2581'; // SentencePiece's visible space '▁'
const BYTE_PIECE = /^<0x[0-9A-Fa-f]{2}>$/;

// ---- pre-tokenizers by `tokenizer.ggml.pre` ----

// The regexes exactly as the models' own tokenizer.json files spell them.
const QWEN2_REGEX = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const LLAMA3_REGEX = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

interface PrePreset {
  /** `tokenizer.ggml.pre` values (the first is what tokenizerToGgufMetadata writes). */
  readonly names: readonly string[];
  readonly normalizer: Record<string, unknown> | null;
  readonly preTokenizer: Record<string, unknown>;
  /** BPE `ignore_merges`: a pre-token already in the vocabulary is taken whole (Llama 3). */
  readonly ignoreMerges: boolean;
}

const splitThenBytes = (regex: string, trimOffsets: boolean) => ({
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: trimOffsets, use_regex: false },
  ],
});
const GPT2_BYTE_LEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };

const PRE_PRESETS: readonly PrePreset[] = [
  // Qwen2/2.5/3: one digit per token, NFC first (transformers' Qwen2Converter).
  { names: ['qwen2', 'deepseek-r1-qwen'], normalizer: { type: 'NFC' }, preTokenizer: splitThenBytes(QWEN2_REGEX, false), ignoreMerges: false },
  // Llama 3.x: up to three digits per token, whole-word vocabulary hits skip the merges.
  { names: ['llama-bpe', 'llama3', 'llama-v3', 'falcon3'], normalizer: null, preTokenizer: splitThenBytes(LLAMA3_REGEX, true), ignoreMerges: true },
  // SmolLM / StarCoder: single digits, then GPT-2's regex.
  { names: ['smollm', 'starcoder', 'refact'], normalizer: null, preTokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, GPT2_BYTE_LEVEL] }, ignoreMerges: false },
  // GPT-2's own regex; also what a GGUF without `tokenizer.ggml.pre` gets.
  { names: ['gpt-2', 'default', 'phi-2', 'jina-es', 'jina-de', 'roberta-bpe', 'olmo'], normalizer: null, preTokenizer: GPT2_BYTE_LEVEL, ignoreMerges: false },
];

function presetByName(name: string): PrePreset | undefined {
  return PRE_PRESETS.find((p) => p.names.includes(name));
}

/** Which preset a byte-level tokenizer.json matches: by its split regex and digit handling, and its normalizer. */
function presetOfJson(json: Record<string, unknown>): PrePreset | undefined {
  const pre = json.pre_tokenizer as Record<string, unknown> | null;
  const list = pre?.type === 'Sequence' ? (pre.pretokenizers as Record<string, unknown>[]) : pre ? [pre] : [];
  const regex = list.map((p) => (p.type === 'Split' ? (p.pattern as { Regex?: string })?.Regex : undefined)).find((r) => r !== undefined);
  const digits = list.some((p) => p.type === 'Digits' && p.individual_digits === true);
  const gpt2 = list.some((p) => p.type === 'ByteLevel' && p.use_regex !== false);
  const normalizer = JSON.stringify(json.normalizer ?? null);
  return PRE_PRESETS.find((p) => {
    if (JSON.stringify(p.normalizer) !== normalizer) return false;
    const want = (p.preTokenizer.pretokenizers as Record<string, unknown>[] | undefined) ?? [p.preTokenizer];
    const wantRegex = want.map((x) => (x.type === 'Split' ? (x.pattern as { Regex: string }).Regex : undefined)).find((r) => r !== undefined);
    if (wantRegex !== undefined) return regex === wantRegex;
    const wantDigits = want.some((x) => x.type === 'Digits');
    return regex === undefined && gpt2 && digits === wantDigits;
  });
}

// ---- reading the metadata ----

type Metadata = ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>;

function getter(metadata: Metadata): (key: string) => unknown {
  return metadata instanceof Map ? (k) => metadata.get(k) : (k) => (metadata as Record<string, unknown>)[k];
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return `an array of ${v.length}${v.length ? ` (first item ${typeof v[0]})` : ''}`;
  return `${typeof v} ${JSON.stringify(typeof v === 'bigint' ? String(v) : v)?.slice(0, 40)}`;
}

class Reader {
  readonly get: (key: string) => unknown;
  constructor(metadata: Metadata, readonly file: string) {
    this.get = getter(metadata);
  }
  strings(key: string, required: boolean): string[] | undefined {
    const v = this.get(key);
    if (v === undefined) {
      if (required) throw new ModelFormatError(this.file, key, 'is missing');
      return undefined;
    }
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ModelFormatError(this.file, key, `should be an array of strings but is ${describe(v)}`);
    return v as string[];
  }
  numbers(key: string, length: number, integer: boolean): number[] | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && (!integer || Number.isInteger(x)))) {
      throw new ModelFormatError(this.file, key, `should be an array of ${integer ? 'integers' : 'numbers'} but is ${describe(v)}`);
    }
    if (v.length !== length) throw new ModelFormatError(this.file, key, `has ${v.length} items but tokenizer.ggml.tokens has ${length}: one per token`);
    return v as number[];
  }
  id(key: string, vocab: number): number | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw new ModelFormatError(this.file, key, `should be a token id but is ${describe(v)}`);
    // llama.cpp writes -1 / 0xFFFFFFFF for "none".
    if (n < 0 || n === 0xffffffff) return undefined;
    if (n >= vocab) throw new ModelFormatError(this.file, key, `token id ${n} is outside the vocabulary of ${vocab} tokens`);
    return n;
  }
  bool(key: string): boolean | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') throw new ModelFormatError(this.file, key, `should be a boolean but is ${describe(v)}`);
    return v;
  }
  string(key: string): string | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new ModelFormatError(this.file, key, `should be a string but is ${describe(v)}`);
    return v;
  }
}

// ---- GGUF → tokenizer.json ----

/** A converted GGUF tokenizer: the tokenizer.json and tokenizer_config.json objects, and the ids the GGUF states. */
export interface GgufTokenizerJson {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  ids: SpecialIdOverrides;
}

function isNormalType(t: number): boolean {
  return t === GGUF_TOKEN_TYPE.normal || t === 0; // 0 = undefined in old files
}

/**
 * Pieces that SentencePiece merging may form: normal and user-defined ones. llama.cpp looks each adjacent pair up in
 * the whole vocabulary, so a user-defined '▁▁' (Gemma's runs of spaces, where a converter left them as '▁') forms
 * from two spaces, as SentencePiece itself matches user-defined pieces in the normalized text.
 */
function isMergeableType(t: number): boolean {
  return isNormalType(t) || t === GGUF_TOKEN_TYPE.userDefined;
}

/** First id of each token text (GGUFs may repeat a text, e.g. padding pieces). */
function vocabObject(tokens: readonly string[]): Record<string, number> {
  const vocab: Record<string, number> = {};
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (Object.hasOwn(vocab, t)) continue;
    // A plain assignment to '__proto__' would change the prototype, not add the token.
    if (t === '__proto__') Object.defineProperty(vocab, t, { value: i, enumerable: true, writable: true, configurable: true });
    else vocab[t] = i;
  }
  return vocab;
}

function addedTokens(tokens: readonly string[], types: readonly number[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  types.forEach((t, id) => {
    const special = t === GGUF_TOKEN_TYPE.control || t === GGUF_TOKEN_TYPE.unknown;
    if (!special && t !== GGUF_TOKEN_TYPE.userDefined) return;
    const content = tokens[id];
    if (content.length === 0 || seen.has(content)) return;
    seen.add(content);
    out.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special });
  });
  return out;
}

/** BOS/EOS wrapping as the GGUF's add_bos_token / add_eos_token say; null when nothing is added. */
function postProcessor(tokens: readonly string[], bos: number | undefined, eos: number | undefined, addBos: boolean, addEos: boolean): Record<string, unknown> | null {
  const pre = addBos && bos !== undefined ? [tokens[bos]] : [];
  const post = addEos && eos !== undefined ? [tokens[eos]] : [];
  if (pre.length + post.length === 0) return null;
  const special = (t: string, type_id: number) => ({ SpecialToken: { id: t, type_id } });
  const seq = (id: 'A' | 'B', type_id: number) => ({ Sequence: { id, type_id } });
  const specials: Record<string, unknown> = {};
  for (const t of [...pre, ...post]) specials[t] = { id: t, ids: [tokens.indexOf(t)], tokens: [t] };
  return {
    type: 'TemplateProcessing',
    single: [...pre.map((t) => special(t, 0)), seq('A', 0), ...post.map((t) => special(t, 0))],
    pair: [...pre.map((t) => special(t, 0)), seq('A', 0), ...post.map((t) => special(t, 0)), ...pre.map((t) => special(t, 1)), seq('B', 1), ...post.map((t) => special(t, 1))],
    special_tokens: specials,
  };
}

/**
 * The BPE merges equivalent to SentencePiece's score-driven merging: for every normal or user-defined piece, each
 * split into two such pieces, ordered by the joined piece's score (best first), then piece id, then the parts' ids —
 * the order transformers' SentencePieceExtractor writes.
 */
export function mergesFromScores(tokens: readonly string[], scores: readonly number[], types: readonly number[], file = 'model.gguf'): [string, string][] {
  const ids = new Map<string, number>();
  // Every split of every piece is looked up: work grows with the square of a piece's length. Real vocabularies need
  // a few million character steps (Llama 2's 32k pieces: 1.0 million, Qwen3's 151k: 8.6 million); a hostile one of long
  // pieces would need hours.
  let work = 0;
  tokens.forEach((t, i) => {
    if (isMergeableType(types[i]) && !ids.has(t)) {
      ids.set(t, i);
      work += t.length * t.length;
    }
  });
  if (work > MAX_MERGE_WORK) {
    throw new ModelFormatError(file, 'tokenizer.ggml.tokens', `the pieces are too long to derive merges from (${work.toLocaleString('en-US')} character steps, the limit is ${MAX_MERGE_WORK.toLocaleString('en-US')})`);
  }
  const found: { l: string; r: string; score: number; id: number; lid: number; rid: number }[] = [];
  for (const [piece, id] of ids) {
    const chars = Array.from(piece);
    for (let k = 1; k < chars.length; k++) {
      const l = chars.slice(0, k).join('');
      const lid = ids.get(l);
      if (lid === undefined) continue;
      const r = chars.slice(k).join('');
      const rid = ids.get(r);
      if (rid !== undefined) found.push({ l, r, score: scores[id], id, lid, rid });
    }
  }
  found.sort((a, b) => b.score - a.score || a.id - b.id || a.lid - b.lid || a.rid - b.rid);
  return found.map((m) => [m.l, m.r]);
}

/** Character steps mergesFromScores may take (the sum of the squared piece lengths): ~0.4 s at the limit. */
const MAX_MERGE_WORK = 100_000_000;

function chatTemplateFromGguf(r: Reader): ChatTemplateSource | undefined {
  const main = r.string('tokenizer.chat_template');
  const names = r.strings('tokenizer.chat_templates', false) ?? [];
  const named = names
    .map((name) => ({ name, template: r.string(`tokenizer.chat_template.${name}`) }))
    .filter((x): x is { name: string; template: string } => x.template !== undefined);
  if (named.length === 0) return main;
  return [...(main !== undefined ? [{ name: 'default', template: main }] : []), ...named];
}

/**
 * Converts a GGUF's `tokenizer.ggml.*` metadata into a tokenizer.json object (plus a tokenizer_config.json with its
 * chat template and special tokens). Missing keys are a ModelFormatError; a tokenizer kind intab cannot run is an
 * UnsupportedModelError naming `tokenizer.ggml.model` or `tokenizer.ggml.pre`.
 */
export function ggufToTokenizerJson(metadata: Metadata, file: string): GgufTokenizerJson {
  const r = new Reader(metadata, file);
  const model = r.string('tokenizer.ggml.model');
  if (model === undefined) throw new ModelFormatError(file, 'tokenizer.ggml.model', 'is missing: this GGUF has no embedded tokenizer; drive it with token ids or give a tokenizer.json');
  if (model !== 'llama' && model !== 'gpt2' && model !== 'bert') {
    throw new UnsupportedModelError(file, 'tokenizer.ggml.model', model, "intab reads 'llama' (SentencePiece), 'gpt2' (byte-level BPE) and 'bert' (WordPiece) tokenizers; use the model's tokenizer.json instead");
  }
  const tokens = r.strings('tokenizer.ggml.tokens', true)!;
  if (tokens.length === 0 || tokens.length >= MAX_TOKEN_ID) throw new ModelFormatError(file, 'tokenizer.ggml.tokens', `${tokens.length} tokens is not a vocabulary`);
  const n = tokens.length;
  const types = r.numbers('tokenizer.ggml.token_type', n, true) ?? tokens.map(() => GGUF_TOKEN_TYPE.normal);
  if (model === 'bert') return bertFromGguf(r, tokens, types);
  const bos = r.id('tokenizer.ggml.bos_token_id', n);
  const eos = r.id('tokenizer.ggml.eos_token_id', n);
  const unk = r.id('tokenizer.ggml.unknown_token_id', n) ?? (model === 'llama' ? types.indexOf(GGUF_TOKEN_TYPE.unknown) : -1);
  const pad = r.id('tokenizer.ggml.padding_token_id', n);
  const stop = [r.id('tokenizer.ggml.eot_token_id', n), r.id('tokenizer.ggml.eom_token_id', n)].filter((x): x is number => x !== undefined);
  const ids: SpecialIdOverrides = { bos, eos, pad, unk: unk !== undefined && unk >= 0 ? unk : undefined, stop, vocabSize: n };
  const addBos = r.bool('tokenizer.ggml.add_bos_token') ?? model === 'llama';
  const addEos = r.bool('tokenizer.ggml.add_eos_token') ?? false;
  const chatTemplate = chatTemplateFromGguf(r);
  const tokenizerConfig: Record<string, unknown> = {
    ...(chatTemplate !== undefined ? { chat_template: chatTemplate } : {}),
    clean_up_tokenization_spaces: false,
  };
  const common = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(tokens, types),
    post_processor: postProcessor(tokens, bos, eos, addBos, addEos),
  };

  if (model === 'llama') {
    const scores = r.numbers('tokenizer.ggml.scores', n, false);
    if (!scores) throw new ModelFormatError(file, 'tokenizer.ggml.scores', "is missing: a 'llama' (SentencePiece) tokenizer needs a score per token");
    const spacePrefix = r.bool('tokenizer.ggml.add_space_prefix') ?? true;
    const byteFallback = tokens.some((t, i) => BYTE_PIECE.test(t) && (types[i] === GGUF_TOKEN_TYPE.byte || types[i] === GGUF_TOKEN_TYPE.userDefined));
    const replaceSpaces = { type: 'Replace', pattern: { String: ' ' }, content: SPACE };
    const tokenizerJson = {
      ...common,
      // llama.cpp prefixes a space to every text run after a special token, as transformers' legacy Llama does.
      normalizer: spacePrefix ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: SPACE }, replaceSpaces] } : replaceSpaces,
      pre_tokenizer: null,
      decoder: {
        type: 'Sequence',
        decoders: [
          { type: 'Replace', pattern: { String: SPACE }, content: ' ' },
          { type: 'ByteFallback' },
          { type: 'Fuse' },
          ...(spacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
        ],
      },
      model: {
        type: 'BPE', dropout: null, unk_token: ids.unk !== undefined ? tokens[ids.unk] : null, continuing_subword_prefix: null,
        end_of_word_suffix: null, fuse_unk: true, byte_fallback: byteFallback, vocab: vocabObject(tokens), merges: mergesFromScores(tokens, scores, types, file),
      },
    };
    return { tokenizerJson, tokenizerConfig, ids };
  }

  const preName = r.string('tokenizer.ggml.pre') ?? 'default';
  const preset = presetByName(preName);
  if (!preset) {
    throw new UnsupportedModelError(file, 'tokenizer.ggml.pre', preName,
      `intab knows the pre-tokenizers ${PRE_PRESETS.flatMap((p) => p.names).join(', ')}; use the model's tokenizer.json instead`);
  }
  const merges = r.strings('tokenizer.ggml.merges', true)!.map((m, i): [string, string] => {
    const at = m.indexOf(' ', 1); // as llama.cpp splits them
    if (at < 0) throw new ModelFormatError(file, `tokenizer.ggml.merges[${i}]`, `${JSON.stringify(m.slice(0, 40))} is not "left right"`);
    return [m.slice(0, at), m.slice(at + 1)];
  });
  const tokenizerJson = {
    ...common,
    normalizer: preset.normalizer,
    pre_tokenizer: preset.preTokenizer,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false,
      byte_fallback: false, ignore_merges: preset.ignoreMerges, vocab: vocabObject(tokens), merges,
    },
  };
  return { tokenizerJson, tokenizerConfig, ids };
}

/**
 * A 'bert' vocabulary: llama.cpp's ids where keys are absent (bert-base's layout, when the vocabulary reaches them), a
 * typed error when [CLS] or [SEP] resolve to nothing (llama.cpp aborts tokenizing then).
 */
function bertFromGguf(r: Reader, tokens: readonly string[], types: readonly number[]): GgufTokenizerJson {
  const n = tokens.length;
  const orDefault = (key: string, id: number) => r.id(key, n) ?? (r.get(key) === undefined && id < n ? id : undefined);
  const cls = orDefault('tokenizer.ggml.bos_token_id', BERT_DEFAULT_IDS.bos);
  const sep = orDefault('tokenizer.ggml.seperator_token_id', BERT_DEFAULT_IDS.sep);
  for (const [id, key, what, def] of [[cls, 'tokenizer.ggml.bos_token_id', '[CLS]', BERT_DEFAULT_IDS.bos], [sep, 'tokenizer.ggml.seperator_token_id', '[SEP]', BERT_DEFAULT_IDS.sep]] as const) {
    if (id === undefined) {
      const problem = r.get(key) === undefined ? `is missing, and llama.cpp's default ${def} is outside the ${n} tokens` : 'names no token';
      throw new ModelFormatError(r.file, key, `${problem}: a 'bert' tokenizer wraps every text in [CLS] ... [SEP] and needs ${what}'s id here`);
    }
  }
  const unk = orDefault('tokenizer.ggml.unknown_token_id', BERT_DEFAULT_IDS.unk);
  const pad = orDefault('tokenizer.ggml.padding_token_id', BERT_DEFAULT_IDS.pad);
  const lowercase = r.bool('tokenizer.ggml.normalizer.lowercase') ?? true;
  const stripAccents = r.bool('tokenizer.ggml.normalizer.strip_accents') ?? lowercase;
  const pieces = wordPiecesFromPhantom(tokens, types);
  const ids: SpecialIdOverrides = { bos: cls, eos: r.id('tokenizer.ggml.eos_token_id', n) ?? sep, pad, unk, stop: [], vocabSize: n };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(pieces, types),
    ...bertTokenizerSections(pieces, { cls: cls!, sep: sep!, unk, lowercase, stripAccents, doubleSep: r.bool('tokenizer.ggml.add_sep_token') ?? false }, vocabObject(pieces)),
  };
  return { tokenizerJson, tokenizerConfig: { clean_up_tokenization_spaces: false }, ids };
}

/**
 * The tokenizer embedded in a GGUF (`tokenizer.ggml.*`, `tokenizer.chat_template`), as a Tokenizer.
 * @example
 * const gguf = await parseGguf(await pathSource('model.gguf'));
 * const tok = tokenizerFromGguf(gguf.metadata, gguf.source.name);
 * tok.encode('Hello'); // BOS first when the GGUF says add_bos_token
 */
export function tokenizerFromGguf(metadata: Metadata, file: string): Tokenizer {
  const { tokenizerJson, tokenizerConfig, ids } = ggufToTokenizerJson(metadata, file);
  return createTokenizer({ tokenizerJson, tokenizerConfig, file }, ids);
}

// ---- tokenizer.json → GGUF (what convert_hf_to_gguf.py writes) ----

function isTokenizer(v: Tokenizer | Record<string, unknown>): v is Tokenizer {
  return typeof (v as Tokenizer).encode === 'function' && typeof (v as Tokenizer).json === 'object';
}

/**
 * GGUF `tokenizer.*` metadata for a tokenizer.json (+ tokenizer_config.json), or for a Tokenizer already loaded from
 * them, ready for writeGguf: byte-level BPE
 * becomes 'gpt2' with its merges and pre-tokenizer name; SentencePiece-style BPE becomes 'llama' with scores that
 * reproduce its merge order; WordPiece becomes 'bert' in llama.cpp's phantom-space form. Other kinds are an
 * UnsupportedModelError.
 * @example
 * const bytes = writeGguf({ metadata: { 'general.architecture': 'qwen3', ...tokenizerToGgufMetadata(json, config) } });
 */
export function tokenizerToGgufMetadata(tokenizer: Tokenizer | Record<string, unknown>, tokenizerConfig?: Record<string, unknown>, file = 'tokenizer.json'): Record<string, GgufWriteValue> {
  const tok = isTokenizer(tokenizer) ? tokenizer : createTokenizer({ tokenizerJson: tokenizer, tokenizerConfig, file });
  if (tok.kind === 'wordpiece') return wordPieceToGgufMetadata(tok);
  const json = tok.json as Record<string, unknown>;
  const model = json.model as Record<string, unknown>;
  const kind = tok.kind === 'byte-level-bpe' ? 'gpt2' : tok.kind === 'sentencepiece-bpe' ? 'llama' : undefined;
  if (kind === undefined) throw new UnsupportedModelError(tok.file, 'model', tok.kind, "only byte-level BPE ('gpt2'), SentencePiece BPE ('llama') and WordPiece ('bert') tokenizers go into GGUF metadata here");
  const n = tok.vocabSize;
  const tokens: string[] = [];
  const types: number[] = [];
  const added = new Map(tok.addedTokens.map((t) => [t.id, t]));
  for (let id = 0; id < n; id++) {
    const t = tok.idToToken(id);
    const a = added.get(id);
    const type = t === undefined ? GGUF_TOKEN_TYPE.unused
      : kind === 'llama' && id === tok.unkId ? GGUF_TOKEN_TYPE.unknown
      : a ? (a.special ? GGUF_TOKEN_TYPE.control : GGUF_TOKEN_TYPE.userDefined)
      : kind === 'llama' && BYTE_PIECE.test(t) ? GGUF_TOKEN_TYPE.byte
      : GGUF_TOKEN_TYPE.normal;
    types.push(type);
    // convert_hf_to_gguf.py writes a SentencePiece vocabulary's user-defined pieces with real spaces (Gemma's '▁▁' as
    // '  '): llama.cpp matches user-defined tokens in the raw text, before spaces become '▁'.
    tokens.push(t === undefined ? `[PAD${id}]` : kind === 'llama' && type === GGUF_TOKEN_TYPE.userDefined ? t.replaceAll(SPACE, ' ') : t);
  }
  const rawMerges = model.merges as (string | [string, string])[];
  const merges = rawMerges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));
  const out: Record<string, GgufWriteValue> = {
    'tokenizer.ggml.model': kind,
    'tokenizer.ggml.tokens': tokens,
    'tokenizer.ggml.token_type': ggufTyped('array', types.map((t) => ggufTyped('i32', t)), 'i32'),
  };
  if (kind === 'gpt2') {
    const preset = presetOfJson(json);
    if (!preset) throw new UnsupportedModelError(tok.file, 'pre_tokenizer', JSON.stringify(json.pre_tokenizer).slice(0, 80), 'no known tokenizer.ggml.pre matches this pre-tokenizer');
    out['tokenizer.ggml.pre'] = preset.names[0];
    out['tokenizer.ggml.merges'] = merges;
  } else {
    // A piece's score is minus the rank of the first merge that makes it, so rebuilding merges from scores
    // gives back the same order; pieces no merge makes (single characters) rank after all of them.
    const firstRank = new Map<string, number>();
    merges.forEach((m, i) => {
      const piece = m.replace(' ', '');
      if (!firstRank.has(piece)) firstRank.set(piece, i);
    });
    const scores = tokens.map((t, id) => (types[id] !== GGUF_TOKEN_TYPE.normal ? 0 : -(firstRank.get(t) ?? merges.length + id)));
    out['tokenizer.ggml.scores'] = ggufTyped('array', scores.map((s) => ggufTyped('f32', s)), 'f32');
    const text = JSON.stringify([json.normalizer, json.pre_tokenizer]);
    out['tokenizer.ggml.add_space_prefix'] = text.includes(`"prepend":"${SPACE}"`) || (text.includes('"Metaspace"') && !text.includes('"prepend_scheme":"never"') && !text.includes('"add_prefix_space":false'));
  }
  const idKeys: [string, number | undefined][] = [
    ['tokenizer.ggml.bos_token_id', tok.bosId], ['tokenizer.ggml.eos_token_id', tok.eosId],
    ['tokenizer.ggml.unknown_token_id', tok.unkId], ['tokenizer.ggml.padding_token_id', tok.padId],
  ];
  for (const [key, id] of idKeys) if (id !== undefined) out[key] = ggufTyped('u32', id);
  out['tokenizer.ggml.add_bos_token'] = tok.addBos;
  out['tokenizer.ggml.add_eos_token'] = tok.addEos;
  const chat = tok.chatTemplate;
  if (typeof chat === 'string') out['tokenizer.chat_template'] = chat;
  else if (chat) {
    const names: string[] = [];
    for (const { name, template } of chat) {
      if (name === 'default') out['tokenizer.chat_template'] = template;
      else {
        out[`tokenizer.chat_template.${name}`] = template;
        names.push(name);
      }
    }
    if (names.length) out['tokenizer.chat_templates'] = names;
  }
  return out;
}
