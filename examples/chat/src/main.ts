// The demo chat page: loads a model into a Web Worker (never blocking this thread), then streams chat
// completions through intab's OpenAI-compatible API, with a stop button, a system prompt, sampling
// settings, a multi-turn history, load progress, and TTFT / tok/s per answer. The system prompt is
// preloaded into the prefix cache (and saved, so the next visit restores it), and each answer says how
// many of its prompt tokens came from the cache: earlier turns are never prefilled twice. A model loaded by
// id or URL goes into the model store (downloading / verifying / from the store, in the status line).

import { createEngine, type ChatMessage, type IntabEngine, type LoadProgress, type Preloaded } from 'intab';

/** Used when the visitor is online and picks nothing: a small real instruct model (README says which). */
const DEFAULT_MODEL = 'HuggingFaceTB/SmolLM2-135M-Instruct';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  modelId: $<HTMLInputElement>('model-id'),
  modelFile: $<HTMLInputElement>('model-file'),
  loadRemote: $<HTMLButtonElement>('load-remote'),
  drop: $<HTMLDivElement>('drop'),
  localFiles: $<HTMLInputElement>('local-files'),
  quantize: $<HTMLSelectElement>('quantize'),
  progress: $<HTMLProgressElement>('progress'),
  status: $<HTMLDivElement>('model-status'),
  system: $<HTMLTextAreaElement>('system'),
  temperature: $<HTMLInputElement>('temperature'),
  topP: $<HTMLInputElement>('top-p'),
  topK: $<HTMLInputElement>('top-k'),
  maxTokens: $<HTMLInputElement>('max-tokens'),
  seed: $<HTMLInputElement>('seed'),
  messages: $<HTMLDivElement>('messages'),
  composer: $<HTMLFormElement>('composer'),
  input: $<HTMLTextAreaElement>('input'),
  send: $<HTMLButtonElement>('send'),
  stop: $<HTMLButtonElement>('stop'),
  clear: $<HTMLButtonElement>('clear'),
};

let engine: IntabEngine | undefined;
let history: ChatMessage[] = [];
/** The system prompt pinned in the prefix cache, and its text. */
let preloaded: { text: string; handle: Preloaded } | undefined;
let answering: AbortController | undefined;
let loading: AbortController | undefined;

ui.modelId.value = new URLSearchParams(location.search).get('model') ?? DEFAULT_MODEL;

// ---- loading ----

type ModelInput = Parameters<typeof createEngine>[0]['model'];

async function load(model: ModelInput, label: string): Promise<void> {
  loading?.abort();
  const controller = (loading = new AbortController());
  ui.progress.hidden = false;
  ui.progress.value = 0;
  setReady(false);
  ui.status.textContent = `Loading ${label}…`;
  const previous = engine;
  engine = undefined;
  await previous?.destroy();
  try {
    const t0 = performance.now();
    engine = await createEngine(
      {
        model,
        quantize: (ui.quantize.value || undefined) as 'q8_0' | 'q4_0' | undefined,
        onProgress: (p) => {
          ui.progress.value = p.total ? p.loaded / p.total : 0;
          ui.status.textContent = `${label}: ${describeProgress(p)}`;
        },
      },
      { signal: controller.signal },
    );
    const info = engine.info;
    ui.status.textContent = `${label} — ${info.arch}, ${info.layers} layers, ${(info.weightBytes / 2 ** 20).toFixed(0)} MiB, loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s on ${info.adapter || 'WebGPU'}`;
    if (!info.hasChatTemplate) ui.status.textContent += ' (no chat template: the conversation is sent as a plain-text transcript)';
    if (info.store) ui.status.textContent += info.store.downloaded ? ` · downloaded ${(info.store.downloaded / 2 ** 20).toFixed(0)} MiB into the model store` : ' · from the model store (verified)';
    if (info.restored) ui.status.textContent += ` · ${info.restored.tokens} cached tokens restored from the last visit`;
    for (const w of info.warnings ?? []) console.warn(w);
    preloaded = undefined;
    setReady(true);
    await preloadSystem();
  } catch (err) {
    if (controller.signal.aborted) return;
    ui.status.textContent = `Could not load ${label}: ${(err as Error).message}`;
  } finally {
    ui.progress.hidden = true;
  }
}

