// Encoder configs and loading: tiny BERT and nomic-bert models written as Hugging Face folders (config.json,
// model.safetensors with the checkpoints' own tensor names, tokenizer.json, sentence-transformers' modules.json and
// Pooling config) and as GGUFs (llama.cpp's names and keys) from the same seeded values. Both open into the same
// EncoderConfig and canonical tensors, and the CPU reference gives the same vectors from either (nomic's fused Wqkv split
// into q, k, v rows; fc11 the up projection, fc12 the gate, as llama.cpp's converter maps them). Pooling and
// normalisation come from the sentence-transformers files; every model intab cannot run is a typed, actionable error,
// and the decoder config sends an embedding model here.

import { describe, expect, it } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import { randn } from '@intab/gpu/reference';
import { configFromGguf, configFromHf } from './config.ts';
import { encoderConfigFromGguf, encoderConfigFromHf, encoderFacts, sentenceTransformersPooling, type EncoderConfig } from './encoder-config.ts';
import { canonicalEncoderName, encoderTensorShapes, openEncoderGguf, openEncoderHfFolder, type EncoderFiles } from './encoder-load.ts';
import { ModelFormatError, ModelMismatchError, UnsupportedModelError } from './errors.ts';
import { writeGguf, type GgufWriteTensor, type GgufWriteValue } from './formats/gguf-writer.ts';
import { writeSafetensors } from './formats/safetensors.ts';
import { openTokenizer } from './load.ts';
import { encodeReference, loadEncoderWeights } from './reference/bert.ts';
import { bytesSource } from './source.ts';
import type { ByteSource } from './types.ts';

// ---- a tiny model in both layouts ----

const VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'a', 'cat', 'dog', 'sat', 'on', 'mat', 'run', '##s', '##ning', '.', ',', '!'];
const C = 32;
const H = 4;
const F = 64;
const L = 2;
const P = 16;

