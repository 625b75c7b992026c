// The demo chat page: loads a model into a Web Worker (never blocking this thread), then streams chat
// completions through intab's OpenAI-compatible API, with a stop button, a system prompt, sampling
// settings, a multi-turn history, load progress, and TTFT / tok/s per answer. The system prompt is
// preloaded into the prefix cache (and saved, so the next visit restores it), and each answer says how
// many of its prompt tokens came from the cache: earlier turns are never prefilled twice. A model loaded by
// id or URL goes into the model store (downloading / verifying / from the store, in the status line). The backend
// select (or ?backend=) picks intab's WebGPU kernels or onnxruntime-web; 'auto' takes ORT's wasm where WebGPU is
// missing or software-only, and there, with no prefix cache, the system prompt is simply sent with each request.
// `?tools=` (a URL-encoded JSON list of OpenAI tools) sends those tools with every message, and `?tool_choice=` (auto,
// none, required or a tool's name) the first reply's choice: the model's calls show as they stream (the name, then
// the arguments growing); this page runs none of them (each is answered "not run"), the offline assistant does.

import { createEngine, type Backend, type IntabEngine, type Preloaded } from 'intab';
import { chatView, describeProgress, followSharing, originNote, preloadSystemPrompt } from './chat-view.ts';
import { parseToolChoiceParam, parseToolsParam } from './tool-calls.ts';

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
  backend: $<HTMLSelectElement>('backend'),
  progress: $<HTMLProgressElement>('progress'),
  status: $<HTMLDivElement>('model-status'),
  shareStatus: $<HTMLDivElement>('share-status'),
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
/** The system prompt pinned in the prefix cache, and its text. */
let preloaded: { text: string; handle?: Preloaded } | undefined;
let loading: AbortController | undefined;

// ?schema=<JSON Schema> makes every answer follow it (structured output, enforced token by token).
const SCHEMA = new URLSearchParams(location.search).get('schema') ?? undefined;
// ?tools=<JSON list> and ?tool_choice=: read at each message, so a bad one is that answer's error (as ?schema= is).
const TOOLS = new URLSearchParams(location.search).get('tools');
const TOOL_CHOICE = new URLSearchParams(location.search).get('tool_choice');
const num = (input: HTMLInputElement) => (input.value === '' ? undefined : Number(input.value));
const view = chatView(ui, {
  engine: () => engine,
  system: () => ui.system.value,
  sampling: () => ({ temperature: num(ui.temperature), topP: num(ui.topP), topK: num(ui.topK), maxTokens: num(ui.maxTokens), seed: num(ui.seed), schema: SCHEMA }),
  tools: {
    definitions: () => parseToolsParam(TOOLS),
    firstChoice: () => parseToolChoiceParam(TOOL_CHOICE, parseToolsParam(TOOLS)),
  },
});
const setReady = view.setReady;

const params = new URLSearchParams(location.search);
ui.modelId.value = params.get('model') ?? DEFAULT_MODEL;
// ?backend=onnx-wasm (or webgpu, onnx-webgpu, auto) picks what runs the model, as the select does.
const asked = params.get('backend');
if (asked && [...ui.backend.options].some((o) => o.value === asked)) ui.backend.value = asked;

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
        backend: ui.backend.value as Backend,
        // One engine for every tab of this demo that loads the same model: a second tab answers at once.
        share: 'origin',
        // Quantizing is for intab's WebGPU kernels; onnxruntime runs the checkpoint's own weights.
        quantize: ui.backend.value.startsWith('onnx-') ? undefined : ((ui.quantize.value || undefined) as 'q8_0' | 'q4_0' | undefined),
        onProgress: (p) => {
          ui.progress.value = p.total ? p.loaded / p.total : 0;
          ui.status.textContent = `${label}: ${describeProgress(p)}`;
        },
      },
      { signal: controller.signal },
    );
    const info = engine.info;
    ui.status.textContent = `${label} — ${info.arch}, ${info.layers} layers, ${(info.weightBytes / 2 ** 20).toFixed(0)} MiB, loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s on ${info.backend.name} (${info.adapter || 'WebGPU'})`;
    ui.status.title = info.backend.reason;
    if (!info.hasChatTemplate) ui.status.textContent += ' (no chat template: the conversation is sent as a plain-text transcript)';
    ui.status.textContent += originNote(engine);
    followDevice(engine, ui.status.textContent);
    const loaded = engine;
    followSharing(loaded, ui.shareStatus, () => engine === loaded);
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

/**
 * A lost GPU device (a GPU-process crash, a driver reset) ends the answer in progress with a DeviceLostError (the
 * message shows it) and the engine reloads the model by itself: the status line says so, and what came of it.
 */
function followDevice(current: IntabEngine, loaded: string): void {
  const show = (text: string) => {
    if (engine === current) ui.status.textContent = text;
  };
  current.addEventListener('recovering', () => show('The GPU device was lost: reloading the model on a new device… (messages sent now wait for it)'));
  current.addEventListener('ready', (e) => show(`${loaded} · recovered from a lost GPU device in ${((e.detail.recoveryMs ?? 0) / 1000).toFixed(1)} s`));
  current.addEventListener('failed', (e) => show(`The GPU device was lost again: ${e.detail.error?.message ?? 'the engine stopped'} Load the model again to continue.`));
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

/** Pins the system prompt in the prefix cache (again when it changes), and saves it for the next visit. */
async function preloadSystem(): Promise<void> {
  const eng = engine;
  const text = ui.system.value.trim();
  if (!eng || preloaded?.text === text) return;
  const old = preloaded?.handle;
  preloaded = { text };
  // With ?tools=, the template renders them into the system message: that is the prefix to pin (a bad list: none).
  let tools;
  try {
    tools = SCHEMA === undefined ? parseToolsParam(TOOLS) : undefined;
  } catch {
    tools = undefined;
  }
  const handle = await preloadSystemPrompt(eng, text, old, tools);
  if (eng !== engine || preloaded?.text !== text) return void handle?.release();
  preloaded.handle = handle;
  if (handle) ui.system.title = `Preloaded: ${handle.tokens} tokens${handle.cachedTokens ? ` (${handle.cachedTokens} already cached)` : ''}, ${handle.ms.toFixed(0)} ms`;
}

ui.system.onchange = () => void preloadSystem();

// ---- chatting ----

ui.clear.onclick = () => view.clear();
