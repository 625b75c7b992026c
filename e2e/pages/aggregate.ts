// The page e2e/aggregate-reload.spec.ts drives: it streams stories260K's greedy answer through aggregate() into
// IndexedDB and shows it at a reader's pace (ms per chunk: backpressure holds the engine meanwhile), and when it opens
// it shows every stored response (responses.list / get) with its status, so a reload mid-answer shows what was kept.

import { aggregate, createEngine, responses, toReadableStream, type Chunk, type IntabEngine } from '../../packages/intab/src/index.ts';

const MODEL = new URL(`/@fs${import.meta.env.INTAB_SHARED}/models/stories260K/stories260K-vocab-ud.gguf`, location.href).href;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  prompt: $<HTMLInputElement>('prompt'),
  maxTokens: $<HTMLInputElement>('max-tokens'),
  pace: $<HTMLInputElement>('pace'),
  start: $<HTMLButtonElement>('start'),
  status: $<HTMLDivElement>('status'),
  answer: $<HTMLDivElement>('answer'),
  records: $<HTMLOListElement>('records'),
};

let engine: Promise<IntabEngine> | undefined;

async function showStored(): Promise<void> {
  for (const header of await responses.list()) {
    const r = await responses.get(header.id);
    if (!r) continue;
    const li = document.createElement('li');
    li.className = 'record';
    Object.assign(li.dataset, { id: r.id, status: r.status, complete: String(r.complete) });
    li.textContent = r.text;
    ui.records.append(li);
  }
  ui.records.dataset.ready = 'true';
}

async function answer(): Promise<void> {
  ui.start.disabled = true;
  delete ui.answer.dataset.done;
  ui.answer.textContent = '';
  const prompt = ui.prompt.value;
  const maxTokens = Number(ui.maxTokens.value);
  const pace = Number(ui.pace.value);
  ui.status.textContent = 'Loading stories260K…';
  engine ??= createEngine({ model: MODEL, backend: 'webgpu', cache: false });
  const eng = await engine;
  ui.status.textContent = 'Answering…';
  const stream = aggregate<Chunk>({ model: 'stories260K', request: { prompt, maxTokens } });
  ui.answer.dataset.id = stream.id;
  let text = '';
  for await (const chunk of toReadableStream(eng.generate({ prompt, maxTokens, temperature: 0, ignoreEos: true })).pipeThrough(stream)) {
    text += chunk.text;
    ui.answer.textContent = text;
    if (pace > 0) await new Promise((r) => setTimeout(r, pace));
  }
  ui.answer.dataset.done = 'true';
  ui.status.textContent = 'Done.';
  ui.start.disabled = false;
}

ui.start.onclick = () =>
  void answer().catch((err: Error) => {
    ui.status.textContent = `${err.name}: ${err.message}`;
    throw err;
  });
void showStored();
