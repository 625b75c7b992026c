// EncoderConfig: the one description of an embedding model's encoder that the CPU reference (reference/bert.ts), the
// WebGPU encoder and the loaders read. BERT's post-norm layer in two families: 'bert' (all-MiniLM, bge: absolute
// position and token-type embeddings, biases on every projection, erf GELU) and 'nomic-bert' (nomic-embed-text: RoPE,
// SwiGLU, no projection biases). Pooling and L2 normalisation are part of the model: GGUF's `pooling_type`, a
// sentence-transformers folder's modules.json and its Pooling and Normalize modules. A reranker (cross-encoder: GGUF
// pooling_type 4 'rank', with llama.cpp's cls.* tensors) is the same encoder with a classification head on its [CLS]
// row (`classifier`). encoderConfigFromGguf and
// encoderConfigFromHf throw typed errors naming the file and the key at fault; a model they cannot run is an
// UnsupportedModelError that says what to pick instead.

import { ggufModelNames, trainedForMatryoshka } from './matryoshka.ts';
import { ModelFormatError, UnsupportedModelError } from './errors.ts';
import type { EncoderFacts, Pooling } from './encoder-runner.ts';

export type { Pooling };

/** The encoder families intab runs, as GGUF's general.architecture names them. */
export type EncoderArch = 'bert' | 'nomic-bert';

/** The feed-forward: 'gelu' is down(gelu_erf(up·x + b) + b) (BERT); 'swiglu' is down(silu(gate·x) ⊙ up·x) (nomic-bert). */
export type EncoderActivation = 'gelu' | 'swiglu';

export interface EncoderConfig {
  arch: EncoderArch;
  /** C: hidden size. */
  hidden: number;
  /** L: layers. */
  layers: number;
  /** H: attention heads (keys and values have as many). */
  heads: number;
  /** D: head dimension, C / H. */
  headDim: number;
  /** F: feed-forward inner size. */
  ffn: number;
  /** V: rows of token_embd. */
  vocab: number;
  /** LayerNorm epsilon (every norm has a weight and a bias). */
  eps: number;
  /** Most tokens of one sequence: BERT's position embeddings, nomic-bert's trained context. */
  maxPositions: number;
  /**
   * Rows of the token-type (segment) embedding; 0 when the model has none. A token is type 0 unless encode() is given
   * where a pair's second segment starts (type 1, for a model with ≥ 2 rows).
   */
  typeVocab: number;
  /** Learned absolute position embeddings (position_embd, (maxPositions, C)) added to the token embedding: BERT. */
  absolutePositions: boolean;
  /** RoPE on q and k (neox pairs (i, i + rot/2), as llama.cpp and nomic's rotate-half), or null: nomic-bert. */
  rope: { theta: number; rotaryDim: number } | null;
  activation: EncoderActivation;
  /** q/k/v, attention output and feed-forward projections carry biases (BERT); nomic-bert's carry none. */
  projectionBias: boolean;
  /** How a sequence's last hidden states become its vector (over every token, [CLS] and [SEP] included). */
  pooling: Pooling;
  /** The pooled vector is L2-normalised. */
  normalize: boolean;
  /**
   * A reranker's classification head on the [CLS] row (pooling 'cls', normalize false), as llama.cpp's rank pooling
   * runs it: h = tanh(cls · x + cls_b) when `dense` (RoBERTa's classifier.dense, BERT's pooler), then
   * logits = cls.output · h + cls.output_b ((outputs, C)) when `outputs` > 0. null for an embedding model.
   */
  classifier?: EncoderClassifier | null;
  /** Trained with Matryoshka dimensions (its name is one of matryoshka.ts's): `dimensions` may cut its vectors. */
  matryoshka?: boolean;
}

/** A cross-encoder's head (llama.cpp's cls.weight/bias (C, C) and cls.output.weight/bias (outputs, C)). */
export interface EncoderClassifier {
  /** cls.weight and cls.bias: a (C, C) dense layer and tanh before the output projection. */
  dense: boolean;
  /** Rows of cls.output (the logits per sequence); 0 when the file has no output projection (the dense layer's C values are the output). */
  outputs: number;
  /** The outputs' names (`<arch>.classifier.output_labels`, HF id2label), as many as outputs; ['LABEL_0'] style when unnamed. */
  labels: readonly string[];
}

