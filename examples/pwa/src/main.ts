// The installable offline assistant: a chat over a model kept in the model store (downloaded once, verified at
// every load), the app shell precached by the Service Worker (sw.ts), and this tab answering the site's
// OpenAI-compatible /v1 endpoint, which the Service Worker relays here. `?model=<url>` loads that model at once,
// from the store when it is there; the stored models are listed with their sizes, to load or delete. The assistant
// calls tools (assistant-tools.ts: a calculator, the clock, the user's notes), shown in the conversation, and asks
// before any call that changes data; `?tool_choice=required` (or a tool's name) makes the first reply a call.
// Notes (notes-panel.ts) are added by hand or by the assistant, and searched by keywords, or by meaning once an
// embedding model is loaded (`?embed=<url>`, kept in the model store too); an answer lists under it, as "Sources", the
// notes its searches returned.

import '@intab/example-chat/style.css';
import './pwa.css';
import { createEngine, modelStore, serveOpenAI, type Backend, type IntabEngine, type Preloaded } from 'intab';
import { chatView, describeProgress, followSharing, originNote, preloadSystemPrompt } from '@intab/example-chat/chat-view';
import { parseToolChoiceParam, type ToolChoiceParam } from '@intab/example-chat/tool-calls';
import { assistantTools, runToolCall, type AssistantTool } from './assistant-tools.ts';
import { noteIndex, type Passage } from './note-index.ts';
import { notesPanel } from './notes-panel.ts';
import { openNotes } from './notes.ts';
import { registerServiceWorker } from './register-sw.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  modelUrl: $<HTMLInputElement>('model-url'),
  load: $<HTMLButtonElement>('load'),
  progress: $<HTMLProgressElement>('progress'),
  status: $<HTMLDivElement>('model-status'),
  shareStatus: $<HTMLDivElement>('share-status'),
  stored: $<HTMLUListElement>('stored'),
  storage: $<HTMLDivElement>('storage'),
  system: $<HTMLTextAreaElement>('system'),
  temperature: $<HTMLInputElement>('temperature'),
  maxTokens: $<HTMLInputElement>('max-tokens'),
  useTools: $<HTMLInputElement>('use-tools'),
  toolsStatus: $<HTMLDivElement>('tools-status'),
  notes: $<HTMLUListElement>('notes'),
  notesStatus: $<HTMLDivElement>('notes-status'),
  embedUrl: $<HTMLInputElement>('embed-url'),
  embedLoad: $<HTMLButtonElement>('embed-load'),
  embedProgress: $<HTMLProgressElement>('embed-progress'),
  embedStatus: $<HTMLDivElement>('embed-status'),
  noteForm: $<HTMLFormElement>('note-form'),
  noteTitle: $<HTMLInputElement>('note-title'),
  noteText: $<HTMLTextAreaElement>('note-text'),
  noteFile: $<HTMLInputElement>('note-file'),
  noteError: $<HTMLDivElement>('note-error'),
  notesSearch: $<HTMLInputElement>('notes-search'),
  notesFound: $<HTMLOListElement>('notes-found'),
  apiStatus: $<HTMLDivElement>('api-status'),
  messages: $<HTMLDivElement>('messages'),
  composer: $<HTMLFormElement>('composer'),
  input: $<HTMLTextAreaElement>('input'),
  send: $<HTMLButtonElement>('send'),
  stop: $<HTMLButtonElement>('stop'),
  clear: $<HTMLButtonElement>('clear'),
};

let engine: IntabEngine | undefined;
let stopServing: (() => void) | undefined;
let preloaded: Preloaded | undefined;
let loading: AbortController | undefined;

// ?schema=<JSON Schema> makes every answer follow it (structured output, enforced token by token); kept across reloads.
const SCHEMA = new URLSearchParams(location.search).get('schema') ?? undefined;
const num = (input: HTMLInputElement) => (input.value === '' ? undefined : Number(input.value));

// ---- tools ----

const notes = await openNotes();
const index = noteIndex(notes);
/** The passages this answer's searches returned (its sources), reset at each message. */
let cited: Passage[] = [];
const tools = assistantTools({ notes, searchByMeaning: (query, k) => index.search(query, k), cite: (found) => cited.push(...found) });
// ?schema= shapes every answer as JSON: then there are no tools (a reply is either calls or text).
const toolDefinitions = () => (ui.useTools.checked && SCHEMA === undefined ? tools.map((t) => t.definition) : undefined);
/**
 * ?tool_choice=required (or auto, none, or a tool's name: calculator, get_current_time, search_notes, save_note) is the
 * tool_choice of the first reply to each message: 'required' makes it a call (the rounds after are 'auto'). Kept
 * across reloads, as ?model= is.
 */