function tokenizerJson(): Record<string, unknown> {
  const vocab = Object.fromEntries(VOCAB.map((t, i) => [t, i]));
  const special = (content: string) => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return {
    version: '1.0',
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map(special),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}

type Arch = EncoderConfig['arch'];

function hfConfig(arch: Arch): Record<string, unknown> {
  return arch === 'bert'
    ? { model_type: 'bert', architectures: ['BertModel'], hidden_size: C, num_hidden_layers: L, num_attention_heads: H, intermediate_size: F, max_position_embeddings: P, type_vocab_size: 2, vocab_size: VOCAB.length, layer_norm_eps: 1e-12, hidden_act: 'gelu', position_embedding_type: 'absolute' }
    : {
        model_type: 'nomic_bert', architectures: ['NomicBertModel'], n_embd: C, n_layer: L, n_head: H, n_inner: F, n_positions: 8192, max_trained_positions: P, type_vocab_size: 2,
        vocab_size: VOCAB.length, layer_norm_epsilon: 1e-12, rotary_emb_base: 1000, rotary_emb_fraction: 1, rotary_emb_interleaved: false, rotary_scaling_factor: null,
        activation_function: 'swiglu', qkv_proj_bias: false, mlp_fc1_bias: false, mlp_fc2_bias: false, prenorm: false, causal: false,
      };
}

/** The checkpoint's tensors (HF names) and the same values under llama.cpp's names (nomic's Wqkv kept fused, as in a GGUF). */
function tinyTensors(arch: Arch, seed: number): { hf: Map<string, [number[], Float32Array]>; gguf: Map<string, [number[], Float32Array]> } {
  const rng = mulberry32(seed);
  const t = (shape: number[], std: number, mean = 0): [number[], Float32Array] => [shape, new Float32Array(shape.reduce((a, b) => a * b, 1)).map(() => mean + std * randn(rng))];
  const hf = new Map<string, [number[], Float32Array]>();
  const gguf = new Map<string, [number[], Float32Array]>();
  const both = (hfName: string, ggufName: string, v: [number[], Float32Array]) => {
    hf.set(hfName, v);
    gguf.set(ggufName, v);
  };
  const ln = (hfName: string, ggufName: string) => {
    both(`${hfName}.weight`, `${ggufName}.weight`, t([C], 0.1, 1));
    both(`${hfName}.bias`, `${ggufName}.bias`, t([C], 0.05));
  };
  both('embeddings.word_embeddings.weight', 'token_embd.weight', t([VOCAB.length, C], 1));
  both('embeddings.token_type_embeddings.weight', 'token_types.weight', t([2, C], 0.5));
  if (arch === 'bert') {
    both('embeddings.position_embeddings.weight', 'position_embd.weight', t([P, C], 0.5));
    hf.set('embeddings.position_ids', [[1, P], new Float32Array(P).map((_, i) => i)]); // a buffer the encoder does not read
    ln('embeddings.LayerNorm', 'token_embd_norm');
    for (let l = 0; l < L; l++) {
      const h = `encoder.layer.${l}.`;
      const g = `blk.${l}.`;
      for (const [hn, gn] of [['attention.self.query', 'attn_q'], ['attention.self.key', 'attn_k'], ['attention.self.value', 'attn_v'], ['attention.output.dense', 'attn_output']]) {
        both(`${h}${hn}.weight`, `${g}${gn}.weight`, t([C, C], (gn === 'attn_q' || gn === 'attn_k' ? 2 : 1) / Math.sqrt(C)));
        both(`${h}${hn}.bias`, `${g}${gn}.bias`, t([C], 0.1));
      }
      ln(`${h}attention.output.LayerNorm`, `${g}attn_output_norm`);
      both(`${h}intermediate.dense.weight`, `${g}ffn_up.weight`, t([F, C], 1 / Math.sqrt(C)));
      both(`${h}intermediate.dense.bias`, `${g}ffn_up.bias`, t([F], 0.1));
      both(`${h}output.dense.weight`, `${g}ffn_down.weight`, t([C, F], 1 / Math.sqrt(F)));
      both(`${h}output.dense.bias`, `${g}ffn_down.bias`, t([C], 0.1));
      ln(`${h}output.LayerNorm`, `${g}layer_output_norm`);
    }
    hf.set('pooler.dense.weight', t([C, C], 0.1)); // the pooler (NSP head) is not the embedding
  } else {
    ln('emb_ln', 'token_embd_norm');
    for (let l = 0; l < L; l++) {
      const h = `encoder.layers.${l}.`;
      const g = `blk.${l}.`;
      both(`${h}attn.Wqkv.weight`, `${g}attn_qkv.weight`, t([3 * C, C], 2 / Math.sqrt(C)));
      both(`${h}attn.out_proj.weight`, `${g}attn_output.weight`, t([C, C], 1 / Math.sqrt(C)));
      ln(`${h}norm1`, `${g}attn_output_norm`);
      both(`${h}mlp.fc11.weight`, `${g}ffn_up.weight`, t([F, C], 1 / Math.sqrt(C)));
      both(`${h}mlp.fc12.weight`, `${g}ffn_gate.weight`, t([F, C], 1 / Math.sqrt(C)));
      both(`${h}mlp.fc2.weight`, `${g}ffn_down.weight`, t([C, F], 1 / Math.sqrt(F)));
      ln(`${h}norm2`, `${g}layer_output_norm`);
    }
  }
  return { hf, gguf };
}

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

interface FolderOptions {
  modules?: unknown;
  pooling?: unknown;
  config?: Record<string, unknown>;
}

function hfFolder(arch: Arch, options: FolderOptions = {}): Map<string, ByteSource> {
  const { hf } = tinyTensors(arch, 7);
  const st = writeSafetensors([...hf].map(([name, [shape, data]]) => ({ name, dtype: 'F32', shape, data: new Uint8Array(data.buffer) })), { format: 'pt' });
  const files = new Map<string, ByteSource>([
    ['tiny/config.json', bytesSource('config.json', json(options.config ?? hfConfig(arch)))],
    ['tiny/model.safetensors', bytesSource('model.safetensors', st)],
    ['tiny/tokenizer.json', bytesSource('tokenizer.json', json(tokenizerJson()))],
  ]);
  const modules = options.modules !== undefined ? options.modules : [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ];
  if (modules !== null) files.set('tiny/modules.json', bytesSource('modules.json', json(modules)));
  const pooling = options.pooling !== undefined ? options.pooling : { word_embedding_dimension: C, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true, pooling_mode_max_tokens: false, pooling_mode_mean_sqrt_len_tokens: false };
  if (pooling !== null) files.set('tiny/1_Pooling/config.json', bytesSource('config.json', json(pooling)));
  return files;
}

function ggufBytes(arch: Arch, extra: Record<string, GgufWriteValue> = {}): Uint8Array {
  const { gguf } = tinyTensors(arch, 7);
  const tensors: GgufWriteTensor[] = [...gguf].map(([name, [shape, data]]) => ({ name, type: 'f32', shape, data: new Uint8Array(data.buffer) }));
  const p = `${arch}.`;
  return writeGguf({
    metadata: {
      'general.architecture': arch,
      [`${p}context_length`]: P,
      [`${p}embedding_length`]: C,
      [`${p}feed_forward_length`]: F,
      [`${p}block_count`]: L,
      [`${p}attention.head_count`]: H,
      [`${p}attention.layer_norm_epsilon`]: 1e-12,
      [`${p}attention.causal`]: false,
      [`${p}pooling_type`]: 1,
      ...(arch === 'nomic-bert' ? { [`${p}rope.freq_base`]: 1000 } : {}),
      'tokenizer.ggml.token_type_count': 2,
      'tokenizer.ggml.model': 'bert',
      'tokenizer.ggml.tokens': VOCAB.map((t, i) => (i < 5 ? t : t.startsWith('##') ? t.slice(2) : `\u2581${t}`)),
      'tokenizer.ggml.token_type': VOCAB.map((_, i) => (i < 5 ? 3 : 1)),
      'tokenizer.ggml.bos_token_id': 2,
      'tokenizer.ggml.seperator_token_id': 3,
      'tokenizer.ggml.unknown_token_id': 1,
      ...extra,
    },
    tensors,
  });
}

async function weightsOf(model: EncoderFiles) {
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of model.tensors) {
    const bytes = await t.source.read(t.offset, t.byteLength);
    tensors.set(name, new Float32Array(bytes.slice().buffer));
  }
  return loadEncoderWeights(model.config, (n) => tensors.get(n));
}

