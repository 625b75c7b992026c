// The conversation part of a chat page, shared by the demo chat and the PWA assistant: a multi-turn history
// streamed through intab's OpenAI-compatible chat API (or a plain-text transcript for models without a chat
// template), a stop button, and per answer TTFT, tok/s, tokens and how many prompt tokens came from the prefix cache.
// Also the preloaded system prompt and the load progress line both pages show. With tools, the model's calls show as
// they stream (tool-call-view.ts), the page runs them, and their results go back to the model, round after round, until
// it answers in text (at most MAX_TOOL_ROUNDS replies). Everything shown (the model's answer, the visitor's message,
// calls, results, errors) is set as text, never parsed as HTML: a model can be made to write markup.

import { InvalidRequestError, type ChatMessage, type IntabEngine, type LoadProgress, type Preloaded } from 'intab';
import { toolCallBox, type ToolCallBox, type ToolCallStatus } from './tool-call-view.ts';
import { MAX_TOOL_ROUNDS, ToolCallCollector, toolChoiceForRound, type ConversationMessage, type FunctionTool, type ToolCallDeltaParam, type ToolCallMade, type ToolChoiceParam } from './tool-calls.ts';

export interface Sampling {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxTokens?: number;
  seed?: number;
  /**
   * A JSON Schema, as JSON text, every answer must follow (the engine's structured output, enforced token by
   * token); the pages take it from `?schema=`. Not JSON: the answer is an InvalidRequestError saying so.
   */
  schema?: string;
}

/** The elements a conversation needs (ids as in both pages: #messages, #composer, #input, #send, #stop). */
export interface ChatElements {
  messages: HTMLDivElement;
  composer: HTMLFormElement;
  input: HTMLTextAreaElement;
  send: HTMLButtonElement;
  stop: HTMLButtonElement;
}

/** The tools of a page: what the model may call, and (on a page that runs them) how a call runs. */
export interface ToolHost {
  /** The functions of the next request (none: undefined or empty). */
  definitions(): FunctionTool[] | undefined;
  /** The tool_choice of the first reply to each message (a page's `?tool_choice=`) [the API's default, 'auto']. */
  firstChoice?(): ToolChoiceParam | undefined;
  /**
   * Runs one call (the box shows it; it may ask the user to confirm) and gives the `tool` message's content. Absent,
   * the page only shows calls: the answer ends with them, and each is answered "not run".
   */
  run?(call: ToolCallMade, box: ToolCallBox, signal: AbortSignal): Promise<{ status: ToolCallStatus; content: string }>;
}

export interface ChatView {
  /** Enables or disables typing (disabled until a model is ready). */
  setReady(ready: boolean): void;
  /** Stops the answer in progress and forgets the conversation. */
  clear(): void;
}

/**
 * Wires a conversation to the page's elements. `engine()` is the loaded engine (undefined while none is),
 * `system()` the system prompt, `sampling()` the options of the next answer.
 * @example
 * const view = chatView(elements, { engine: () => engine, system: () => systemInput.value, sampling: () => ({ maxTokens: 256 }) });
 * view.setReady(true);
 */
