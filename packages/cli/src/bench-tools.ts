// `intab bench tools`: what tool calling costs, on the engine in this process (the Node runtime, as `intab serve
// --runtime node` loads it: intab's kernels on Dawn where Dawn finds a hardware adapter, else onnxruntime-node's CPU
// execution provider). Two figures, each against the same request without tools, in alternating order:
//   decode  a reply forced to a call (tool_choice 'required': every token under the call grammar's mask) against a
//           plain answer of the same length (ignoring EOS): decode tok/s, their ratio (target ≥ 0.95);
//   ttft    turn 2 of a chat whose system prompt (with 10 tools) was preloaded, against the same chat without tools:
//           time to first token, their ratio (target ≤ 1.2), and what turn 2 prefilled (the new message only).
// JSON lines (--json): one per run, then one per figure; a table without --json.
import type { ChatMessage, Chunk, GenerateRequest, RequestMetrics, ToolDefinition } from '@intab/engine/contract';
import type { Engine } from '@intab/engine';
import { wholeFlag, type Flags } from './args.ts';
import { round } from './grammar-stats.ts';
import { resolveModel, type ResolvedModel } from './model-files.ts';

/** The run's settings, from the flags (checked before the model loads). */
export interface BenchToolsOptions {
  model: ResolvedModel;
  json: boolean;
  /** Most tokens of the forced call (the plain answer gets as many as the call took). */
  maxTokens: number;
  repeats: number;
  /** Tools in the preloaded system prompt of the ttft figure. */
  tools: number;
  seed: number;
  backend: 'auto' | 'webgpu' | 'onnx-wasm';
  threads?: number;
}

const BACKENDS = ['auto', 'webgpu', 'onnx-wasm'];

export function benchToolsOptions(flags: Flags): BenchToolsOptions {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required: a model with a chat template (e.g. intab make-model --like qwen3-0.6b --tokenizer qwen3)');
  const backend = flags.backend ?? 'auto';
  if (typeof backend !== 'string' || !BACKENDS.includes(backend)) throw new Error(`--backend takes ${BACKENDS.join(', ')} (the Node runtime's)`);
  return {
    model: resolveModel(flags.model),
    json: Boolean(flags.json),
    maxTokens: wholeFlag(flags, 'max-tokens', 64, 2, 4096),
    repeats: wholeFlag(flags, 'repeats', 3, 1, 50),
    tools: wholeFlag(flags, 'tools', 10, 1, 128),
    seed: wholeFlag(flags, 'seed', 1, 0, 2 ** 31 - 1),
    backend: backend as BenchToolsOptions['backend'],
    ...(flags.threads !== undefined ? { threads: wholeFlag(flags, 'threads', 1, 1, 64) } : {}),
  };
}

// ---- the requests ----

const SYSTEM = 'You are a helpful assistant for a travel app. Answer briefly; use a tool when it helps.';

/** The forced call's tool: free text in its arguments lets a call run long, as real ones (a message, a query) do. */
const SEND_NOTE: ToolDefinition = {
  type: 'function',
  function: {
    name: 'send_note',
    description: 'Send a note to the traveller.',
    parameters: { type: 'object', properties: { city: { type: 'string' }, note: { type: 'string' }, urgent: { type: 'boolean' } }, required: ['city', 'note', 'urgent'] },
  },
};

/** `n` different tools, each with a schema of a few typed fields (what an app's functions look like). */
export function sampleTools(n: number): ToolDefinition[] {
  const kinds = [
    { name: 'get_weather', description: 'Current weather in a city.', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] },
    { name: 'search_flights', description: 'Flights between two airports on a date.', properties: { from: { type: 'string', pattern: '^[A-Z]{3}$' }, to: { type: 'string', pattern: '^[A-Z]{3}$' }, date: { type: 'string', format: 'date' }, passengers: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['from', 'to', 'date'] },
    { name: 'book_hotel', description: 'Book a hotel room.', properties: { hotel_id: { type: 'string' }, nights: { type: 'integer', minimum: 1 }, breakfast: { type: 'boolean' } }, required: ['hotel_id', 'nights'] },
    { name: 'convert_currency', description: 'Convert an amount between currencies.', properties: { amount: { type: 'number' }, from: { type: 'string' }, to: { type: 'string' } }, required: ['amount', 'from', 'to'] },
    { name: 'list_events', description: 'Events in a city in a date range.', properties: { city: { type: 'string' }, start: { type: 'string' }, end: { type: 'string' }, tags: { type: 'array', items: { type: 'string' }, maxItems: 5 } }, required: ['city'] },
  ];
  return Array.from({ length: n }, (_, i) => {
    const k = kinds[i % kinds.length];
    const round = Math.floor(i / kinds.length);
    return { type: 'function', function: { name: round ? `${k.name}_${round + 1}` : k.name, description: k.description, parameters: { type: 'object', properties: k.properties, required: k.required } } };
  });
}

