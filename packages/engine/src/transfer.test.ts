// Errors thrown on the far side of a real Comlink channel (a MessageChannel, as between the page and the engine's
// worker) come back as their own class, as IntabErrors, with their stable `code`: one error of each package, one of a
// class this side never registered, and one that aborts a signal sent across.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import * as Comlink from 'comlink';
import { IntabError } from '@intab/errors';
import { DeviceLostError } from '@intab/gpu';
import { GrammarBudgetError } from '@intab/grammar/errors';
import { PartialJsonError } from '@intab/grammar/partial';
import { ChatTemplateError, ModelSourceError } from '@intab/model/errors';
import { OnnxRunError } from '@intab/onnx/errors';
import { ContextLengthExceededError, TokenizerRequiredError } from './errors.ts';
import { registerTransferHandlers } from './transfer.ts';

/** Never registered with registerErrorClass: as a class only the worker's side would know (a newer package). */
class FutureError extends IntabError {
  static override readonly code: string = 'future_problem';
  readonly detail: string;
  constructor(detail: string) {
    super(`future: ${detail}`);
    this.name = 'FutureError';
    this.detail = detail;
  }
}

const THROWN = {
  gpu: () => new DeviceLostError('unknown', 'driver reset'),
  model: () => new ModelSourceError('https://example.com/m.gguf', 'HTTP 404 Not Found for bytes=0-65535', { status: 404 }),
  template: () => ChatTemplateError.missing('base.gguf'),
  engine: () => new ContextLengthExceededError({ promptTokens: 600, maxTokens: 10, limit: 512, limitedBy: 'context', reason: 'prompt' }),
  tokenizer: () => new TokenizerRequiredError(),
  grammar: () => new GrammarBudgetError('nesting', 64, 65, 'the schema nests too deep'),
  partial: () => new PartialJsonError('unexpected "}"', 7, ['a']),
  onnx: () => new OnnxRunError('sequence 1, 1 tokens after 3', new Error('out of memory')),
  future: () => new FutureError('x'),
} as const;
type Kind = keyof typeof THROWN;

const api = {
  fail(kind: Kind): void {
    throw THROWN[kind]();
  },
  /** What the (transferred) signal's abort reason is, seen on the far side (a returned Error would lose its class on the way back). */
  async reasonOf(signal: AbortSignal): Promise<{ modelSource: boolean; intab: boolean; code: unknown; source: unknown }> {
    const reason = await new Promise((resolve) => (signal.aborted ? resolve(signal.reason) : signal.addEventListener('abort', () => resolve(signal.reason), { once: true })));
    const r = reason as ModelSourceError;
    return { modelSource: reason instanceof ModelSourceError, intab: reason instanceof IntabError, code: r.code, source: r.source };
  },
};

let channel: MessageChannel;
let remote: Comlink.Remote<typeof api>;

beforeEach(() => {
  registerTransferHandlers();
  channel = new MessageChannel();
  Comlink.expose(api, channel.port1);
  remote = Comlink.wrap<typeof api>(channel.port2);
});

afterEach(() => {
  channel.port1.close();
  channel.port2.close();
});

describe('errors across a Comlink channel', () => {
  test.each(Object.keys(THROWN) as Kind[])('%s: same class, an IntabError, same code, name and fields', async (kind) => {
    const sent = THROWN[kind]();
    const back = (await remote.fail(kind).catch((e: unknown) => e)) as IntabError;
    expect(back).not.toBe(sent);
    expect(back).toBeInstanceOf(IntabError);
    expect(back).toBeInstanceOf(kind === 'future' ? IntabError : (sent.constructor as typeof IntabError));
    expect(back.code).toBe(sent.code);
    expect(back.code).toBe((sent.constructor as typeof IntabError).code);
    expect(back.name).toBe(sent.name);
    expect(back.message).toBe(sent.message);
    // Fields as data (the sender's `name` is an own property there, the prototype's here).
    expect({ ...back, name: back.name }).toEqual({ ...sent });
  });

  test('the codes are the classes\' own', async () => {
    const codes = await Promise.all((['gpu', 'model', 'template', 'engine', 'future'] as Kind[]).map((k) => remote.fail(k).catch((e: IntabError) => e.code)));
    expect(codes).toEqual(['device_lost', 'model_source_unavailable', 'chat_template_error', 'context_length_exceeded', 'future_problem']);
    const template = (await remote.fail('template').catch((e: unknown) => e)) as ChatTemplateError;
    expect(template).toMatchObject({ reason: 'missing', file: 'base.gguf' });
  });

  test('an IntabError that aborts a signal sent across arrives as itself', async () => {
    const controller = new AbortController();
    const reason = remote.reasonOf(controller.signal);
    controller.abort(new ModelSourceError('org/name', 'the hub answered HTTP 404'));
    expect(await reason).toEqual({ modelSource: true, intab: true, code: 'model_source_unavailable', source: 'org/name' });
    // Already aborted when sent: it crosses with the signal itself.
    expect(await remote.reasonOf(AbortSignal.abort(new DeviceLostError('destroyed', '')))).toMatchObject({ modelSource: false, intab: true, code: 'device_lost' });
  });
});
