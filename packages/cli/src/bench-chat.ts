// `intab bench chat`: time to first token over a conversation, with the prefix cache off and on, in headless
// Chromium on WebGPU or (--backend) onnxruntime-web (packages/cli/page/bench-chat.ts runs it in the page). Flags are checked here, before any
// browser starts; the page prints one JSON line per turn and a summary.
import { readFileSync } from 'node:fs';
import type { Backend, ChatMessage } from '@intab/engine/contract';
import type { Job, ModelRef } from '../page/shared.ts';
import { wholeFlag, type Flags } from './args.ts';
import { runJob } from './browser.ts';
import { resolveModel } from './model-files.ts';
import { cpuThreadsFromFlags } from './job.ts';

const MODES = ['on', 'off', 'both'];
/** What --backend takes (the engine's LoadOptions.backend); intab's kernels ('webgpu') unless told. */
const BACKENDS = ['webgpu', 'auto', 'onnx-wasm', 'onnx-webgpu'];

/**
 * The conversation of --conversation FILE: a JSON array of OpenAI-style messages, a system message first (optional),
 * then user messages; assistant messages are dropped (the model answers with its own replies).
 */
export function readConversation(path: string): ChatMessage[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`--conversation ${path}: cannot read it (${(err as Error).message})`);
  }
  let messages: unknown;
  try {
    messages = JSON.parse(text);
  } catch (err) {
    throw new Error(`--conversation ${path}: not JSON (${(err as Error).message})`);
  }
  const where = `--conversation ${path}`;
  if (!Array.isArray(messages)) throw new Error(`${where}: expected a JSON array of { "role", "content" } messages`);
  messages.forEach((m: { role?: unknown; content?: unknown } | null, i) => {
    if (typeof m !== 'object' || m === null || typeof m.role !== 'string' || typeof m.content !== 'string') {
      throw new Error(`${where}: message ${i} should be { "role": "system" | "user" | "assistant", "content": "text" }`);
    }
    if (m.role === 'system' && i !== 0) throw new Error(`${where}: message ${i} is a system message; only the first may be one`);
    if (!['system', 'user', 'assistant'].includes(m.role)) throw new Error(`${where}: message ${i} has role '${m.role}'; use system, user or assistant`);
  });
  const kept = (messages as ChatMessage[]).filter((m) => m.role !== 'assistant').map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
  if (!kept.some((m) => m.role === 'user')) throw new Error(`${where}: it has no user message`);
  return kept;
}

/** The page's job from the flags. */
export function chatJobFromFlags(flags: Flags, model: ModelRef): Job {
  const mode = flags['prefix-cache'] ?? 'both';
  if (typeof mode !== 'string' || !MODES.includes(mode)) throw new Error('--prefix-cache takes on, off or both, e.g. --prefix-cache both');
  const whole = (name: string, dflt: number, min: number, max: number) => wholeFlag(flags, name, dflt, min, max);
  if (flags.conversation !== undefined && typeof flags.conversation !== 'string') throw new Error('--conversation needs a file: a JSON array of messages');
  const quantize = flags.quantize;
  if (quantize !== undefined && quantize !== 'q8_0' && quantize !== 'q4_0') throw new Error('--quantize takes q8_0 or q4_0');
  const backend = flags.backend ?? 'webgpu';
  if (typeof backend !== 'string' || !BACKENDS.includes(backend)) throw new Error(`--backend takes ${BACKENDS.join(', ')}`);
  if (quantize !== undefined && backend.startsWith('onnx-')) throw new Error(`--quantize re-quantizes for intab's WebGPU kernels; --backend ${backend} runs the checkpoint's own weights: drop one of them`);
  const cpuThreads = cpuThreadsFromFlags(flags, backend);
  return {
    mode: 'chat',
    kind: model.kind,
    files: model.files,
    urls: model.urls,
    ...(typeof flags.conversation === 'string' ? { conversation: readConversation(flags.conversation) } : {}),
    cacheModes: mode as Job['cacheModes'],
    maxTokens: whole('max-tokens', 32, 1, 4096),
    temperature: 0,
    seed: whole('seed', 0, 0, 2 ** 31 - 1),
    quantize,
    backend: backend as Backend,
    ...(cpuThreads ? { cpuThreads } : {}),
    preload: Boolean(flags.preload),
    persist: Boolean(flags.persist),
    persistTokens: whole('persist-tokens', 2048, 16, 32768),
    repeats: whole('repeats', 5, 1, 20),
  };
}

/** Columns without --json. */
const TURN_COLUMNS = ['prefix_cache', 'turn', 'prompt_tokens', 'cached_tokens', 'ttft_ms'];

export async function benchChat(flags: Flags): Promise<number> {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required (a model with a tokenizer, e.g. intab make-model --tokenizer qwen3)');
  const model = resolveModel(flags.model);
  const job = chatJobFromFlags(flags, model);
  let header = false;
  const failed = await runJob({
    timeoutS: Number(flags.timeout ?? 3600),
    headed: Boolean(flags.headed),
    modelDir: model.dir,
    job,
    onRecord(r) {
      if (r.type !== 'bench') return;
      const { type, ...rest } = r;
      if (flags.json || rest.summary || rest.preload || rest.persist) {
        process.stdout.write(`${JSON.stringify(rest)}\n`);
        return;
      }
      if (!header) {
        console.log(TURN_COLUMNS.join('\t'));
        header = true;
      }
      console.log(TURN_COLUMNS.map((c) => rest[c]).join('\t'));
    },
  });
  return failed ? 1 : 0;
}
