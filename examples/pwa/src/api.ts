// The API page: the official `openai` client, pointed at this site's /v1, which the Service Worker answers from the
// assistant's tab (the page holds no model). One or several clients at once, streaming or not, and an abort button;
// what each got is shown, and a summary (texts, finish reasons, times) as JSON in #result.

import '@intab/example-chat/style.css';
import './pwa.css';
import OpenAI from 'openai';
import { registerServiceWorker } from './register-sw.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  baseUrl: $<HTMLElement>('base-url'),
  prompt: $<HTMLTextAreaElement>('prompt'),
  maxTokens: $<HTMLInputElement>('max-tokens'),
  clients: $<HTMLInputElement>('clients'),
  stream: $<HTMLInputElement>('stream'),
  run: $<HTMLButtonElement>('run'),
  abort: $<HTMLButtonElement>('abort'),
  models: $<HTMLButtonElement>('models'),
  outputs: $<HTMLDivElement>('outputs'),
  result: $<HTMLPreElement>('result'),
};

const baseURL = `${location.origin}/v1`;
ui.baseUrl.textContent = baseURL;
// The key is not checked (the model is in a tab of this site); the client insists on one.
const client = new OpenAI({ baseURL, apiKey: 'intab', dangerouslyAllowBrowser: true, maxRetries: 0 });
let controller: AbortController | undefined;

ui.run.onclick = async () => {
  controller = new AbortController();
  const signal = controller.signal;
  const n = Math.max(1, Math.min(8, Number(ui.clients.value) || 1));
  const stream = ui.stream.checked;
  const body = { model: 'intab', messages: [{ role: 'user' as const, content: ui.prompt.value }], max_tokens: Number(ui.maxTokens.value) || 64, temperature: 0 };
  const outputs = Array.from({ length: n }, () => Object.assign(document.createElement('div'), { className: 'output' }));
  ui.outputs.replaceChildren(...outputs);
  ui.result.textContent = 'running…';
  ui.run.disabled = true;
  ui.abort.disabled = false;
  const t0 = performance.now();
  const one = async (out: HTMLDivElement) => {
    try {
      if (stream) {
        const s = await client.chat.completions.create({ ...body, stream: true }, { signal });
        let finish: string | null = null;
        for await (const chunk of s) {
          out.textContent += chunk.choices[0]?.delta?.content ?? '';
          finish = chunk.choices[0]?.finish_reason ?? finish;
        }
        return { text: out.textContent ?? '', finish };
      }
      const c = await client.chat.completions.create(body, { signal });
      out.textContent = c.choices[0].message.content ?? '';
      return { text: out.textContent, finish: c.choices[0].finish_reason, usage: c.usage };
    } catch (err) {
      const e = err as Error & { status?: number };
      return { text: out.textContent ?? '', error: { name: e.name, status: e.status, message: e.message } };
    }
  };
  const results = await Promise.all(outputs.map(one));
  ui.result.textContent = JSON.stringify({ clients: n, stream, aborted: signal.aborted, ms: Math.round(performance.now() - t0), results }, null, 2);
  ui.run.disabled = false;
  ui.abort.disabled = true;
};

ui.abort.onclick = () => controller?.abort();

ui.models.onclick = async () => {
  try {
    const list = await client.models.list();
    ui.result.textContent = JSON.stringify({ models: list.data.map((m) => m.id) }, null, 2);
  } catch (err) {
    const e = err as Error & { status?: number };
    ui.result.textContent = JSON.stringify({ error: { name: e.name, status: e.status, message: e.message } }, null, 2);
  }
};

void registerServiceWorker().catch((err: Error) => (ui.result.textContent = `The Service Worker was not registered: ${err.message}`));