/**
 * What the engine needs to know of an encoder (EncoderRunner.facts), from its config.
 * @example
 * const facts = encoderFacts(encoderConfigFromGguf(gguf.metadata, 'model.gguf', gguf.tensors));
 */
export function encoderFacts(c: EncoderConfig): EncoderFacts {
  // Matryoshka training leaves no mark in a config: the model's name says it (matryoshka.ts).
  const facts: EncoderFacts = { arch: c.arch, layers: c.layers, hidden: c.hidden, vocab: c.vocab, contextLength: c.maxPositions, dimensions: c.hidden, pooling: c.pooling, normalized: c.normalize, matryoshka: (c.matryoshka ?? false) && !c.classifier };
  if (c.classifier) {
    const outputs = classifierOutputs(c);
    return { ...facts, dimensions: outputs, normalized: false, classifier: { outputs, labels: c.classifier.labels } };
  }
  return facts;
}

/** Values a reranker's head returns per sequence: its output projection's rows, or C without one. */
export function classifierOutputs(c: EncoderConfig): number {
  return c.classifier ? (c.classifier.outputs > 0 ? c.classifier.outputs : c.hidden) : 0;
}

const ENCODER_ADVICE = 'intab embeds with BERT encoders (bert: all-MiniLM, bge; nomic-bert: nomic-embed-text v1/v1.5): pick an embedding model of one of these families';
/** Encoder families llama.cpp runs and intab does not (yet): named so the refusal says it is an embedding model. */
const OTHER_GGUF_ENCODERS = new Set(['nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 'neo-bert', 'eurobert', 'gemma-embedding', 't5encoder']);
/** GGUF general.architecture values that are encoders (the decoder config refuses them with this in mind). */
export const GGUF_ENCODER_ARCHS: ReadonlySet<string> = new Set(['bert', 'nomic-bert', ...OTHER_GGUF_ENCODERS]);
/** Hugging Face model types that are encoders. */
export const HF_ENCODER_TYPES: ReadonlySet<string> = new Set(['bert', 'nomic_bert', 'roberta', 'xlm-roberta', 'distilbert', 'modernbert', 'jina_bert', 'new', 'mpnet', 'electra', 'deberta-v2']);

type Json = Record<string, unknown>;

function num(obj: Json, key: string, file: string, opts: { int?: boolean; min?: number; def?: number } = {}): number {
  let v = obj[key];
  if (v === undefined || v === null) {
    if (opts.def !== undefined) return opts.def;
    throw new ModelFormatError(file, key, 'is missing');
  }
  if (typeof v === 'bigint') v = Number(v);
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ModelFormatError(file, key, `should be a number but is ${JSON.stringify(String(v))}`);
  if (opts.int && !Number.isInteger(v)) throw new ModelFormatError(file, key, `should be an integer but is ${v}`);
  if (opts.min !== undefined && v < opts.min) throw new ModelFormatError(file, key, `should be at least ${opts.min} but is ${v}`);
  // GGUF keeps epsilons and bases as f32: the shortest decimal that is the same f32 (1e-12, not 9.9999999600e-13).
  if (!Number.isInteger(v) && Math.fround(v) === v) {
    for (let p = 1; p <= 9; p++) if (Math.fround(Number(v.toPrecision(p))) === v) return Number(v.toPrecision(p));
  }
  return v;
}

function bool(obj: Json, key: string, file: string, def: boolean): boolean {
  const v = obj[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'boolean') throw new ModelFormatError(file, key, `should be true or false but is ${JSON.stringify(v)}`);
  return v;
}

function checkHeads(hidden: number, heads: number, file: string, key: string): number {
  if (hidden % heads !== 0) throw new ModelFormatError(file, key, `should divide the hidden size ${hidden} but is ${heads}`);
  return hidden / heads;
}

// ---- GGUF ----

/** llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank ([CLS] row then the classification head). */
const GGUF_POOLING: Readonly<Record<number, Pooling>> = { 1: 'mean', 2: 'cls', 3: 'last', 4: 'cls' };

/**
 * Builds an EncoderConfig from GGUF metadata (keys as llama.cpp reads them for `bert` and `nomic-bert`). `tensors`
 * (names and row-major shapes) say what the metadata does not: whether projections have biases and the model a
 * token-type embedding. A GGUF has no key for normalisation: its vectors are L2-normalised, as llama.cpp's server and
 * `llama-embedding` return them by default (the library itself returns the pooled vector as it is).
 * @example
 * const config = encoderConfigFromGguf(Object.fromEntries(gguf.metadata), 'model.gguf', gguf.tensors);
 */
export function encoderConfigFromGguf(metadata: Record<string, unknown>, file: string, tensors?: readonly { readonly name: string; readonly shape: readonly number[] }[]): EncoderConfig {
  const archName = metadata['general.architecture'];
  if (typeof archName !== 'string') throw new ModelFormatError(file, 'general.architecture', archName === undefined ? 'is missing' : 'should be a string');
  if (archName !== 'bert' && archName !== 'nomic-bert') {
    throw new UnsupportedModelError(file, 'general.architecture', archName, OTHER_GGUF_ENCODERS.has(archName) ? ENCODER_ADVICE : `this is not an encoder (embedding) model; ${ENCODER_ADVICE}`);
  }
  const arch: EncoderArch = archName;
  const p = `${arch}.`;
  const m = metadata as Json;
  const names = tensors ? new Set(tensors.map((t) => t.name)) : undefined;

  const hidden = num(m, `${p}embedding_length`, file, { int: true, min: 1 });
  const heads = num(m, `${p}attention.head_count`, file, { int: true, min: 1 });
  const kv = num(m, `${p}attention.head_count_kv`, file, { int: true, min: 1, def: heads });
  if (kv !== heads) throw new UnsupportedModelError(file, `${p}attention.head_count_kv`, String(kv), `a BERT encoder has as many key/value heads as query heads (${heads})`);
  const headDim = checkHeads(hidden, heads, file, `${p}attention.head_count`);
  if (bool(m, `${p}attention.causal`, file, true)) {
    // llama.cpp runs a file without the key causally (its default); every converter writes false for these families.
    throw new UnsupportedModelError(file, `${p}attention.causal`, String(m[`${p}attention.causal`] ?? '(missing: causal)'), 'a BERT encoder attends both ways: convert the model again with a current llama.cpp, which writes attention.causal = false');
  }
  const experts = num(m, `${p}expert_count`, file, { int: true, min: 0, def: 0 });
  if (experts > 0) throw new UnsupportedModelError(file, `${p}expert_count`, String(experts), 'intab does not run mixture-of-experts encoders (nomic-embed-text-v2-moe): pick a dense model such as nomic-embed-text-v1.5');

  const rawPooling = m[`${p}pooling_type`];
  let pooling: Pooling = 'mean'; // sentence-transformers' default where a model names no pooling
  let rank = false;
  if (rawPooling !== undefined) {
    const t = num(m, `${p}pooling_type`, file, { int: true });
    if (t === 0) throw new UnsupportedModelError(file, `${p}pooling_type`, '0 (none)', 'intab returns one vector per input: give the file a pooling type (1 mean, 2 cls, 3 last, 4 rank) as the model card says');
    const named = GGUF_POOLING[t];
    if (!named) throw new ModelFormatError(file, `${p}pooling_type`, `should be 1 (mean), 2 (cls), 3 (last) or 4 (rank) but is ${t}`);
    pooling = named;
    rank = t === 4;
  }
  if (rank && arch !== 'bert') throw new UnsupportedModelError(file, `${p}pooling_type`, '4 (rank)', 'intab reranks with BERT-family cross-encoders (architecture bert: bge-reranker, ms-marco-MiniLM)');

  const typeCount = num(m, 'tokenizer.ggml.token_type_count', file, { int: true, min: 0, def: 0 });
  if (typeCount === 0) throw new ModelFormatError(file, 'tokenizer.ggml.token_type_count', 'is missing or 0 (llama.cpp refuses such a BERT file too): convert the model again with a current llama.cpp');
  const typeVocab = names && !names.has('token_types.weight') ? 0 : typeCount;

  let vocab: number;
  const tokens = m['tokenizer.ggml.tokens'];
  if (Array.isArray(tokens)) vocab = tokens.length;
  else {
    const embd = tensors?.find((t) => t.name === 'token_embd.weight');
    if (!embd) throw new ModelFormatError(file, 'token_embd.weight', 'is needed for the vocabulary size (the file has no tokenizer.ggml.tokens): pass the tensor list');
    vocab = embd.shape[0];
  }

  let rope: EncoderConfig['rope'] = null;
  if (arch === 'nomic-bert') {
    const scaling = m[`${p}rope.scaling.type`];
    if (scaling !== undefined && scaling !== 'none') throw new UnsupportedModelError(file, `${p}rope.scaling.type`, String(scaling), 'intab runs nomic-bert with plain RoPE over its trained context');
    const rotaryDim = num(m, `${p}rope.dimension_count`, file, { int: true, def: headDim });
    if (rotaryDim < 2 || rotaryDim % 2 !== 0 || rotaryDim > headDim) throw new ModelFormatError(file, `${p}rope.dimension_count`, `should be even, between 2 and the head dimension ${headDim}, but is ${rotaryDim}`);
    rope = { theta: num(m, `${p}rope.freq_base`, file, { min: Number.MIN_VALUE, def: 10000 }), rotaryDim };
  }
  if (names) {
    // What llama.cpp's bert graph can add and intab's encoder does not run.
    for (const [name, what] of [['blk.0.attn_q_norm.weight', 'q/k LayerNorms'], ['blk.0.attn_norm_2.weight', 'a second attention norm'], ['blk.0.ffn_gate.weight', 'a gated feed-forward'], ['cls.output.weight', 'a classification head']] as const) {
      if (arch === 'nomic-bert' && name === 'blk.0.ffn_gate.weight') continue;
      if (rank && name === 'cls.output.weight') continue;
      if (names.has(name)) throw new UnsupportedModelError(file, name, 'present', `this ${arch} file has ${what}, which intab's encoder does not run: ${ENCODER_ADVICE}`);
    }
    if (names.has('cls.norm.weight')) throw new UnsupportedModelError(file, 'cls.norm.weight', 'present', "intab's reranker head is BERT's and RoBERTa's (dense, tanh, output projection), without a head norm");
  }
  const classifier = rank ? ggufClassifier(m, p, file, tensors) : null;
  return {
    arch,
    hidden,
    layers: num(m, `${p}block_count`, file, { int: true, min: 1 }),
    heads,
    headDim,
    ffn: num(m, `${p}feed_forward_length`, file, { int: true, min: 1 }),
    vocab,
    eps: num(m, `${p}attention.layer_norm_epsilon`, file, { min: 0 }),
    maxPositions: num(m, `${p}context_length`, file, { int: true, min: 1 }),
    typeVocab,
    absolutePositions: arch === 'bert',
    rope,
    activation: arch === 'bert' ? 'gelu' : 'swiglu',
    projectionBias: names ? names.has('blk.0.attn_q.bias') || names.has('blk.0.attn_qkv.bias') : arch === 'bert',
    pooling,
    normalize: !rank,
    ...(classifier ? { classifier } : {}),
    ...(trainedForMatryoshka(ggufModelNames(metadata)) ? { matryoshka: true } : {}),
  };
}

/**
 * A rank GGUF's head, as llama.cpp loads it: cls.weight (C, C) with cls.bias, then cls.output.weight (outputs, C) with
 * cls.output.bias, each optional but not both absent; the outputs' count is `<arch>.classifier.output_labels`' length
 * (llama.cpp's n_cls_out, 1 without the key).
 */
function ggufClassifier(m: Json, p: string, file: string, tensors?: readonly { readonly name: string; readonly shape: readonly number[] }[]): EncoderClassifier {
  const key = `${p}classifier.output_labels`;
  const raw = m[key];
  let labels: string[] = ['LABEL_0'];
  if (raw !== undefined) {
    if (!Array.isArray(raw) || raw.length === 0 || raw.some((l) => typeof l !== 'string')) throw new ModelFormatError(file, key, 'should be a non-empty list of label names');
    labels = raw as string[];
  }
  if (!tensors) return { dense: true, outputs: labels.length, labels };
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const dense = byName.has('cls.weight');
  const out = byName.get('cls.output.weight');
  if (!dense && !out) throw new ModelFormatError(file, 'cls.output.weight', 'is missing (and so is cls.weight): a rank model needs a classification head; convert the reranker again with a current llama.cpp');
  if (dense && !byName.has('cls.bias')) throw new ModelFormatError(file, 'cls.bias', 'is missing: llama.cpp adds it after cls.weight');
  if (out && !byName.has('cls.output.bias')) throw new ModelFormatError(file, 'cls.output.bias', 'is missing: llama.cpp adds it after cls.output.weight');
  if (out && out.shape[0] !== labels.length) throw new ModelFormatError(file, key, `names ${labels.length} outputs but cls.output.weight has ${out.shape[0]} rows`);
  return { dense, outputs: out ? labels.length : 0, labels: out ? labels : [] };
}

// ---- Hugging Face config.json and sentence-transformers ----

/** A sentence-transformers folder's modules.json and its pooling module's config.json, parsed, with their names. */
export interface SentenceTransformersFiles {
  /** modules.json: [{ idx, name, path, type }, ...]; absent for a plain transformers folder. */
  modules?: unknown;
  /** The Pooling module's config.json (e.g. 1_Pooling/config.json). */
  pooling?: unknown;
  /** The pooling config's path, for messages ['1_Pooling/config.json']. */
  poolingFile?: string;
}

const ST = 'sentence_transformers.models.';

/** The module list of modules.json (checked: a list of { type, path }), or undefined without one. */
export function sentenceTransformersModules(modules: unknown, file = 'modules.json'): { type: string; path: string }[] | undefined {
  if (modules === undefined) return undefined;
  if (!Array.isArray(modules)) throw new ModelFormatError(file, '(root)', 'should be a list of modules');
  return modules.map((x, i) => {
    if (typeof x !== 'object' || x === null || typeof (x as Json).type !== 'string' || typeof ((x as Json).path ?? '') !== 'string') {
      throw new ModelFormatError(file, `[${i}]`, 'should be { "idx", "name", "path", "type" }');
    }
    return { type: (x as Json).type as string, path: ((x as Json).path as string | undefined) ?? '' };
  });
}

/**
 * Pooling and normalisation of a sentence-transformers model: its Pooling module's mode (mean, cls or lasttoken — one of
 * them; max, weighted and sqrt-length means are refused) and whether a Normalize module follows; a Dense module (a
 * projection intab does not run yet) is refused. Without modules.json: mean pooling, not normalised (what
 * sentence-transformers does with a plain transformers checkpoint).
 * @example
 * sentenceTransformersPooling({ modules, pooling: { pooling_mode_mean_tokens: true } }); // { pooling: 'mean', normalize: true } with a Normalize module
 */
export function sentenceTransformersPooling(st: SentenceTransformersFiles = {}): { pooling: Pooling; normalize: boolean } {
  const modules = sentenceTransformersModules(st.modules);
  if (!modules) return { pooling: 'mean', normalize: false };
  let normalize = false;
  let pooling: Pooling | undefined;
  modules.forEach(({ type }, i) => {
    const short = type.startsWith(ST) ? type.slice(ST.length) : type;
    if (short === 'Transformer') return;
    if (short === 'Normalize') normalize = true;
    else if (short === 'Pooling') pooling = poolingMode(st.pooling, st.poolingFile ?? '1_Pooling/config.json');
    else throw new UnsupportedModelError('modules.json', `[${i}].type`, type, short === 'Dense' ? 'intab does not run a dense projection after pooling yet: pick a model whose modules are Transformer, Pooling and Normalize' : 'intab runs sentence-transformers models made of Transformer, Pooling and Normalize modules');
  });
  if (!pooling) throw new ModelFormatError('modules.json', '(root)', 'lists no Pooling module: an embedding model needs one to turn token states into one vector');
  return { pooling, normalize };
}

function poolingMode(config: unknown, file: string): Pooling {
  if (config === undefined) throw new ModelFormatError(file, '(file)', 'is missing: modules.json names a Pooling module, whose config.json says how to pool');
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new ModelFormatError(file, '(root)', 'should be a JSON object');
  const j = config as Json;
  if (j.include_prompt === false) throw new UnsupportedModelError(file, 'include_prompt', 'false', 'intab pools over every token of the input, instruction prefix included');
  // Newer sentence-transformers also write one `pooling_mode` string.
  const named = typeof j.pooling_mode === 'string' ? j.pooling_mode : undefined;
  const flags: [string, Pooling | undefined][] = [
    ['pooling_mode_mean_tokens', 'mean'], ['pooling_mode_cls_token', 'cls'], ['pooling_mode_lasttoken', 'last'],
    ['pooling_mode_max_tokens', undefined], ['pooling_mode_mean_sqrt_len_tokens', undefined], ['pooling_mode_weightedmean_tokens', undefined],
  ];
  const on = flags.filter(([k]) => j[k] === true);
  if (on.length === 0 && named) {
    const byName: Record<string, Pooling> = { mean: 'mean', cls: 'cls', lasttoken: 'last' };
    if (byName[named]) return byName[named];
    throw new UnsupportedModelError(file, 'pooling_mode', named, 'intab pools by mean, cls or lasttoken');
  }
  if (on.length !== 1) throw new UnsupportedModelError(file, 'pooling_mode_*', on.map(([k]) => k).join(' + ') || '(none)', 'intab pools by exactly one of mean, cls or lasttoken (sentence-transformers concatenates several)');
  const [key, mode] = on[0];
  if (!mode) throw new UnsupportedModelError(file, key, 'true', 'intab pools by mean, cls or lasttoken');
  return mode;
}

const HF_CLASSES: Record<string, EncoderArch> = { BertModel: 'bert', BertForMaskedLM: 'bert', BertForPreTraining: 'bert', NomicBertModel: 'nomic-bert', NomicBertForPreTraining: 'nomic-bert' };

/**
 * Builds an EncoderConfig from a Hugging Face config.json (model_type 'bert' or 'nomic_bert') and, for pooling and
 * normalisation, the folder's sentence-transformers files (sentenceTransformersPooling).
 * @example
 * const config = encoderConfigFromHf(JSON.parse(configText), 'config.json', { modules, pooling, poolingFile: '1_Pooling/config.json' });
 */
export function encoderConfigFromHf(configJson: unknown, file: string, st: SentenceTransformersFiles = {}): EncoderConfig {
  if (typeof configJson !== 'object' || configJson === null || Array.isArray(configJson)) throw new ModelFormatError(file, '(root)', 'should be a JSON object');
  const j = configJson as Json;
  const cls = Array.isArray(j.architectures) && typeof j.architectures[0] === 'string' ? j.architectures[0] : undefined;
  let arch: EncoderArch;
  const seqCls = cls !== undefined && /ForSequenceClassification$/.test(cls);
  const roberta = j.model_type === 'roberta' || j.model_type === 'xlm-roberta';
  if (j.model_type === 'bert' || (roberta && seqCls)) arch = 'bert';
  else if (j.model_type === 'nomic_bert') arch = 'nomic-bert';
  else if (j.model_type === undefined && cls && HF_CLASSES[cls]) arch = HF_CLASSES[cls];
  else if (typeof j.model_type === 'string') {
    throw new UnsupportedModelError(file, 'model_type', j.model_type, HF_ENCODER_TYPES.has(j.model_type) ? ENCODER_ADVICE : `this is not an encoder (embedding) model; ${ENCODER_ADVICE}`);
  } else throw new ModelFormatError(file, 'model_type', 'is missing (and no architectures list names the model class)');
  if (cls && (/For(TokenClassification|QuestionAnswering|CausalLM)$/.test(cls) || (seqCls && arch !== 'bert'))) {
    throw new UnsupportedModelError(file, 'architectures[0]', cls, 'intab runs embedding models and BERT / RoBERTa / XLM-R sequence classifiers (rerankers such as ms-marco-MiniLM, bge-reranker); this head is not run');
  }
  if (seqCls) {
    // A cross-encoder (sentence-transformers' CrossEncoder): [CLS] row, the head, raw logits.
    return { ...hfBert(j, file, 'cls', false, roberta), classifier: hfClassifier(j, file) };
  }
  const { pooling, normalize } = sentenceTransformersPooling(st);
  const config = arch === 'bert' ? hfBert(j, file, pooling, normalize) : hfNomicBert(j, file, pooling, normalize);
  // The folder's own name for the model (transformers writes _name_or_path when it saves one).
  return trainedForMatryoshka([j._name_or_path]) ? { ...config, matryoshka: true } : config;
}

/**
 * The head of a BertForSequenceClassification (the pooler's dense + tanh, then classifier) or a
 * (XLM-)RobertaForSequenceClassification (classifier.dense + tanh, then classifier.out_proj): both a dense layer and an
 * output projection to as many logits as id2label names (num_labels, transformers' default 2, without it).
 */
function hfClassifier(j: Json, file: string): EncoderClassifier {
  let labels: string[];
  if (j.id2label !== undefined) {
    if (typeof j.id2label !== 'object' || j.id2label === null || Array.isArray(j.id2label)) throw new ModelFormatError(file, 'id2label', 'should be an object of label names by index');
    const byIndex = j.id2label as Json;
    labels = Object.keys(byIndex).map((_, i) => {
      const name = byIndex[String(i)];
      if (typeof name !== 'string') throw new ModelFormatError(file, `id2label.${i}`, 'is missing: labels are numbered 0..n-1');
      return name;
    });
  } else labels = Array.from({ length: num(j, 'num_labels', file, { int: true, min: 1, def: 2 }) }, (_, i) => `LABEL_${i}`);
  if (labels.length === 0) throw new ModelFormatError(file, 'id2label', 'names no label: a classifier has at least one output');
  return { dense: true, outputs: labels.length, labels };
}

/**
 * BERT's config.json, or RoBERTa / XLM-R's (`roberta`): the same layer, with positions counted from pad_token_id + 1 (the
 * loader drops those first rows of the table, as llama.cpp's converter does).
 */
function hfBert(j: Json, file: string, pooling: Pooling, normalize: boolean, roberta = false): EncoderConfig {
  const act = j.hidden_act ?? 'gelu';
  if (act !== 'gelu') throw new UnsupportedModelError(file, 'hidden_act', String(act), "intab's BERT feed-forward is the exact (erf) GELU, hidden_act 'gelu'");
  const posType = j.position_embedding_type ?? 'absolute';
  if (posType !== 'absolute') throw new UnsupportedModelError(file, 'position_embedding_type', String(posType), 'intab runs BERT with absolute position embeddings');
  if (bool(j, 'is_decoder', file, false)) throw new UnsupportedModelError(file, 'is_decoder', 'true', 'a BERT embedding model attends both ways');
  const hidden = num(j, 'hidden_size', file, { int: true, min: 1 });
  const heads = num(j, 'num_attention_heads', file, { int: true, min: 1 });
  return {
    arch: 'bert',
    hidden,
    layers: num(j, 'num_hidden_layers', file, { int: true, min: 1 }),
    heads,
    headDim: checkHeads(hidden, heads, file, 'num_attention_heads'),
    ffn: num(j, 'intermediate_size', file, { int: true, min: 1 }),
    vocab: num(j, 'vocab_size', file, { int: true, min: 1 }),
    eps: num(j, 'layer_norm_eps', file, { min: 0, def: 1e-12 }),
    maxPositions: num(j, 'max_position_embeddings', file, { int: true, min: 1 }) - (roberta ? robertaPositionOffset(j, file) : 0),
    typeVocab: num(j, 'type_vocab_size', file, { int: true, min: 0, def: 2 }),
    absolutePositions: true,
    rope: null,
    activation: 'gelu',
    projectionBias: true,
    pooling,
    normalize,
  };
}

/** RoBERTa's first position row: pad_token_id + 1 (its position ids count from there; the rows before are never read). */
export function robertaPositionOffset(j: Record<string, unknown>, file = 'config.json'): number {
  return num(j, 'pad_token_id', file, { int: true, min: 0, def: 1 }) + 1;
}

/** nomic-bert's config (GPT-2-style keys), checked as llama.cpp's converter checks it. */
function hfNomicBert(j: Json, file: string, pooling: Pooling, normalize: boolean): EncoderConfig {
  const refuse = (key: string, ok: (v: unknown) => boolean, advice: string) => {
    if (!ok(j[key])) throw new UnsupportedModelError(file, key, JSON.stringify(j[key] ?? null), advice);
  };
  refuse('activation_function', (v) => v === undefined || v === 'swiglu', "intab runs nomic-bert's SwiGLU feed-forward (nomic-embed-text v1/v1.5)");
  refuse('moe_every_n_layers', (v) => v == null || v === 0, 'intab does not run mixture-of-experts encoders (nomic-embed-text-v2-moe): pick nomic-embed-text-v1.5');
  for (const key of ['qkv_proj_bias', 'mlp_fc1_bias', 'mlp_fc2_bias']) refuse(key, (v) => v == null || v === false, 'intab runs nomic-bert without projection biases');
  refuse('prenorm', (v) => v == null || v === false, 'intab runs the post-norm layer');
  refuse('causal', (v) => v == null || v === false, 'an embedding encoder attends both ways');
  refuse('rotary_emb_interleaved', (v) => v == null || v === false, 'intab runs rotate-half (non-interleaved) RoPE');
  refuse('rotary_scaling_factor', (v) => v == null, 'intab runs plain RoPE over the trained context (no dynamic NTK scaling)');
  refuse('use_rms_norm', (v) => v == null || v === false, 'intab runs nomic-bert with LayerNorm');
  const hidden = num(j, 'n_embd', file, { int: true, min: 1 });
  const heads = num(j, 'n_head', file, { int: true, min: 1 });
  const headDim = checkHeads(hidden, heads, file, 'n_head');
  const fraction = num(j, 'rotary_emb_fraction', file, { min: 0, def: 1 });
  const rotaryDim = Math.floor((headDim * fraction) / 2) * 2;
  if (rotaryDim < 2) throw new ModelFormatError(file, 'rotary_emb_fraction', `rotates ${rotaryDim} of ${headDim} dimensions; it should rotate at least 2`);
  // nomic-embed-text v1/v1.5 say n_positions 8192 but were trained for max_trained_positions (2048), as llama.cpp's
  // converter has it.
  const positions = num(j, 'n_positions', file, { int: true, min: 1 });
  return {
    arch: 'nomic-bert',
    hidden,
    layers: num(j, 'n_layer', file, { int: true, min: 1 }),
    heads,
    headDim,
    ffn: num(j, 'n_inner', file, { int: true, min: 1, def: 4 * hidden }),
    vocab: num(j, 'vocab_size', file, { int: true, min: 1 }),
    eps: num(j, 'layer_norm_epsilon', file, { min: 0, def: 1e-12 }),
    maxPositions: Math.min(positions, num(j, 'max_trained_positions', file, { int: true, min: 1, def: positions })),
    typeVocab: num(j, 'type_vocab_size', file, { int: true, min: 0, def: 2 }),
    absolutePositions: false,
    rope: { theta: num(j, 'rotary_emb_base', file, { min: Number.MIN_VALUE, def: 10000 }), rotaryDim },
    activation: 'swiglu',
    projectionBias: false,
    pooling,
    normalize,
  };
}