/** The median of some figures (the mean of the middle two of an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** What one request gave: its last chunk's metrics, its text and how it ended. */
interface Run {
  metrics: RequestMetrics;
  text: string;
  finishReason: Chunk['finishReason'];
  calls: number;
}

async function run(engine: Engine, request: GenerateRequest): Promise<Run> {
  const id = await engine.start(request);
  let text = '';
  let calls = 0;
  for (;;) {
    const c = await engine.next(id);
    text += c.text;
    calls += (c.toolCalls ?? []).filter((d) => d.id !== undefined).length;
    if (c.error) throw c.error;
    if (c.finishReason !== null) {
      if (!c.metrics) throw new Error('the engine ended a request without metrics');
      return { metrics: c.metrics, text, finishReason: c.finishReason, calls };
    }
  }
}

// ---- the engine ----

/** The model loaded in this process, as `intab serve --runtime node` loads it (Dawn or onnxruntime-node). */
async function loadHere(o: BenchToolsOptions): Promise<{ engine: Engine; facts: Record<string, unknown>; prefixCache: boolean; close(): Promise<void> }> {
  const { openModels } = await import('@intab/engine');
  const { openOnDisk } = await import('../node/model-source.ts');
  const { chooseNodeBackend } = await import('../node/backend.ts');
  const { loadEngine } = await import('../page/shared.ts');
  const opened = await openModels(openOnDisk, o.model);
  if (!opened.tokenizer?.chatTemplate) throw new Error(`${o.model.files[0] ?? o.model.urls[0]} has no chat template: tools are rendered by it (make one with intab make-model --tokenizer qwen3)`);
  const choice = await chooseNodeBackend(o.backend, opened.model, { threads: o.threads });
  const loaded = await loadEngine(choice, { backend: o.backend }, opened, { maxBatch: 1, seed: o.seed, prefixCache: true });
  const gpu = choice.name === 'webgpu' ? choice.gpu : undefined;
  return {
    engine: loaded.engine,
    prefixCache: loaded.info.prefixCache !== false,
    facts: { backend: loaded.info.backend.name, adapter: loaded.info.adapter, tool_format: loaded.info.toolFormat, vocab: loaded.info.vocab, layers: loaded.info.layers, load_ms: round(loaded.loadMs) },
    async close() {
      await loaded.engine.destroy();
      gpu?.destroy();
    },
  };
}

// ---- the figures ----