function thrown(fn: () => unknown): Error & { field?: string; value?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

async function rejected(p: Promise<unknown>): Promise<Error & { field?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

// ---- tests ----

describe('encoder models from Hugging Face folders and GGUF files', () => {
  for (const arch of ['bert', 'nomic-bert'] as const) {
    it(`${arch}: the folder and the GGUF open into one config and the same vectors`, async () => {
      const fromHf = await openEncoderHfFolder(hfFolder(arch));
      const fromGguf = await openEncoderGguf(bytesSource(`tiny-${arch}.gguf`, ggufBytes(arch)));
      const common = { arch, hidden: C, layers: L, heads: H, headDim: C / H, ffn: F, vocab: VOCAB.length, eps: 1e-12, maxPositions: P, typeVocab: 2, pooling: 'mean' };
      const family = arch === 'bert'
        ? { absolutePositions: true, rope: null, activation: 'gelu', projectionBias: true }
        : { absolutePositions: false, rope: { theta: 1000, rotaryDim: C / H }, activation: 'swiglu', projectionBias: false };
      // The folder's Normalize module; a GGUF is normalised as llama.cpp's server returns it.
      expect(fromHf.config).toEqual({ ...common, ...family, normalize: true });
      expect(fromGguf.config).toEqual({ ...common, ...family, normalize: true });
      expect(encoderFacts(fromHf.config)).toMatchObject({ contextLength: P, dimensions: C, pooling: 'mean', normalized: true });
      // Canonical names only, exactly the tensors the encoder reads (nomic's attn_qkv split; the pooler left out).
      expect([...fromHf.tensors.keys()].sort()).toEqual([...encoderTensorShapes(fromHf.config).keys()].sort());
      expect([...fromGguf.tensors.keys()].sort()).toEqual([...encoderTensorShapes(fromGguf.config).keys()].sort());

      const tokHf = openTokenizer(fromHf)!;
      const tokGguf = openTokenizer(fromGguf)!;
      const texts = ['The cat sat on the mat.', 'A dog, running!', 'cats', 'the the the dog sat on a cat mat .'];
      const ids = texts.map((t) => tokHf.encode(t));
      expect(ids[2]).toEqual([2, 7, 13, 3]); // [CLS] cat ##s [SEP]
      expect(texts.map((t) => tokGguf.encode(t))).toEqual(ids);
      const a = encodeReference(await weightsOf(fromHf), ids);
      const b = encodeReference(await weightsOf(fromGguf), ids);
      expect(a.vectors).toEqual(b.vectors);
      // nomic's fused projection: q is Wqkv's first C rows, v its last.
      if (arch === 'nomic-bert') {
        const q = fromHf.tensors.get('blk.1.attn_q.weight')!;
        const v = fromHf.tensors.get('blk.1.attn_v.weight')!;
        expect([q.shape, v.shape, v.offset - q.offset]).toEqual([[C, C], [C, C], 2 * C * C * 4]);
      }
    });
  }

  it('rerankers: a BertForSequenceClassification and an XLMRobertaForSequenceClassification folder open as the GGUF with cls tensors does, same logits', async () => {
    const { hf, gguf } = tinyTensors('bert', 7);
    const rng = mulberry32(9);
    const t = (shape: number[], std: number): [number[], Float32Array] => [shape, new Float32Array(shape.reduce((a, b) => a * b, 1)).map(() => std * randn(rng))];
    const dense = t([C, C], 1 / Math.sqrt(C));
    const denseBias = t([C], 0.1);
    const out = t([1, C], 2 / Math.sqrt(C));
    const outBias = t([1], 0.1);
    const head = new Map([['cls.weight', dense], ['cls.bias', denseBias], ['cls.output.weight', out], ['cls.output.bias', outBias]]);
    const ggufFile = writeGguf({
      metadata: {
        'general.architecture': 'bert', 'bert.context_length': P, 'bert.embedding_length': C, 'bert.feed_forward_length': F, 'bert.block_count': L,
        'bert.attention.head_count': H, 'bert.attention.layer_norm_epsilon': 1e-12, 'bert.attention.causal': false, 'bert.pooling_type': 4,
        'bert.classifier.output_labels': ['LABEL_0'], 'tokenizer.ggml.token_type_count': 2,
      },
      tensors: [...gguf, ...head].map(([name, [shape, data]]) => ({ name, type: 'f32', shape, data: new Uint8Array(data.buffer) })),
    });
    const fromGguf = await openEncoderGguf(bytesSource('rerank.gguf', ggufFile));
    const folder = (config: Record<string, unknown>, tensors: Map<string, [number[], Float32Array]>) => new Map<string, ByteSource>([
      ['r/config.json', bytesSource('config.json', json(config))],
      ['r/model.safetensors', bytesSource('model.safetensors', writeSafetensors([...tensors].map(([name, [shape, data]]) => ({ name, dtype: 'F32', shape, data: new Uint8Array(data.buffer) })), { format: 'pt' }))],
      ['r/tokenizer.json', bytesSource('tokenizer.json', json(tokenizerJson()))],
    ]);
    // BERT: bert.* names, the pooler as the dense layer, classifier as the output projection.
    const bertTensors = new Map([...hf].map(([n, v]) => [`bert.${n}`, v] as [string, [number[], Float32Array]]));
    bertTensors.set('bert.pooler.dense.weight', dense).set('bert.pooler.dense.bias', denseBias).set('classifier.weight', out).set('classifier.bias', outBias);
    const bertConfig = { ...hfConfig('bert'), architectures: ['BertForSequenceClassification'], id2label: { 0: 'LABEL_0' } };
    const fromBert = await openEncoderHfFolder(folder(bertConfig, bertTensors));
    // XLM-R: roberta.* names, positions from pad_token_id + 1 = 2 (two more rows first), classifier.dense / out_proj.
    const robertaTensors = new Map([...hf].filter(([n]) => n !== 'pooler.dense.weight').map(([n, v]) => [`roberta.${n}`, v] as [string, [number[], Float32Array]]));
    const [posShape, pos] = hf.get('embeddings.position_embeddings.weight')!;
    const padded = new Float32Array((P + 2) * C).fill(7); // rows 0 and 1 are never read
    padded.set(pos, 2 * C);
    robertaTensors.set('roberta.embeddings.position_embeddings.weight', [[posShape[0] + 2, C], padded]);
    robertaTensors.set('classifier.dense.weight', dense).set('classifier.dense.bias', denseBias).set('classifier.out_proj.weight', out).set('classifier.out_proj.bias', outBias);
    const robertaConfig = { ...hfConfig('bert'), model_type: 'xlm-roberta', architectures: ['XLMRobertaForSequenceClassification'], max_position_embeddings: P + 2, pad_token_id: 1, num_labels: 1 };
    const fromRoberta = await openEncoderHfFolder(folder(robertaConfig, robertaTensors));

    const want = { pooling: 'cls', normalize: false, maxPositions: P, classifier: { dense: true, outputs: 1, labels: ['LABEL_0'] } };
    for (const m of [fromGguf, fromBert, fromRoberta]) {
      expect(m.config).toMatchObject(want);
      expect([...m.tensors.keys()].sort()).toEqual([...encoderTensorShapes(m.config).keys()].sort());
    }
    expect(encoderFacts(fromBert.config)).toMatchObject({ dimensions: 1, normalized: false, classifier: { outputs: 1 } });
    const ids = [[2, 7, 13, 3, 8, 9, 3], [2, 5, 3, 11, 3]];
    const typeSplits = [4, 3];
    const a = encodeReference(await weightsOf(fromGguf), ids, { typeSplits }).vectors;
    expect(encodeReference(await weightsOf(fromBert), ids, { typeSplits }).vectors).toEqual(a);
    expect(encodeReference(await weightsOf(fromRoberta), ids, { typeSplits }).vectors).toEqual(a);
    expect(a.map((v) => v.length)).toEqual([1, 1]);
    // The head matters: the pooler of an embedding folder stays unread.
    expect(canonicalEncoderName('bert.pooler.dense.weight', 'bert')).toBeNull();
    expect(canonicalEncoderName('bert.pooler.dense.weight', 'bert', true)).toBe('cls.weight');
  });

  it('pooling and normalisation follow the sentence-transformers files', async () => {
    const cls = await openEncoderHfFolder(hfFolder('bert', { pooling: { pooling_mode_cls_token: true, pooling_mode_mean_tokens: false } }));
    expect(cls.config).toMatchObject({ pooling: 'cls', normalize: true });
    const last = await openEncoderHfFolder(hfFolder('bert', { pooling: { pooling_mode: 'lasttoken' }, modules: [{ type: 'sentence_transformers.models.Transformer' }, { path: '1_Pooling', type: 'sentence_transformers.models.Pooling' }] }));
    expect(last.config).toMatchObject({ pooling: 'last', normalize: false });
    // A plain transformers folder: mean pooling, as sentence-transformers wraps such a checkpoint, and not normalised.
    const plain = await openEncoderHfFolder(hfFolder('bert', { modules: null, pooling: null }));
    expect(plain.config).toMatchObject({ pooling: 'mean', normalize: false });
    // The reference pools as told: [CLS]'s row, the last row, or the mean.
    const w = await weightsOf(plain);
    const ids = [[2, 5, 7, 9, 3], [2, 8, 3]];
    const mean = encodeReference(w, ids);
    const first = encodeReference({ ...w, config: { ...w.config, pooling: 'cls' } }, ids);
    const end = encodeReference({ ...w, config: { ...w.config, pooling: 'last', normalize: true } }, ids);
    expect(first.vectors[1]).toEqual(mean.hidden.slice(5 * C, 6 * C));
    expect(end.pooled[0]).toEqual(mean.hidden.slice(4 * C, 5 * C));
    const avg = new Float32Array(C).map((_, j) => (mean.hidden[5 * C + j] + mean.hidden[6 * C + j] + mean.hidden[7 * C + j]) / 3);
    for (let j = 0; j < C; j++) expect(mean.vectors[1][j]).toBeCloseTo(avg[j], 6);
    expect(Math.hypot(...end.vectors[0])).toBeCloseTo(1, 6);
  });

  it('maps checkpoint names to llama.cpp\'s', () => {
    expect(canonicalEncoderName('bert.encoder.layer.3.intermediate.dense.weight', 'bert')).toBe('blk.3.ffn_up.weight');
    expect(canonicalEncoderName('encoder.layer.0.attention.output.LayerNorm.gamma', 'bert')).toBe('blk.0.attn_output_norm.weight');
    expect(canonicalEncoderName('encoder.layers.5.mlp.fc12.weight', 'nomic-bert')).toBe('blk.5.ffn_gate.weight');
    expect(canonicalEncoderName('emb_ln.bias', 'nomic-bert')).toBe('token_embd_norm.bias');
    expect(canonicalEncoderName('pooler.dense.weight', 'bert')).toBeNull();
    expect(canonicalEncoderName('cls.predictions.bias', 'bert')).toBeNull();
  });
});

describe('encoder models intab cannot run: typed errors that say what to do', () => {
  const meta = (arch: Arch, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    'general.architecture': arch, [`${arch}.context_length`]: P, [`${arch}.embedding_length`]: C, [`${arch}.feed_forward_length`]: F, [`${arch}.block_count`]: L,
    [`${arch}.attention.head_count`]: H, [`${arch}.attention.layer_norm_epsilon`]: 1e-12, [`${arch}.attention.causal`]: false, [`${arch}.pooling_type`]: 1,
    'tokenizer.ggml.token_type_count': 2, 'tokenizer.ggml.tokens': VOCAB, ...extra,
  });
  const ggufCases: [string, Record<string, unknown>, string, typeof UnsupportedModelError | typeof ModelFormatError, RegExp][] = [
    ['a decoder', { 'general.architecture': 'llama' }, 'general.architecture', UnsupportedModelError, /not an encoder/],
    ['a MoE encoder', { 'general.architecture': 'nomic-bert-moe' }, 'general.architecture', UnsupportedModelError, /nomic-bert/],
    ['causal attention (key missing: llama.cpp\'s default)', { 'bert.attention.causal': undefined }, 'bert.attention.causal', UnsupportedModelError, /convert the model again/],
    ['per-token vectors (pooling none)', { 'bert.pooling_type': 0 }, 'bert.pooling_type', UnsupportedModelError, /one vector per input/],
    ['a reranker whose outputs have no names', { 'bert.pooling_type': 4, 'bert.classifier.output_labels': [] }, 'bert.classifier.output_labels', ModelFormatError, /list of label names/],
    ['an unknown pooling', { 'bert.pooling_type': 9 }, 'bert.pooling_type', ModelFormatError, /1 \(mean\)/],
    ['no token type count', { 'tokenizer.ggml.token_type_count': undefined }, 'tokenizer.ggml.token_type_count', ModelFormatError, /llama.cpp refuses/],
    ['heads that do not divide the width', { 'bert.attention.head_count': 5 }, 'bert.attention.head_count', ModelFormatError, /divide/],
    ['no LayerNorm epsilon', { 'bert.attention.layer_norm_epsilon': undefined }, 'bert.attention.layer_norm_epsilon', ModelFormatError, /missing/],
  ];
  it.each(ggufCases)('GGUF: %s', (_, extra, field, type, advice) => {
    const m = meta('bert', extra);
    for (const k of Object.keys(extra)) if (extra[k] === undefined) delete m[k];
    const e = thrown(() => encoderConfigFromGguf(m, 'bad.gguf'));
    expect(e).toBeInstanceOf(type);
    expect(e.field).toBe(field);
    expect(e.message).toMatch(advice);
  });

  it('GGUF: a reranker (pooling rank) opens with its head; one without a head, or of nomic-bert, is refused', () => {
    const tensors = (names: string[]) => [{ name: 'token_embd.weight', shape: [VOCAB.length, C] }, { name: 'token_types.weight', shape: [2, C] }, { name: 'blk.0.attn_q.bias', shape: [C] }, ...names.map((name) => ({ name, shape: name.startsWith('cls.output') ? [1, C] : [C, C] }))];
    const rank = meta('bert', { 'bert.pooling_type': 4 });
    expect(encoderConfigFromGguf(rank, 'rank.gguf', tensors(['cls.weight', 'cls.bias', 'cls.output.weight', 'cls.output.bias']))).toMatchObject({ pooling: 'cls', normalize: false, classifier: { dense: true, outputs: 1, labels: ['LABEL_0'] } });
    expect(encoderConfigFromGguf(rank, 'rank.gguf', tensors(['cls.output.weight', 'cls.output.bias'])).classifier).toEqual({ dense: false, outputs: 1, labels: ['LABEL_0'] });
    expect(encoderConfigFromGguf(meta('bert'), 'embed.gguf', tensors([])).classifier).toBeUndefined();
    const headless = thrown(() => encoderConfigFromGguf(rank, 'rank.gguf', tensors([])));
    expect([headless.name, headless.field]).toEqual(['ModelFormatError', 'cls.output.weight']);
    expect(headless.message).toMatch(/needs a classification head/);
    const nomic = thrown(() => encoderConfigFromGguf(meta('nomic-bert', { 'nomic-bert.pooling_type': 4 }), 'rank.gguf'));
    expect([nomic.name, nomic.field]).toEqual(['UnsupportedModelError', 'nomic-bert.pooling_type']);
    // An embedding model with a head left in is still refused (the head would be ignored).
    const embed = thrown(() => encoderConfigFromGguf(meta('bert'), 'embed.gguf', tensors(['cls.output.weight'])));
    expect([embed.name, embed.field]).toEqual(['UnsupportedModelError', 'cls.output.weight']);
  });

  it('GGUF: nomic-bert with RoPE scaling, and bert with tensors it does not run', () => {
    expect(thrown(() => encoderConfigFromGguf(meta('nomic-bert', { 'nomic-bert.rope.scaling.type': 'yarn' }), 'bad.gguf'))).toBeInstanceOf(UnsupportedModelError);
    const e = thrown(() => encoderConfigFromGguf(meta('bert'), 'bad.gguf', [{ name: 'blk.0.attn_q_norm.weight', shape: [C] }, { name: 'token_embd.weight', shape: [VOCAB.length, C] }]));
    expect([e.name, e.field]).toEqual(['UnsupportedModelError', 'blk.0.attn_q_norm.weight']);
  });

  it('GGUF: a tensor missing or misshapen is a ModelMismatchError naming it', async () => {
    const bytes = ggufBytes('bert', { 'bert.feed_forward_length': F + 32 });
    const e = await rejected(openEncoderGguf(bytesSource('bad.gguf', bytes)));
    expect(e).toBeInstanceOf(ModelMismatchError);
    expect(e.field).toBe('blk.0.ffn_up.weight shape');
  });

  const hfCases: [string, Record<string, unknown>, string, RegExp][] = [
    ['RoBERTa', { model_type: 'xlm-roberta' }, 'model_type', /BERT encoders/],
    ['a decoder', { model_type: 'llama' }, 'model_type', /not an encoder/],
    ['a tanh GELU', { hidden_act: 'gelu_new' }, 'hidden_act', /erf/],
    ['relative positions', { position_embedding_type: 'relative_key' }, 'position_embedding_type', /absolute/],
    ['a token classifier head', { architectures: ['BertForTokenClassification'] }, 'architectures[0]', /sequence classifiers/],
    ['a nomic-bert sequence classifier', { model_type: 'nomic_bert', architectures: ['NomicBertForSequenceClassification'] }, 'architectures[0]', /this head is not run/],
    ['a RoBERTa embedding model', { model_type: 'roberta', architectures: ['RobertaModel'] }, 'model_type', /embedding model/],
  ];
  it.each(hfCases)('config.json: %s', (_, extra, field, advice) => {
    const e = thrown(() => encoderConfigFromHf({ ...hfConfig('bert'), ...extra }, 'config.json'));
    expect(e).toBeInstanceOf(UnsupportedModelError);
    expect(e.field).toBe(field);
    expect(e.message).toMatch(advice);
  });

  it('config.json: nomic-bert variants llama.cpp\'s converter refuses too', () => {
    for (const [key, value] of [['moe_every_n_layers', 2], ['qkv_proj_bias', true], ['rotary_emb_interleaved', true], ['prenorm', true], ['activation_function', 'gelu'], ['rotary_scaling_factor', 2]] as const) {
      const e = thrown(() => encoderConfigFromHf({ ...hfConfig('nomic-bert'), [key]: value }, 'config.json'));
      expect([e.name, e.field]).toEqual(['UnsupportedModelError', key]);
    }
  });

  it('sentence-transformers: pooling it cannot run, a Dense module, a Pooling module without its config', () => {
    const modules = [{ type: 'sentence_transformers.models.Transformer' }, { path: '1_Pooling', type: 'sentence_transformers.models.Pooling' }];
    const cases: [unknown, unknown, string, string][] = [
      [modules, { pooling_mode_max_tokens: true }, 'UnsupportedModelError', 'pooling_mode_max_tokens'],
      [modules, { pooling_mode_mean_tokens: true, pooling_mode_cls_token: true }, 'UnsupportedModelError', 'pooling_mode_*'],
      [modules, { pooling_mode_mean_tokens: true, include_prompt: false }, 'UnsupportedModelError', 'include_prompt'],
      [[...modules, { path: '2_Dense', type: 'sentence_transformers.models.Dense' }], { pooling_mode_mean_tokens: true }, 'UnsupportedModelError', '[2].type'],
      [modules, undefined, 'ModelFormatError', '(file)'],
      [[modules[0]], undefined, 'ModelFormatError', '(root)'],
      [{ not: 'a list' }, undefined, 'ModelFormatError', '(root)'],
    ];
    for (const [m, pooling, name, field] of cases) {
      const e = thrown(() => sentenceTransformersPooling({ modules: m, pooling }));
      expect([e.name, e.field]).toEqual([name, field]);
    }
  });

  it('the decoder config sends an embedding model to the encoder path', () => {
    const g = thrown(() => configFromGguf({ 'general.architecture': 'bert' }, 'minilm.gguf'));
    expect(g).toBeInstanceOf(UnsupportedModelError);
    expect(g.message).toMatch(/embedding model/);
    const h = thrown(() => configFromHf(hfConfig('nomic-bert'), 'config.json'));
    expect(h).toBeInstanceOf(UnsupportedModelError);
    expect(h.message).toMatch(/embedding model/);
  });
});
