// Embeddings on the engine (embeddings.ts): inputs checked and tokenized (a WordPiece tokenizer with BERT's [CLS] …
// [SEP]), cut or refused past the context, packed into passes within the encoder's bounds, round-robin between
// requests, dropped on abort, cut to `dimensions`; and an engine refuses the calls its model's kind cannot answer.
// The encoder here is a small exact stand-in that records its passes (the real ones are tested against llama.cpp and
// the CPU reference in their own files): its vector of a sequence is a function of the ids, so order mistakes show.

import { describe, expect, test } from 'vitest';
import { Engine } from './engine.ts';
import { Embedder, cutVector } from './embeddings.ts';
import { ContextLengthExceededError, InvalidRequestError, ModelKindError } from './errors.ts';
import { EMBED_LIMITS } from './contract.ts';
import { ReferenceRunner } from './reference/runner.ts';
import { stories260K } from './test-models.ts';
import { FACTS, RecordingEncoder, unit, vectorOf, wordPiece } from './test-encoders.ts';

const now = () => performance.now();

describe('embed(): inputs', () => {
  test('texts are tokenized with [CLS] … [SEP] and come back one vector per input, in order; ids are taken as they are', async () => {
    const encoder = new RecordingEncoder();
    const e = new Embedder(encoder, wordPiece(), now);
    const r = await e.embed({ input: ['Hello', 'note', 'abc'] });
    expect(encoder.passes.flat()).toEqual([
      [2, 57, 3],
      [2, 56, 3],
      [2, 4, 31, 32, 3],
    ]);
    expect(r.tokens).toEqual([3, 3, 5]);
    expect(r.promptTokens).toBe(11);
    expect(r.embeddings.map((v) => Array.from(v))).toEqual([unit([3, 62, 2, 3]), unit([3, 61, 2, 3]), unit([5, 72, 2, 3])].map((v) => Array.from(v)));
    const ids = await e.embed({ input: [7, 8, 9] });
    expect(encoder.passes.at(-1)).toEqual([[7, 8, 9]]);
    expect(Array.from(ids.embeddings[0])).toEqual(Array.from(unit([3, 24, 7, 9])));
    expect((await e.embed({ input: [[5], [6, 7]] })).tokens).toEqual([1, 2]);
  });

  test('past the context: refused naming the input, or with truncate cut to the first tokens and [SEP] kept last', async () => {
    const encoder = new RecordingEncoder();
    const e = new Embedder(encoder, wordPiece(), now);
    const long = 'abcdefghij'; // [CLS] a ##b … ##j [SEP]: 12 tokens past a context of 8
    const err = await e.embed({ input: ['note', long] }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ reason: 'input', input: 1, promptTokens: 12, limit: 8 });
    expect((err as Error).message).toContain('truncate: true');
    expect(encoder.passes).toHaveLength(0); // checked before anything ran
    const r = await e.embed({ input: ['note', long], truncate: true });
    expect(r.truncated).toEqual([1]);
    expect(encoder.passes.flat()[1]).toEqual([2, 4, 31, 32, 33, 34, 35, 3]);
    // Ids are cut as they are (nothing of theirs is known to be a closing token).
    await e.embed({ input: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], truncate: true });
    expect(encoder.passes.at(-1)).toEqual([[1, 2, 3, 4, 5, 6, 7, 8]]);
  });

  test('bad inputs are typed errors naming the field, before any pass', async () => {
    const encoder = new RecordingEncoder();
    const e = new Embedder(encoder, wordPiece(), now);
    const bad = async (request: unknown, field: string) => {
      const err = await e.embed(request as never).catch((x: unknown) => x);
      expect(err, JSON.stringify(request)?.slice(0, 80)).toBeInstanceOf(InvalidRequestError);
      expect((err as InvalidRequestError).field).toBe(field);
    };
    await bad({ input: '' }, 'input');
    await bad({ input: [] }, 'input');
    await bad({ input: ['a', ''] }, 'input[1]');
    await bad({ input: ['a', 3] }, 'input[1]');
    await bad({ input: [[1], []] }, 'input[1]');
    await bad({ input: [1, 64] }, 'input[1]');
    await bad({ input: [1.5] }, 'input[0]');
    await bad({ input: 42 }, 'input');
    await bad({ input: Array.from({ length: EMBED_LIMITS.inputs + 1 }, () => 'a') }, 'input');
    await bad({ input: Array.from({ length: 10_000 }, () => 'a') }, 'input');
    await bad({ input: 'a', dimensions: 0 }, 'dimensions');
    await bad({ input: 'a', dimensions: 5 }, 'dimensions');
    await bad({ input: 'a', dimensions: 2 }, 'dimensions'); // not a Matryoshka model
    await bad({ input: 'a', truncate: 'yes' }, 'truncate');
    await expect(e.embed({ input: 'a', dimension: 2 } as never)).rejects.toThrow(/unknown field 'dimension': did you mean 'dimensions'/);
    expect(encoder.passes).toHaveLength(0);
  });

  test('dimensions cuts a Matryoshka model\'s vectors to their first values, normalised again', async () => {
    const e = new Embedder(new RecordingEncoder({ ...FACTS, matryoshka: true }), wordPiece(), now);
    const [full] = (await e.embed({ input: [5, 6, 7] })).embeddings;
    const [cut] = (await e.embed({ input: [5, 6, 7], dimensions: 2 })).embeddings;
    expect(cut).toHaveLength(2);
    expect(Math.hypot(...cut)).toBeCloseTo(1, 6);
    expect(cut[1] / cut[0]).toBeCloseTo(full[1] / full[0], 6);
    expect(Array.from(cutVector(Float32Array.of(3, 4, 12), 2, false))).toEqual([3, 4]);
  });
});