let toolChoiceProblem = '';
const TOOL_CHOICE = ((): ToolChoiceParam | undefined => {
  try {
    return parseToolChoiceParam(new URLSearchParams(location.search).get('tool_choice'), tools.map((t) => t.definition));
  } catch (err) {
    toolChoiceProblem = ` · ?tool_choice= was ignored: ${(err as Error).message}`;
    return undefined;
  }
})();

const view = chatView(ui, {
  engine: () => engine,
  system: () => ui.system.value,
  sampling: () => ({ temperature: num(ui.temperature), maxTokens: num(ui.maxTokens), schema: SCHEMA }),
  tools: {
    definitions: toolDefinitions,
    firstChoice: () => TOOL_CHOICE,
    run: async (call, box, signal) => {
      const ask = (tool: AssistantTool, args: Record<string, unknown>) => box.confirm(tool.confirmation?.(args) ?? `Allow ${tool.definition.function.name} to change your data?`, signal);
      try {
        return await runToolCall(call, tools, ask);
      } finally {
        // save_note may have added one: list it, and embed it for the next search.
        void panel.showNotes().then(panel.indexNotes);
      }
    },
  },
});
ui.clear.onclick = () => view.clear();
// A message's whole answer (every round of calls) is one run of the view's submit handler: around it, this page
// collects what search_notes returned and then cites it under the answer.
const answerMessage = ui.composer.onsubmit!;
let inTurn = false;
ui.composer.onsubmit = async (e) => {
  // A message sent while an answer runs is ignored by the view: it must not take that answer's sources.
  if (inTurn) return answerMessage.call(ui.composer, e);
  inTurn = true;
  cited = [];
  try {
    await answerMessage.call(ui.composer, e);
  } finally {
    inTurn = false;
    panel.showSources(ui.messages, cited);
  }
};
ui.useTools.onchange = async () => {
  showToolsStatus();
  if (engine) preloaded = await preloadSystemPrompt(engine, ui.system.value.trim(), preloaded, toolDefinitions());
};

/** Which tools the model gets, and how it writes calls. */
function showToolsStatus(): void {
  const info = engine?.info;
  const names = tools.map((t) => `${t.definition.function.name}${t.changesData ? ' (asks you first)' : ''}`).join(', ');
  const first = TOOL_CHOICE ? ` · first reply: tool_choice ${JSON.stringify(TOOL_CHOICE)}` : '';
  let text: string;
  if (!ui.useTools.checked) text = 'Tools are off.';
  else if (SCHEMA !== undefined) text = 'Tools are off while ?schema= shapes every answer.';
  else if (!info) text = `Tools: ${names}.`;
  else if (!info.hasChatTemplate) text = 'This model has no chat template: it cannot call tools.';
  else text = `Tools: ${names} · the model writes calls in the ${info.toolFormat ?? 'generic'} format${first}.`;
  ui.toolsStatus.textContent = text + toolChoiceProblem;
}

/** A row of a list of things kept on this device: its name (as text, `title` on hover), then its buttons. */
function storedRow(text: string, title: string, buttons: Record<string, () => unknown>): HTMLLIElement {
  const li = document.createElement('li');
  const name = document.createElement('span');
  name.textContent = text;
  name.title = title;
  li.append(name);
  for (const [label, onclick] of Object.entries(buttons)) {
    const button = document.createElement('button');
    button.textContent = label;
    button.className = 'secondary';
    button.onclick = () => void onclick();
    li.append(button);
  }
  return li;
}

/** What runs the models: ?backend= (webgpu, onnx-wasm, onnx-webgpu), else 'auto'; kept across reloads with ?model=. */
const BACKEND = ((b) => (b === 'webgpu' || b === 'onnx-wasm' || b === 'onnx-webgpu' ? b : 'auto'))(new URLSearchParams(location.search).get('backend')) as Backend;

// ---- notes ----

const panel = notesPanel(ui, { notes, index, backend: BACKEND, row: storedRow, onModelsChanged: () => void showStored() });

// ---- the model ----