export function chatView(ui: ChatElements, deps: { engine(): IntabEngine | undefined; system(): string; sampling(): Sampling; tools?: ToolHost }): ChatView {
  let history: ConversationMessage[] = [];
  let answering: AbortController | undefined;

  const addMessage = (role: string, text: string) => {
    // Built node by node, no HTML parsed anywhere (a page under Trusted Types could not assign innerHTML at all).
    const part = (className: string, content = '') => Object.assign(document.createElement('div'), { className, textContent: content });
    const root = part(`msg ${role}`);
    const body = part('body', text);
    const stats = part('stats');
    root.append(part('who', role), body, stats);
    ui.messages.append(root);
    ui.messages.scrollTop = ui.messages.scrollHeight;
    return { body, stats, root };
  };

  ui.input.onkeydown = (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      ui.composer.requestSubmit();
    }
  };

  ui.composer.onsubmit = async (e) => {
    e.preventDefault();
    const engine = deps.engine();
    const text = ui.input.value.trim();
    if (!text || !engine || answering) return;
    ui.input.value = '';
    history.push({ role: 'user', content: text });
    addMessage('user', text);
    const controller = (answering = new AbortController());
    // This conversation (a new chat started meanwhile does not get this answer's end).
    const conversation = history;
    ui.send.hidden = true;
    ui.stop.hidden = false;
    try {
      // One reply per round; a reply that ends in calls is followed by their results and the next reply.
      for (let round = 0; round < MAX_TOOL_ROUNDS && !controller.signal.aborted; round++) {
        if (!(await reply(engine, conversation, round, controller.signal))) break;
      }
    } finally {
      answering = undefined;
      ui.send.hidden = false;
      ui.stop.hidden = true;
      ui.input.focus();
    }
  };

  /** Streams one reply into a new assistant message; true when it ended in calls that were answered (one more round). */
  const reply = async (engine: IntabEngine, conversation: ConversationMessage[], round: number, signal: AbortSignal): Promise<boolean> => {
    const out = addMessage('assistant', '');
    const system = deps.system().trim();
    const messages: ConversationMessage[] = system ? [{ role: 'system', content: system }, ...conversation] : [...conversation];
    const calls = new ToolCallCollector();
    const boxes: ToolCallBox[] = [];
    let callsBox: HTMLDivElement | undefined;
    const t0 = performance.now();
    let tFirst = 0;
    let answer = '';
    let tokens = 0;
    let finish: string | null = null;
    let usage: { prompt: number; cached: number } | undefined;
    try {
      // A page's tools (its ?tools= and ?tool_choice=, checked here: a bad one is this answer's error). A schema for
      // the answer (?schema=) leaves them out: a reply is either calls or text.
      const sampling = deps.sampling();
      const tools = engine.info.hasChatTemplate && sampling.schema === undefined ? deps.tools?.definitions() : undefined;
      const withTools = tools?.length ? { tools, toolChoice: toolChoiceForRound(deps.tools?.firstChoice?.(), round) } : undefined;
      for await (const piece of answerStream(engine, messages, sampling, withTools, signal)) {
        if (piece.text || piece.toolCalls?.length) tFirst ||= performance.now();
        if (piece.text) {
          answer += piece.text;
          out.body.textContent = answer;
        }
        for (const i of calls.add(piece.toolCalls)) {
          if (!callsBox) out.root.insertBefore((callsBox = Object.assign(document.createElement('div'), { className: 'calls' })), out.stats);
          (boxes[i] ??= toolCallBox(callsBox)).update(calls.get(i));
        }
        ui.messages.scrollTop = ui.messages.scrollHeight;
        if (piece.finish) finish = piece.finish;
        if (piece.tokens !== undefined) tokens = piece.tokens;
        if (piece.prompt !== undefined) usage = { prompt: piece.prompt, cached: piece.cached ?? 0 };
      }
    } catch (err) {
      if (!signal.aborted) {
        out.root.classList.add('error');
        out.body.textContent = `${answer}\n[${(err as Error).name}: ${(err as Error).message}]`;
      }
    } finally {
      const tEnd = performance.now();
      const decodeS = tFirst ? (tEnd - tFirst) / 1000 : 0;
      out.stats.textContent = [
        tFirst ? `TTFT ${(tFirst - t0).toFixed(0)} ms` : '',
        tokens > 1 && decodeS > 0 ? `${((tokens - 1) / decodeS).toFixed(1)} tok/s` : '',
        tokens ? `${tokens} tokens` : '',
        usage ? `cached ${usage.cached} of ${usage.prompt} prompt tokens` : '',
        signal.aborted ? 'stopped' : finish === 'length' ? 'max tokens reached' : '',
      ]
        .filter(Boolean)
        .join(' · ');
    }
    const made = calls.all();
    // Only a reply that ended in calls runs them: one cut short (max tokens, stop) may hold half a call.
    const complete = finish === 'tool_calls' && !signal.aborted;
    if (!complete) {
      const why = signal.aborted ? 'stopped before it ran' : finish === 'length' ? 'max tokens reached before the calls were complete' : 'the reply ended before the calls were complete';
      for (const box of boxes) box.result('not-run', why);
      if (answer) conversation.push({ role: 'assistant', content: answer });
      return false;
    }
    conversation.push({ role: 'assistant', content: answer || null, tool_calls: made });
    const run = deps.tools?.run;
    const notRun = (code: string, message: string) => ({ status: 'not-run' as const, content: JSON.stringify({ error: { code, message } }) });
    const stopped = () => notRun('stopped', 'The user stopped the answer before this call ran.');
    for (const [i, call] of made.entries()) {
      let outcome: { status: ToolCallStatus; content: string };
      if (!run) outcome = notRun('not_run', 'This page shows calls but does not run them.');
      else if (signal.aborted) outcome = stopped();
      else {
        try {
          outcome = await run(call, boxes[i], signal);
        } catch (err) {
          // A tool's own bug (its expected failures are results): the model hears of it, the console has the stack.
          if (!signal.aborted) console.error(err);
          outcome = signal.aborted ? stopped() : { status: 'failed', content: JSON.stringify({ error: { code: 'tool_failed', message: `${(err as Error).name}: ${(err as Error).message}` } }) };
        }
      }
      boxes[i].result(outcome.status, outcome.content);
      // Every call gets its answer, so the conversation stays one the API takes.
      conversation.push({ role: 'tool', tool_call_id: call.id, content: outcome.content });
    }
    ui.messages.scrollTop = ui.messages.scrollHeight;
    return run !== undefined && !signal.aborted;
  };

  ui.stop.onclick = () => answering?.abort();

  return {
    setReady(ready) {
      ui.input.disabled = !ready;
      ui.send.disabled = !ready;
      ui.input.placeholder = ready ? 'Type a message… (Enter to send, Shift+Enter for a new line)' : 'Load a model, then type a message…';
    },
    clear() {
      answering?.abort();
      history = [];
      ui.messages.replaceChildren();
    },
  };
}

