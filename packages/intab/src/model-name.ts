// The name an engine reports as `model` (chat completions' `model` field) when createEngine is not given one: derived
// from the model input (a URL's file, a hub id, a picked folder's or file's name, the model's own config).

import type { ModelInput } from './model-source.ts';

/** createEngine's `name`, else one derived from the model input. */
export async function modelName(o: { name?: string; file?: string; model: ModelInput }): Promise<string> {
  if (o.name) return o.name;
  const m = o.model;
  const last = (s: string) => s.split(/[?#]/)[0].split('/').filter(Boolean).pop() ?? s;
  if (typeof m === 'string') return o.file ? `${m}/${o.file}` : /^[a-z]+:|^[./]/i.test(m) ? last(m) : m;
  if (m instanceof URL) return last(m.pathname);
  if (typeof File !== 'undefined' && m instanceof File) return m.name;
  if ('id' in m && typeof m.id === 'string') return m.file ? `${m.id}/${m.file}` : m.id;
  if ('kind' in m) return m.kind === 'url' ? last(m.url) : m.kind === 'files' ? filesName(m.files.map((f) => new File([f.blob], f.name))) : 'hf-folder';
  return filesName(Array.from(m as ArrayLike<File>));
}

/**
 * The name of a model given as Files: the picked folder's, else the GGUF's (without .gguf), else the HF config's own
 * name (`_name_or_path`'s last part, else `model_type`), else the weights file's (without its extension). Never
 * 'config.json'.
 */
export async function filesName(files: File[]): Promise<string> {
  const folder = files.find((f) => f.webkitRelativePath)?.webkitRelativePath.split('/')[0];
  if (folder) return folder;
  const gguf = files.find((f) => /\.gguf$/i.test(f.name));
  if (gguf) return gguf.name.replace(/(-\d{5}-of-\d{5})?\.gguf$/i, '');
  const config = files.find((f) => f.name === 'config.json');
  if (config) {
    try {
      const c = JSON.parse(await config.text()) as { _name_or_path?: unknown; model_type?: unknown };
      const named = typeof c._name_or_path === 'string' ? c._name_or_path.split('/').filter(Boolean).pop() : undefined;
      if (named) return named;
      if (typeof c.model_type === 'string' && c.model_type) return c.model_type;
    } catch {
      // not JSON: the load reports it
    }
  }
  const weights = files.find((f) => !/\.(json|txt|model|jinja)$/i.test(f.name));
  return weights ? weights.name.replace(/\.[^.]+$/, '') : 'local';
}