async function load(model: string): Promise<void> {
  loading?.abort();
  const controller = (loading = new AbortController());
  view.setReady(false);
  stopServing?.();
  stopServing = undefined;
  const previous = engine;
  engine = undefined;
  await previous?.destroy();
  ui.progress.hidden = false;
  ui.progress.value = 0;
  ui.status.textContent = `Loading ${model}…`;
  try {
    const loaded = await createEngine(
      {
        model,
        backend: BACKEND,
        // One engine for every window of the assistant: a second window answers at once, without loading.
        share: 'origin',
        onProgress: (p) => {
          ui.progress.value = p.total ? p.loaded / p.total : 0;
          ui.status.textContent = describeProgress(p);
        },
      },
      { signal: controller.signal },
    );
    if (controller.signal.aborted) return void loaded.destroy();
    if (loaded.info.embedding) {
      // An embedding model (say, picked from the stored models) is for the notes, not the chat.
      await loaded.destroy();
      ui.status.textContent = `${model} is an embedding model: it now searches the notes. Load a chat model to talk.`;
      void panel.loadEmbedder(model);
      return;
    }
    engine = loaded;
    const info = loaded.info;
    ui.status.textContent = `${loaded.model} — ${info.arch}, ${info.layers} layers, on ${info.backend.name}${originNote(loaded)}`;
    ui.status.title = info.backend.reason;
    followSharing(loaded, ui.shareStatus, () => engine === loaded);
    stopServing = serveOpenAI(loaded, { onRequest: (e) => api.request(e) });
    showToolsStatus();
    view.setReady(true);
    // A reload (offline too) loads the same model.
    const url = new URL(location.href);
    url.searchParams.set('model', model);
    history.replaceState(null, '', url);
    preloaded = await preloadSystemPrompt(loaded, ui.system.value.trim(), preloaded, toolDefinitions());
  } catch (err) {
    if (!controller.signal.aborted) ui.status.textContent = `Could not load ${model}: ${(err as Error).message}`;
  } finally {
    ui.progress.hidden = true;
    void showStored();
  }
}

ui.load.onclick = () => {
  const model = ui.modelUrl.value.trim();
  if (model) void load(model);
};
ui.system.onchange = async () => {
  if (engine) preloaded = await preloadSystemPrompt(engine, ui.system.value.trim(), preloaded, toolDefinitions());
};

/** The models on this device, with sizes, to load or delete; and what the browser says of the storage. */
async function showStored(): Promise<void> {
  const models = await modelStore.list();
  ui.stored.replaceChildren(
    ...models.map((m) =>
      storedRow(`${m.id} · ${(m.bytes / 2 ** 20).toFixed(1)} MiB${m.complete ? '' : ' (partial)'}`, `last used ${new Date(m.lastUsed).toLocaleString()}`, {
        // An embedding model goes to the notes (load() hands one over too).
        [m.complete ? 'Load' : 'Resume']: () => load(m.files.length === 1 ? m.files[0].url : m.id.split('@')[0]),
        Delete: async () => {
          await modelStore.delete(m.id);
          void showStored();
        },
      }),
    ),
  );
  const usage = await modelStore.usage();
  ui.storage.textContent =
    `${models.length} model${models.length === 1 ? '' : 's'}, ${(usage.bytes / 2 ** 20).toFixed(1)} MiB` +
    (usage.quota ? ` of ${(usage.quota / 2 ** 30).toFixed(1)} GiB allowed` : '') +
    (usage.persisted === true ? ' · kept until you delete them' : usage.persisted === false ? ' · the browser may clear them when space runs low' : '');
}

// ---- the endpoint's figures ----

/** Requests the Service Worker relayed here: served, in flight, the most at once, and the engine's own view. */
const api = {
  served: 0,
  inFlight: 0,
  peak: 0,
  peakRunning: 0,
  timer: undefined as ReturnType<typeof setInterval> | undefined,
  request(e: 'start' | 'end') {
    if (e === 'start') this.inFlight++;
    else {
      this.inFlight--;
      this.served++;
    }
    this.peak = Math.max(this.peak, this.inFlight);
    this.timer ??= setInterval(() => void this.show(), 100);
    void this.show();
  },
  async show() {
    const s = await engine?.stats();
    if (s) this.peakRunning = Math.max(this.peakRunning, s.running);
    ui.apiStatus.textContent =
      `Endpoint: ${this.served} served · ${this.inFlight} in flight (most at once: ${this.peak})` +
      (s ? ` · engine: ${s.running} running (most at once: ${this.peakRunning}), ${s.availablePages} of ${s.totalPages} KV pages available` : '');
    if (this.inFlight === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  },
};

// ---- start ----

void (async () => {
  view.setReady(false);
  await registerServiceWorker().catch((err: Error) => console.warn(`The Service Worker was not registered: ${err.message}`));
  const params = new URLSearchParams(location.search);
  const model = params.get('model');
  const embed = params.get('embed');
  showToolsStatus();
  await Promise.all([showStored(), panel.showNotes()]);
  if (model) ui.modelUrl.value = model;
  await Promise.all([model ? load(model) : undefined, embed ? panel.loadEmbedder(embed) : undefined]);
})();