/**
 * The answer as text pieces: through the OpenAI-compatible chat API when the model has a chat template,
 * else (base models) through generate() on a plain-text transcript.
 */
async function* answerStream(
  eng: IntabEngine,
  messages: ConversationMessage[],
  s: Sampling,
  tools: { tools: FunctionTool[]; toolChoice: ToolChoiceParam | undefined } | undefined,
  signal: AbortSignal,
): AsyncGenerator<{ text?: string; toolCalls?: ToolCallDeltaParam[]; finish?: string; tokens?: number; prompt?: number; cached?: number }> {
  const schema = s.schema === undefined ? undefined : parseSchema(s.schema);
  if (eng.info.hasChatTemplate) {
    // A long conversation drops its oldest turns (never the system prompt) rather than outgrowing the context; a
    // max_tokens past the context is clamped by the engine, so the answer ends with 'length' there.
    const stream = await eng.chat.completions.create(
      {
        messages, stream: true, stream_options: { include_usage: true }, temperature: s.temperature, top_p: s.topP, top_k: s.topK, max_tokens: s.maxTokens, seed: s.seed, truncate: 'oldest',
        response_format: schema === undefined ? undefined : { type: 'json_schema', json_schema: { name: 'answer', schema } },
        tools: tools?.tools, tool_choice: tools?.toolChoice,
      },
      { signal },
    );
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      const u = chunk.usage;
      yield { text: choice?.delta?.content ?? undefined, toolCalls: choice?.delta?.tool_calls, finish: choice?.finish_reason ?? undefined, tokens: u?.completion_tokens, prompt: u?.prompt_tokens, cached: u?.prompt_tokens_details?.cached_tokens };
    }
    return;
  }
  const prompt = `${messages.map((m) => transcriptLine({ role: m.role, content: m.content ?? '' })).join('\n')}\nAssistant:`;
  let tokens = 0;
  const { schema: _, ...sampling } = s;
  const responseFormat = schema === undefined ? undefined : { type: 'json_schema' as const, schema };
  for await (const chunk of eng.generate({ prompt, stop: ['\nUser:'], ...sampling, responseFormat }, { signal })) {
    tokens += chunk.ids.length;
    const m = chunk.metrics;
    yield { text: chunk.text, finish: chunk.finishReason ?? undefined, tokens, prompt: m?.promptTokens, cached: m?.cachedTokens };
    // generate() ends a failed request with a last chunk that carries the error (a lost GPU device...), after its text.
    if (chunk.error) throw chunk.error;
  }
}