describe('embed(): passes', () => {
  test("many inputs fill passes within the encoder's bounds; a later request's input is not held back until an earlier request's inputs are all done", async () => {
    const encoder = new RecordingEncoder(FACTS, 16, 4);
    const e = new Embedder(encoder, undefined, now);
    let release!: () => void;
    encoder.hold = new Promise<void>((r) => (release = r));
    const big = Array.from({ length: 12 }, (_, i) => [i + 1, i + 1, i + 1]); // 3 tokens each
    const a = e.embed({ input: big });
    await Promise.resolve();
    const b = e.embed({ input: [[60, 61]] });
    expect(e.queued).toBe(12 - 4 + 1); // A's first pass (4 inputs) is running
    release();
    const [ra, rb] = await Promise.all([a, b]);
    // Pass 1: A's first four. Pass 2: round-robin takes B's one input with A's next ones.
    expect(encoder.passes[0]).toEqual(big.slice(0, 4));
    expect(encoder.passes[1]).toContainEqual([60, 61]);
    expect(encoder.passes).toHaveLength(4);
    expect(ra.embeddings.map((v) => Array.from(v))).toEqual(big.map((s) => Array.from(unit(vectorOf(s)))));
    expect(Array.from(rb.embeddings[0])).toEqual(Array.from(unit(vectorOf([60, 61]))));
  });

  test('an abort drops the inputs not yet in a pass and rejects with its reason; the others go on', async () => {
    const encoder = new RecordingEncoder(FACTS, 16, 2);
    const e = new Embedder(encoder, undefined, now);
    let release!: () => void;
    encoder.hold = new Promise<void>((r) => (release = r));
    const stop = new AbortController();
    const a = e.embed({ input: Array.from({ length: 10 }, (_, i) => [i + 1]) }, stop.signal);
    const b = e.embed({ input: [[40]] });
    await Promise.resolve();
    stop.abort(new Error('the user left'));
    await expect(a).rejects.toThrow('the user left');
    release();
    await b;
    const seen = encoder.passes.flat();
    expect(seen).toContainEqual([40]);
    expect(seen.length).toBeLessThanOrEqual(3); // A's first pass only, then B
    expect(e.queued).toBe(0);
    const gone = new AbortController();
    gone.abort(new Error('already'));
    await expect(e.embed({ input: 'x' }, gone.signal)).rejects.toThrow('already');
  });

  test("an encoder's failure rejects the requests of that pass; the next pass runs", async () => {
    const encoder = new RecordingEncoder();
    let fail = true;
    const encode = encoder.encode.bind(encoder);
    encoder.encode = async (s) => {
      if (fail) {
        fail = false;
        throw new Error('pass failed');
      }
      return encode(s);
    };
    const e = new Embedder(encoder, undefined, now);
    await expect(e.embed({ input: [1, 2] })).rejects.toThrow('pass failed');
    expect((await e.embed({ input: [1, 2] })).embeddings).toHaveLength(1);
  });
});

describe('an engine answers the calls of its model kind', () => {
  test("an embedding model embeds and refuses to generate or preload; destroy() frees the encoder and refuses what was queued", async () => {
    const encoder = new RecordingEncoder();
    const engine = new Engine({ encoder, tokenizer: wordPiece() });
    expect((await engine.embed({ input: 'hello' })).embeddings).toHaveLength(1);
    await expect(engine.start({ prompt: 'hello' })).rejects.toBeInstanceOf(ModelKindError);
    await expect(engine.preload({ prompt: 'hello' })).rejects.toMatchObject({ code: 'wrong_model_kind', kind: 'embedding', call: 'preload' });
    expect(engine.stats().embedQueued).toBe(0);
    let release!: () => void;
    encoder.hold = new Promise<void>((r) => (release = r));
    const first = engine.embed({ input: [[1], [2], [3], [4], [5]] });
    await Promise.resolve();
    const closing = engine.destroy();
    release();
    await closing;
    await expect(first).rejects.toMatchObject({ name: 'EngineClosedError' });
    expect(encoder.destroyed).toBe(true);
    await expect(engine.embed({ input: 'x' })).rejects.toMatchObject({ name: 'EngineClosedError' });
  });

  test('a model that generates text refuses embed() with a ModelKindError that says what to load', async () => {
    const { config, tensors } = stories260K();
    const engine = new Engine({ runner: new ReferenceRunner(config, (n) => tensors.get(n), { pages: 8, pageSize: 16 }) });
    const err = await engine.embed({ input: [1, 2] }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ModelKindError);
    expect(err).toMatchObject({ code: 'wrong_model_kind', kind: 'generation', call: 'embed' });
    expect((err as Error).message).toMatch(/load one that embeds/);
    await engine.destroy();
  });
});
