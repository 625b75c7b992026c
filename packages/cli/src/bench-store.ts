// `intab bench store`: what the model store costs and saves, in headless Chromium (packages/cli/page/bench-store.ts):
// the raw fetch of a model file against downloading it into the store, SHA-256 alone, a store hit (verify_ms: ensure()
// on a stored copy, verify_rehashed_bytes: what it hashed), reading every weight through the network's ByteSource
// against the store's (read_store_vs_network), and loading through createEngine from the network against from the
// store (load_store_vs_network, on load_backend). One JSON record.
import type { Flags } from './args.ts';
import { runJob } from './browser.ts';
import { resolveModel } from './model-files.ts';

export async function benchStore(flags: Flags): Promise<number> {
  if (typeof flags.model !== 'string') throw new Error('--model <file.gguf> is required');
  const model = resolveModel(flags.model);
  if (model.kind !== 'gguf' || model.files.length !== 1 || !model.dir) throw new Error(`--model ${flags.model}: bench store measures one local GGUF file`);
  const repeats = flags.repeats === undefined ? 3 : Number(flags.repeats);
  if (!Number.isInteger(repeats) || repeats < 1 || repeats > 20) throw new Error('--repeats needs a whole number from 1 to 20, e.g. --repeats 3');
  const failed = await runJob({
    timeoutS: Number(flags.timeout ?? 3600),
    headed: Boolean(flags.headed),
    modelDir: model.dir,
    job: { mode: 'store', kind: model.kind, files: model.files, urls: model.urls, repeats },
    onRecord(r) {
      if (r.type !== 'bench') return;
      const { type, ...rest } = r;
      process.stdout.write(flags.json ? `${JSON.stringify(rest)}\n` : `${Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ')}\n`);
    },
  });
  return failed ? 1 : 0;
}