/** The `schema` option's JSON text, parsed (the engine checks it is a schema it can enforce). */
function parseSchema(text: string): Record<string, unknown> | boolean {
  try {
    return JSON.parse(text) as Record<string, unknown> | boolean;
  } catch (err) {
    throw new InvalidRequestError('schema', text, `a JSON Schema as JSON text (${(err as Error).message})`);
  }
}

/** One message of the plain-text transcript a model without a chat template gets. */
export function transcriptLine(m: ChatMessage): string {
  return `${m.role[0].toUpperCase()}${m.role.slice(1)}: ${m.content}`;
}

/**
 * Pins a system prompt in the prefix cache (releasing `previous`), in the form the answers start with (the chat
 * template's system message, with the page's `tools` where it has some: the template renders them there; or the
 * transcript's first line), and saves it for the next visit. Best effort: a failure only costs speed, so it is logged
 * and undefined is returned.
 */
export async function preloadSystemPrompt(engine: IntabEngine, text: string, previous?: Preloaded, tools?: FunctionTool[]): Promise<Preloaded | undefined> {
  await previous?.release();
  // Without a prefix cache (createEngine({ prefixCache: false })), the system prompt goes with each request instead.
  if (!text || !engine.info.prefixCache) return undefined;
  try {
    const system: ChatMessage[] = [{ role: 'system', content: text }];
    const handle = await engine.preload(engine.info.hasChatTemplate ? { messages: system, ...(tools?.length ? { tools } : {}) } : { prompt: transcriptLine(system[0]) });
    await engine.saveCache().catch((err: Error) => console.warn(`The prefix cache was not saved: ${err.message}`));
    return handle;
  } catch (err) {
    console.warn(`The system prompt was not preloaded: ${(err as Error).message}`);
    return undefined;
  }
}

/** What loading is doing: downloading (with speed and time left), verifying the stored copy, or uploading to the GPU. */
export function describeProgress(p: LoadProgress): string {
  const mib = (n: number) => (n / 2 ** 20).toFixed(0);
  const of = `${mib(p.loaded)} / ${mib(p.total)} MiB`;
  if (p.phase === 'download') {
    const speed = p.bytesPerSecond ? `, ${(p.bytesPerSecond / 2 ** 20).toFixed(1)} MiB/s` : '';
    const eta = p.etaSeconds !== undefined && Number.isFinite(p.etaSeconds) ? `, ${Math.ceil(p.etaSeconds)} s left` : '';
    return `downloading ${of}${speed}${eta}`;
  }
  if (p.phase === 'verify') return `verifying the stored copy ${of}`;
  return `loading to the GPU ${of}`;
}

/**
 * The line under the status that says whether the engine is shared with the origin's other tabs (createEngine's
 * `share: 'origin'`): "Shared with N other tabs" while others use it, kept current as tabs come and go (read every 2 s
 * from engine.stats()), until `current()` says this engine was replaced; and why not, when the engine could not be
 * shared. Nothing for an engine that was not asked to share.
 */
export function followSharing(engine: IntabEngine, el: HTMLElement, current: () => boolean): void {
  const share = engine.info.share;
  el.hidden = share === undefined;
  if (share === undefined) return;
  if (share.mode === 'own') {
    el.textContent = `This tab's own engine: ${share.reason}.`;
    return;
  }
  const show = async () => {
    if (!current()) return void clearInterval(timer);
    const s = (await engine.stats().catch(() => undefined))?.share;
    if (!s || !current()) return;
    const others = s.sessions - 1;
    el.textContent = others > 0 ? `Shared with ${others} other tab${others === 1 ? '' : 's'} of this site: one copy of the model (${(s.bytesHeld / 2 ** 20).toFixed(0)} MiB) instead of ${s.sessions}.` : "Shared with this site's other tabs as they open: they will use this copy of the model.";
  };
  const timer = setInterval(() => void show(), 2000);
  void show();
}

/** The status line's note on where the model came from: the model store, and the prefix cache restored. */
export function originNote(engine: IntabEngine): string {
  const info = engine.info;
  let note = '';
  if (info.store) note += info.store.downloaded ? ` · downloaded ${(info.store.downloaded / 2 ** 20).toFixed(0)} MiB into the model store` : ' · from the model store (verified)';
  if (info.restored) note += ` · ${info.restored.tokens} cached tokens restored from the last visit`;
  for (const w of info.warnings ?? []) console.warn(w);
  return note;
}
