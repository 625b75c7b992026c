// `intab bench embed --runtime chromium`: intab and transformers.js in one headless Chromium page
// (packages/cli/page/bench-embed.ts), on the same texts and batches. Here: the GGUF is written as a transformers.js
// model folder (transformers-embed.ts: the very encoder graph intab's onnx backends write from the weights) in a
// temporary folder, the CLI's Vite server serves the GGUF (MODEL_PREFIX, HTTP Range, as a model hub) and the folder
// (ONNX_PREFIX), and the page's records become each system's figures (medians of the timed calls) and the check of
// transformers.js's tokens and vectors against intab's. bench-embed.ts prints them and the ratios.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isEncoderFiles } from '@intab/model';
import type { EmbedJob, EmbedRecord } from '../page/bench-embed.ts';
import { median } from './bench-tools.ts';
import { runPage } from './browser.ts';
import { round } from './grammar-stats.ts';
import { ONNX_PREFIX } from './model-files.ts';
import type { PageRecord } from './records.ts';
import type { BenchEmbedOptions, Figure } from './bench-embed.ts';
import { benchTexts } from './bench-embed.ts';

/** One system's figures in the page, what its lines say about it, and (a peer) its check against intab. */
export interface PageSystem {
  name: string;
  backend: string;
  facts: Record<string, unknown>;
  figures: Figure[];
  /** Least cosine to intab's vectors of the largest batch's texts (1 for intab itself). */
  vectorsMatch: number;
  tokensEqual: boolean;
}

/**
 * Runs the page for `o` (o.runtime 'chromium'): intab first, then transformers.js unless o.transformers is false.
 * @example
 * const [intab, transformers] = await pageSystems(benchEmbedOptions({ model: '/tmp/minilm.gguf', backend: 'onnx-wasm' }, 'chromium'));
 */
export async function pageSystems(o: BenchEmbedOptions): Promise<PageSystem[]> {
  if (!o.model.dir) throw new Error('--model: bench embed --runtime chromium reads a GGUF on disk (the page loads it from the CLI\'s server)');
  const { openAnyOnDisk } = await import('../node/model-source.ts');
  const files = await openAnyOnDisk(o.model);
  if (!isEncoderFiles(files)) throw new Error(`${o.model.files[0]} (${files.config.arch}) is not a BERT-family encoder: bench embed --runtime chromium writes transformers.js's ONNX folder from one (bert, nomic-bert), e.g. intab make-model --like all-minilm-l6; run a decoder embedding model with --runtime node`);
  const tmp = o.transformers ? mkdtempSync(join(tmpdir(), 'intab-bench-embed-page-')) : undefined;
  try {
    let write_ms: number | undefined;
    if (tmp) {
      const { writeTransformersFolder } = await import('./transformers-embed.ts');
      const t0 = performance.now();
      await writeTransformersFolder(files, tmp);
      write_ms = round(performance.now() - t0);
    }
    const job: EmbedJob = {
      mode: 'embed',
      ggufUrl: o.model.urls[0],
      onnxUrl: ONNX_PREFIX,
      backend: o.backend,
      texts: benchTexts(Math.max(...o.batches)),
      batches: o.batches,
      repeats: o.repeats,
      transformers: o.transformers,
      worker: o.worker,
    };
    const systems = new Map<string, PageSystem>();
    let failure: string | undefined;
    const timedOut = (err: unknown): never => {
      // Playwright's own words name its wait, not the bench: say what to change.
      if (err instanceof Error && err.name === 'TimeoutError') {
        throw new Error(`bench embed in Chromium ran past --timeout ${o.timeoutS} s (a software WebGPU adapter such as SwiftShader takes seconds per call): give a longer --timeout, or fewer or smaller --batch sizes and --repeats`, { cause: err });
      }
      throw err;
    };
    await runPage({
      path: '/packages/cli/page/embed.html',
      timeoutMs: o.timeoutS * 1000,
      modelDir: o.model.dir,
      onnxDir: tmp,
      job,
      onRecord(rec: PageRecord) {
        const r = rec as unknown as EmbedRecord;
        if (r.type === 'error') failure = `${r.name}: ${r.message}`;
        else if (r.type === 'embed-system') {
          const facts = r.system.startsWith('transformers.js/') && write_ms !== undefined ? { ...r.facts, write_ms } : r.facts;
          systems.set(r.system, { name: r.system, backend: r.backend, facts, figures: [], vectorsMatch: 1, tokensEqual: true });
          process.stderr.write(`${r.system}: loaded in ${String(r.facts.load_ms)} ms\n`);
        } else if (r.type === 'embed-check') {
          const s = systems.get(r.system)!;
          s.vectorsMatch = r.vectors_match;
          s.tokensEqual = r.tokens_equal;
        } else if (r.type === 'embed-figure') {
          const ms = median(r.samples_ms);
          // Progress for a long run (stdout holds only the lines, printed once the page is done).
          process.stderr.write(`${r.system}: batch ${r.batch}, ${round(ms)} ms (median of ${r.samples_ms.length})\n`);
          systems.get(r.system)!.figures.push({ system: r.system, batch: r.batch, ms: round(ms), inputs_per_s: round((r.batch * 1000) / ms), tokens_per_s: round((r.tokens * 1000) / ms), tokens: r.tokens });
        }
      },
    }).catch(timedOut);
    if (failure) throw new Error(`bench embed in Chromium failed: ${failure}`);
    const out = [...systems.values()];
    const short = out.find((s) => s.figures.length !== o.batches.length);
    if (!out.length || short) throw new Error(`bench embed in Chromium: the page ended without ${short ? `${short.name}'s figures for every batch` : 'loading intab'}`);
    return out;
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
