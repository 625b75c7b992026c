// Turns what a web developer has in hand (a URL, a Hugging Face id, a File from an <input>, a dropped
// folder) into the contract's ModelSource, on the main thread: relative URLs are resolved against the page
// (the worker's base URL differs), and a hub id is resolved to the hub's file URLs, listing the repository
// once so that only files that exist are asked for (the files a folder load reads: pickFolderFiles). The hub is
// asked through the engine's one hub client (model-fetch.ts), as the worker's loader and the model store ask it.

import type { ModelSource } from '@intab/engine/contract';
import { ModelSourceError } from '@intab/engine/errors';
import { FOLDER_CONFIG_FILES, encodePath, hubFileUrl, hubRepo, listHubFiles, pickFolderFiles } from '@intab/engine/model-fetch';

/** A model as createEngine accepts it. */
export type ModelInput =
  /** A URL of a GGUF file (absolute, or relative to the page), or a Hugging Face id `org/name`. */
  | string
  | URL
  /** A GGUF file. */
  | File
  /** A Hugging Face folder's files (config.json, model.safetensors, tokenizer.json, ...), e.g. from a directory picker. */
  | FileList
  | readonly File[]
  /** A Hugging Face id with its GGUF file and revision (the same as the options `file` and `revision`). */
  | HfModelRef
  /** Already resolved. */
  | ModelSource;

export interface HfModelRef {
  /** `org/name` on the hub. */
  id: string;
  /** The GGUF file in the repository, or its .onnx graph (e.g. 'onnx/model_q4.onnx'); else its safetensors checkpoint, or onnx/model.onnx. */
  file?: string;
  /** Branch, tag or commit [main]. */
  revision?: string;
}

export interface ResolveModelOptions {
  /** With a Hugging Face id: the GGUF file in the repository to load (else the safetensors checkpoint). */
  file?: string;
  /** With a Hugging Face id: branch, tag or commit [main]. */
  revision?: string;
  /** The hub [https://huggingface.co]; a mirror serving the same paths works too. */
  hubUrl?: string;
  /** Used to list a hub repository [globalThis.fetch]. */
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/** The files of a Hugging Face folder that the loader reads, when present (weights are added apart). */
export const HF_FOLDER_FILES = FOLDER_CONFIG_FILES;

const HF_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]*[A-Za-z0-9_]$/;

/**
 * Whether a string is a Hugging Face id rather than a URL: `org/name`, two plain segments, not a file name.
 * @example
 * isHfId('HuggingFaceTB/SmolLM2-135M-Instruct'); // true
 * isHfId('models/tiny.gguf');                    // false: a relative URL (write './models/...' to be clear)
 */
export function isHfId(s: string): boolean {
  return HF_ID.test(s) && !/\.(gguf|safetensors|json|bin)$/i.test(s) && !s.includes('..');
}

function isModelSource(x: unknown): x is ModelSource {
  return typeof x === 'object' && x !== null && 'kind' in x && typeof (x as { kind: unknown }).kind === 'string';
}

function isHfRef(x: unknown): x is HfModelRef {
  return typeof x === 'object' && x !== null && typeof (x as { id?: unknown }).id === 'string' && !('length' in x);
}

function baseUrl(): string | undefined {
  const loc = (globalThis as { location?: { href: string } }).location;
  return loc?.href;
}

/**
 * Resolves a model input to the ModelSource the worker loads.
 * @example
 * await resolveModelSource('https://example.com/model.gguf');   // { kind: 'url', url }
 * await resolveModelSource('Qwen/Qwen2.5-0.5B-Instruct-GGUF', { file: 'qwen2.5-0.5b-instruct-q4_0.gguf' });
 * await resolveModelSource(input.files);                        // { kind: 'files', files: [...] }
 */
export async function resolveModelSource(model: ModelInput, options: ResolveModelOptions = {}): Promise<ModelSource> {
  if (model instanceof URL) return { kind: 'url', url: model.href };
  if (typeof model === 'string') {
    const s = model.trim();
    if (!s) throw new ModelSourceError("''", "the model is an empty string: pass a GGUF URL, a Hugging Face id (org/name), a File or a folder's files");
    if (isHfId(s)) return resolveHf(s, options);
    let url: URL;
    try {
      url = new URL(s, baseUrl());
    } catch {
      throw new ModelSourceError(`'${s}'`, "it is neither a URL nor a Hugging Face id (org/name): pass an absolute URL, or a path relative to the page starting with './' or '/'");
    }
    if (options.file) url = new URL(encodePath(options.file), url.href.endsWith('/') ? url : new URL(url.href + '/'));
    return { kind: 'url', url: url.href };
  }
  if (typeof File !== 'undefined' && model instanceof File) return { kind: 'files', files: [{ name: model.name, blob: model }] };
  if (isModelSource(model)) return model;
  if (isHfRef(model)) {
    if (!isHfId(model.id)) throw new ModelSourceError(`'${model.id}'`, 'it is not a Hugging Face id: write it as org/name');
    return resolveHf(model.id, { ...options, file: model.file ?? options.file, revision: model.revision ?? options.revision });
  }
  const list = Array.from(model as ArrayLike<File>);
  if (list.length === 0) throw new ModelSourceError('an empty list of files', 'there is nothing to load: pick a GGUF file, or a Hugging Face folder (config.json, *.safetensors, tokenizer.json)');
  for (const f of list) {
    if (typeof Blob === 'undefined' || !(f instanceof Blob)) throw new ModelSourceError('a list of files', `it holds a ${typeof f}, not a File: pass File objects (from an <input type=file> or a drop)`);
  }
  // The file's own name, not its folder path: the loader matches names like 'config.json'.
  return { kind: 'files', files: list.map((f) => ({ name: f.name, blob: f })) };
}

async function resolveHf(id: string, o: ResolveModelOptions): Promise<ModelSource> {
  const repo = hubRepo(id, { hubUrl: o.hubUrl, revision: o.revision });
  if (o.file && !/\.onnx$/i.test(o.file)) return { kind: 'url', url: hubFileUrl(repo, o.file) };

  // A folder: list the repository once, so that only files that exist are fetched by the worker. A wrong id or
  // revision is a ModelSourceError naming it; no answer or a server error is the same typed error as for any file.
  const names = new Set((await listHubFiles(repo, '', { fetch: o.fetch, signal: o.signal })).map((e) => e.path));
  const picked = pickFolderFiles(names, o.file);
  if (picked) return { kind: 'hf-urls', files: Object.fromEntries(picked.files.map((n) => [n, hubFileUrl(repo, n)])) };
  if (o.file) throw new ModelSourceError(id, `'${o.file}' is not in the repository${names.has('config.json') ? '' : ' (nor is its config.json)'}: pick one of ${[...names].filter((n) => /\.onnx$/i.test(n)).slice(0, 8).join(', ') || 'its files'}`);
  const ggufs = [...names].filter((n) => n.toLowerCase().endsWith('.gguf'));
  if (ggufs.length) {
    throw new ModelSourceError(id, `the repository holds GGUF files, not a safetensors checkpoint: pass one of them as \`file\` (${ggufs.slice(0, 8).join(', ')}${ggufs.length > 8 ? ', ...' : ''})`);
  }
  throw new ModelSourceError(id, `the repository has no config.json and model*.safetensors (files: ${[...names].slice(0, 12).join(', ') || 'none'}); intab loads GGUF files and Hugging Face safetensors folders`);
}