/** What loading is doing: downloading (with speed and time left), verifying the stored copy, or uploading to the GPU. */
function describeProgress(p: LoadProgress): string {
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

ui.loadRemote.onclick = () => {
  const id = ui.modelId.value.trim();
  const file = ui.modelFile.value.trim();
  if (!id) return;
  void load(file ? { id, file } : id, id);
};

ui.localFiles.onchange = () => {
  const files = [...(ui.localFiles.files ?? [])];
  if (files.length) void load(files.length === 1 ? files[0] : files, files.length === 1 ? files[0].name : `${files.length} files`);
};

ui.drop.ondragover = (e) => {
  e.preventDefault();
  ui.drop.classList.add('over');
};
ui.drop.ondragleave = () => ui.drop.classList.remove('over');
ui.drop.ondrop = async (e) => {
  e.preventDefault();
  ui.drop.classList.remove('over');
  const files = await droppedFiles(e.dataTransfer);
  if (files.length) void load(files.length === 1 ? files[0] : files, files.length === 1 ? files[0].name : `${files.length} files`);
};

/** Files of a drop, descending into dropped folders (a Hugging Face model folder). */
async function droppedFiles(dt: DataTransfer | null): Promise<File[]> {
  if (!dt) return [];
  const entries = [...dt.items].map((i) => i.webkitGetAsEntry()).filter((e): e is FileSystemEntry => e !== null);
  const out: File[] = [];
  const walk = async (entry: FileSystemEntry): Promise<void> => {
    if (entry.isFile) {
      out.push(await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej)));
    } else if (entry.isDirectory) {
      const reader = (entry as FileSystemDirectoryEntry).createReader();
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const child of batch) await walk(child);
      }
    }
  };
  for (const e of entries) await walk(e);
  return out.length ? out : [...dt.files];
}

// ---- the system prompt, preloaded ----

/**
 * Pins the system prompt in the prefix cache (releasing the previous one), so every answer prefills only what
 * follows it, and saves it for the next visit. Best effort: a failure only costs speed.
 */
async function preloadSystem(): Promise<void> {
  const eng = engine;
  const text = ui.system.value.trim();
  if (!eng || preloaded?.text === text) return;
  const old = preloaded;
  preloaded = undefined;
  await old?.handle.release();
  if (!text) return;
  try {
    // The same text the answers start with: the chat template's system message, or the transcript's first line.
    const handle = await eng.preload(eng.info.hasChatTemplate ? { messages: [{ role: 'system', content: text }] } : { prompt: transcriptLine({ role: 'system', content: text }) });
    if (eng !== engine) return;
    preloaded = { text, handle };
    ui.system.title = `Preloaded: ${handle.tokens} tokens${handle.cachedTokens ? ` (${handle.cachedTokens} already cached)` : ''}, ${handle.ms.toFixed(0)} ms`;
    await eng.saveCache().catch((err: Error) => console.warn(`The prefix cache was not saved: ${err.message}`));
  } catch (err) {
    console.warn(`The system prompt was not preloaded: ${(err as Error).message}`);
  }
}

ui.system.onchange = () => void preloadSystem();

// ---- chatting ----

function setReady(ready: boolean): void {
  ui.input.disabled = !ready;
  ui.send.disabled = !ready;
  ui.input.placeholder = ready ? 'Type a message… (Enter to send, Shift+Enter for a new line)' : 'Load a model, then type a message…';
}

function addMessage(role: string, text: string): { body: HTMLDivElement; stats: HTMLDivElement; root: HTMLDivElement } {
  const root = document.createElement('div');
  root.className = `msg ${role}`;
  root.innerHTML = '<div class="who"></div><div class="body"></div><div class="stats"></div>';
  root.querySelector('.who')!.textContent = role;
  const body = root.querySelector<HTMLDivElement>('.body')!;
  body.textContent = text;
  ui.messages.append(root);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return { body, stats: root.querySelector<HTMLDivElement>('.stats')!, root };
}

ui.input.onkeydown = (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    ui.composer.requestSubmit();
  }
};