/** decode: a forced call, then a plain answer of the call's length (the call sets it), `repeats` pairs. */
async function decodeFigure(engine: Engine, o: BenchToolsOptions, line: (r: Record<string, unknown>) => void): Promise<Record<string, unknown>> {
  const tools: number[] = [];
  const plain: number[] = [];
  for (let r = 0; r < o.repeats; r++) {
    const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Tell the traveller in city number ${r + 1} what to pack.` }];
    // (The first pair warms up what happens once per process; the medians of several pairs take it in stride.)
    const sampling = { temperature: 1, seed: o.seed + r };
    const call = await run(engine, { messages, tools: [SEND_NOTE], toolChoice: 'required', maxTokens: o.maxTokens, ...sampling });
    if (call.calls === 0) throw new Error(`tool_choice 'required' gave no call (finish_reason ${call.finishReason}): the engine does not emit toolCalls`);
    // The grammar writes what only one token can continue (the call's opening and a lone function's name) without a
    // step of its own: a call of nothing else came whole with its first token, and has no decode time to measure.
    if (!(call.metrics.decodeTokensPerSecond > 0)) throw new Error(`--max-tokens ${o.maxTokens} left the call nothing to sample: its ${call.metrics.completionTokens} tokens came whole with the first step (written by the grammar), so it has no decode speed. Run with --max-tokens 64.`);
    const answer = await run(engine, { messages, maxTokens: call.metrics.completionTokens, ignoreEos: true, ...sampling });
    tools.push(call.metrics.decodeTokensPerSecond);
    plain.push(answer.metrics.decodeTokensPerSecond);
    line({ kind: 'decode_run', repeat: r, tool_tokens: call.metrics.completionTokens, plain_tokens: answer.metrics.completionTokens, tool_finish_reason: call.finishReason, decode_tok_s_tools: round(call.metrics.decodeTokensPerSecond), decode_tok_s_plain: round(answer.metrics.decodeTokensPerSecond) });
  }
  const ratio = median(tools) / median(plain);
  return { kind: 'decode', tool_choice: 'required', repeats: o.repeats, decode_tok_s_tools: round(median(tools)), decode_tok_s_plain: round(median(plain)), decode_ratio: round(ratio), target: 0.95, met: ratio >= 0.95 };
}

/**
 * ttft: turn 2 after a preload of the system prompt with `o.tools` tools, against the same chat without tools; and,
 * to tell the tools' own cost from a longer context's, against a system prompt that spells the same tools as plain
 * text (a cached prefix of the same tools' JSON, somewhat shorter than the template's rendering; no tools in the request).
 */
async function ttftFigure(engine: Engine, o: BenchToolsOptions, line: (r: Record<string, unknown>) => void): Promise<Record<string, unknown>> {
  const tools = sampleTools(o.tools);
  const system: ChatMessage = { role: 'system', content: SYSTEM };
  const asText: ChatMessage = { role: 'system', content: `${SYSTEM}\n\nFunctions you may ask the user to run:\n${tools.map((t) => JSON.stringify(t)).join('\n')}` };
  const figures = { tools: [] as RequestMetrics[], plain: [] as RequestMetrics[], text: [] as RequestMetrics[] };
  const preloads = {
    tools: await engine.preload({ messages: [system], tools }),
    plain: await engine.preload({ messages: [system] }),
    text: await engine.preload({ messages: [asText] }),
  };
  try {
    // Warm-up, untimed: what happens once per process (the vocabulary's index for the grammar, pipelines) is not turn 2's.
    await run(engine, { messages: [system, { role: 'user', content: 'Hello.' }], tools, maxTokens: 1, temperature: 0 });
    await run(engine, { messages: [system, { role: 'user', content: 'Hello.' }], maxTokens: 1, temperature: 0 });
    for (let r = 0; r < o.repeats; r++) {
      const order = (['tools', 'plain', 'text'] as const).map((_, i, all) => all[(i + r) % all.length]);
      for (const variant of order) {
        const withTools = variant === 'tools' ? { tools } : {};
        // A fresh conversation each repeat (its turns are new to the prefix cache; only the preloaded prompt is not).
        const turn1: ChatMessage[] = [variant === 'text' ? asText : system, { role: 'user', content: `Trip ${r + 1} (${variant}): I land in Lisbon on Friday. What should I see first?` }];
        const first = await run(engine, { messages: turn1, ...withTools, ...(variant === 'tools' ? { toolChoice: 'none' as const } : {}), maxTokens: 16, temperature: 0 });
        const turn2: ChatMessage[] = [...turn1, { role: 'assistant', content: first.text }, { role: 'user', content: 'And on Saturday?' }];
        const second = await run(engine, { messages: turn2, ...withTools, maxTokens: 1, temperature: 0 });
        figures[variant].push(second.metrics);
        line({ kind: 'ttft_run', repeat: r, variant, tools: variant === 'tools' ? o.tools : 0, prompt_tokens: second.metrics.promptTokens, cached_tokens: second.metrics.cachedTokens, ttft_ms: round(second.metrics.ttftMs) });
      }
    }
  } finally {
    for (const p of Object.values(preloads)) engine.release(p.id);
  }
  type Variant = keyof typeof figures;
  const ttft = (v: Variant) => median(figures[v].map((m) => m.ttftMs));
  const last = (v: Variant) => figures[v].at(-1)!;
  const ratio = ttft('tools') / ttft('plain');
  return {
    kind: 'ttft',
    tools: o.tools,
    repeats: o.repeats,
    preloaded_tokens_tools: preloads.tools.tokens,
    preloaded_tokens_plain: preloads.plain.tokens,
    // What turn 2 prefilled: its prompt less what the prefix cache held.
    prefilled_tokens_tools: last('tools').promptTokens - last('tools').cachedTokens,
    prefilled_tokens_plain: last('plain').promptTokens - last('plain').cachedTokens,
    ttft_ms_tools: round(ttft('tools')),
    ttft_ms_plain: round(ttft('plain')),
    ttft_ratio: round(ratio),
    // The same tools as plain text in the cached system prompt: what the longer context alone costs turn 2.
    preloaded_tokens_text: preloads.text.tokens,
    ttft_ms_text: round(ttft('text')),
    ttft_ratio_text: round(ttft('text') / ttft('plain')),
    target: 1.2,
    met: ratio <= 1.2,
  };
}

/** Columns without --json. */
const COLUMNS = ['kind', 'decode_tok_s_tools', 'decode_tok_s_plain', 'decode_ratio', 'ttft_ms_tools', 'ttft_ms_plain', 'ttft_ratio', 'met'];

export async function benchTools(flags: Flags): Promise<number> {
  const o = benchToolsOptions(flags);
  const here = await loadHere(o);
  const out = (r: Record<string, unknown>) => console.log(JSON.stringify({ bench: 'tools', ...r }));
  const line = (r: Record<string, unknown>) => o.json && out(r);
  try {
    const figures = [await decodeFigure(here.engine, o, line)];
    // A load without a prefix cache cannot preload: nothing to compare.
    if (here.prefixCache) figures.push(await ttftFigure(here.engine, o, line));
    else figures.push({ kind: 'ttft', ttft_ratio: null, skipped: `this load of ${here.facts.backend} has no prefix cache, so nothing can be preloaded` });
    for (const f of figures) {
      if (o.json) out({ ...f, ...here.facts });
      else console.log(COLUMNS.map((c) => `${c}=${f[c] ?? '-'}`).join('\t'));
    }
    if (!o.json) console.log(Object.entries(here.facts).map(([k, v]) => `${k}=${v}`).join('\t'));
  } finally {
    await here.close();
  }
  return 0;
}