ui.composer.onsubmit = async (e) => {
  e.preventDefault();
  const text = ui.input.value.trim();
  if (!text || !engine || answering) return;
  ui.input.value = '';
  history.push({ role: 'user', content: text });
  addMessage('user', text);
  const out = addMessage('assistant', '');
  const controller = (answering = new AbortController());
  ui.send.hidden = true;
  ui.stop.hidden = false;
  const num = (input: HTMLInputElement) => (input.value === '' ? undefined : Number(input.value));
  const system = ui.system.value.trim();
  const messages: ChatMessage[] = system ? [{ role: 'system', content: system }, ...history] : [...history];
  const t0 = performance.now();
  let tFirst = 0;
  let answer = '';
  let tokens = 0;
  let finish: string | null = null;
  let usage: { prompt: number; cached: number } | undefined;
  const sampling = { temperature: num(ui.temperature), topP: num(ui.topP), topK: num(ui.topK), maxTokens: num(ui.maxTokens), seed: num(ui.seed) };
  try {
    for await (const piece of answerStream(engine, messages, sampling, controller.signal)) {
      if (piece.text) {
        tFirst ||= performance.now();
        answer += piece.text;
        out.body.textContent = answer;
        ui.messages.scrollTop = ui.messages.scrollHeight;
      }
      if (piece.finish) finish = piece.finish;
      if (piece.tokens !== undefined) tokens = piece.tokens;
      if (piece.prompt !== undefined) usage = { prompt: piece.prompt, cached: piece.cached ?? 0 };
    }
  } catch (err) {
    if (!controller.signal.aborted) {
      out.root.classList.add('error');
      out.body.textContent = `${answer}\n[${(err as Error).name}: ${(err as Error).message}]`;
    }
  } finally {
    const tEnd = performance.now();
    const stopped = controller.signal.aborted;
    if (answer) history.push({ role: 'assistant', content: answer });
    const decodeS = tFirst ? (tEnd - tFirst) / 1000 : 0;
    out.stats.textContent = [
      tFirst ? `TTFT ${(tFirst - t0).toFixed(0)} ms` : '',
      tokens > 1 && decodeS > 0 ? `${((tokens - 1) / decodeS).toFixed(1)} tok/s` : '',
      tokens ? `${tokens} tokens` : '',
      usage ? `cached ${usage.cached} of ${usage.prompt} prompt tokens` : '',
      stopped ? 'stopped' : finish === 'length' ? 'max tokens reached' : '',
    ]
      .filter(Boolean)
      .join(' · ');
    answering = undefined;
    ui.send.hidden = false;
    ui.stop.hidden = true;
    ui.input.focus();
  }
};

ui.stop.onclick = () => answering?.abort();

interface Sampling {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxTokens?: number;
  seed?: number;
}

/**
 * The answer as text pieces: through the OpenAI-compatible chat API when the model has a chat template,
 * else (base models) through generate() on a plain-text transcript.
 */
async function* answerStream(
  eng: IntabEngine,
  messages: ChatMessage[],
  s: Sampling,
  signal: AbortSignal,
): AsyncGenerator<{ text?: string; finish?: string; tokens?: number; prompt?: number; cached?: number }> {
  if (eng.info.hasChatTemplate) {
    const stream = await eng.chat.completions.create(
      { messages, stream: true, stream_options: { include_usage: true }, temperature: s.temperature, top_p: s.topP, top_k: s.topK, max_tokens: s.maxTokens, seed: s.seed },
      { signal },
    );
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      const u = chunk.usage;
      yield { text: choice?.delta?.content ?? undefined, finish: choice?.finish_reason ?? undefined, tokens: u?.completion_tokens, prompt: u?.prompt_tokens, cached: u?.prompt_tokens_details?.cached_tokens };
    }
    return;
  }
  const prompt = `${messages.map(transcriptLine).join('\n')}\nAssistant:`;
  let tokens = 0;
  for await (const chunk of eng.generate({ prompt, stop: ['\nUser:'], ...s }, { signal })) {
    tokens += chunk.ids.length;
    const m = chunk.metrics;
    yield { text: chunk.text, finish: chunk.finishReason ?? undefined, tokens, prompt: m?.promptTokens, cached: m?.cachedTokens };
  }
}

/** One message of the plain-text transcript a model without a chat template gets. */
function transcriptLine(m: ChatMessage): string {
  return `${m.role[0].toUpperCase()}${m.role.slice(1)}: ${m.content}`;
}

ui.clear.onclick = () => {
  answering?.abort();
  history = [];
  ui.messages.replaceChildren();
};
