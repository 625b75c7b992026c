// Saving the prefix cache to disk and reading it back at load: the pages of pinned prefixes (or of the whole tree)
// with their tokens, in the file kv-file.ts describes, keyed by what the bytes depend on (the runner's KvKey). A file
// saved for other weights, another quantization, KV layout or architecture is never used; a damaged one is deleted
// and reported. Pages restored enter the tree unpinned (a preload pins them again, at no cost).

import type { SaveCacheResult } from './contract.ts';
import { CacheStorageError, EngineStateError } from './errors.ts';
import { KV_FILE_VERSION, kvFileName, opfsDelete, opfsSink, opfsSource, readKvFile, writeKvFile, type KvFileNode } from './kv-file.ts';
import type { CacheNode, PrefixCache } from './prefix-cache.ts';
import type { PageIO, StepRunner } from '@intab/model';

/** The key a file is saved and found under: the runner's KvKey with the format version, as JSON. */
async function keyOf(io: PageIO): Promise<string> {
  return JSON.stringify({ format: KV_FILE_VERSION, ...(await io.key()) });
}

function pageIOOf(runner: StepRunner): PageIO {
  if (!runner.pageIO) {
    const why = runner.kv.window ? "this model's sliding-window layers keep pages of their own" : 'this runner cannot read or write KV pages';
    throw new EngineStateError(`The prefix cache cannot be saved (${why}): it is kept in memory only.`);
  }
  return runner.pageIO;
}

/**
 * Writes the pinned prefixes (`all`: every cached page) of `cache` to `folder`. The pages are held for the
 * duration, so eviction cannot hand them to a request while they are read.
 */
export async function saveKvCache(cache: PrefixCache, runner: StepRunner, folder: FileSystemDirectoryHandle, options: { all?: boolean }, now: () => number): Promise<SaveCacheResult> {
  const t0 = now();
  const io = pageIOOf(runner);
  const key = await keyOf(io);
  const name = await kvFileName(key);
  const nodes = cache.ordered(!options.all);
  const index = new Map<CacheNode, number>(nodes.map((n, i) => [n, i]));
  const entries: KvFileNode[] = nodes.map((n) => ({ parent: n.parent && index.has(n.parent) ? index.get(n.parent)! : -1, tokens: [...n.tokens] }));
  const pages = nodes.map((n) => n.page);
  const file = `intab/kv-cache/${name}`;
  for (const p of pages) runner.kv.retain(p);
  try {
    // An OPFS writable replaces the file only when closed, so a failure leaves the previous save as it was.
    const bytes = await writeKvFile(await opfsSink(folder, name), { key, pageSize: cache.pageSize, pageBytes: io.pageBytes, nodes: entries }, (first, count) =>
      io.read(pages.slice(first, first + count)),
    );
    return { file, pages: nodes.length, tokens: entries.reduce((n, e) => n + e.tokens.length, 0), bytes, ms: now() - t0 };
  } catch (err) {
    if (err instanceof DOMException) throw new CacheStorageError(file, err.name, err.message, { cause: err });
    throw err;
  } finally {
    for (const p of pages) runner.kv.release(p);
  }
}

/** What restoring found. */
export interface RestoreOutcome {
  restored?: { pages: number; tokens: number; bytes: number; ms: number };
  /** Set when a file existed but was damaged (and was deleted) or could not be read. */
  warning?: string;
}

/**
 * Reads the file saved for this runner's key back into `cache`: as many pages as the pool has free (parents
 * first), written into the KV as the file streams past, entering the tree only once the whole file is verified.
 */
export async function restoreKvCache(cache: PrefixCache, runner: StepRunner, folder: FileSystemDirectoryHandle, now: () => number): Promise<RestoreOutcome> {
  const io = runner.pageIO;
  if (!io) return {};
  const t0 = now();
  const key = await keyOf(io);
  const name = await kvFileName(key);
  const source = await opfsSource(folder, name);
  if (!source) return {};
  const acquired: number[] = [];
  let header: { nodes: KvFileNode[] } | undefined;
  let targets: number[] = [];
  try {
    const problem = await readKvFile(
      source,
      { key, pageSize: cache.pageSize, pageBytes: io.pageBytes },
      (h) => {
        header = h;
        // Parents before children: a node is restored when its parent was and a page is free.
        targets = h.nodes.map(() => -1);
        for (const [i, n] of h.nodes.entries()) {
          if (n.parent >= 0 && targets[n.parent] < 0) continue;
          if (runner.kv.freePageCount === 0) break;
          targets[i] = runner.kv.acquire();
          acquired.push(targets[i]);
        }
        return targets;
      },
      (pages, bytes) => io.write(pages, bytes),
    );
    if (problem?.kind === 'mismatch') {
      release(runner, acquired);
      return {};
    }
    if (problem) {
      release(runner, acquired);
      await opfsDelete(folder, name);
      return { warning: `The saved prefix cache intab/kv-cache/${name} was damaged (${problem.reason}): it was deleted and not used; save it again with saveCache().` };
    }
  } catch (err) {
    release(runner, acquired);
    return { warning: `The saved prefix cache intab/kv-cache/${name} could not be read (${(err as Error).message}): it was not used.` };
  }
  // Verified: the pages join the tree (the cache takes over the references acquire() gave).
  const nodes: (CacheNode | undefined)[] = [];
  let tokens = 0;
  for (const [i, n] of header!.nodes.entries()) {
    if (targets[i] < 0) continue;
    nodes[i] = cache.adoptPage(n.parent >= 0 ? nodes[n.parent] : undefined, n.tokens, targets[i]);
    tokens += n.tokens.length;
  }
  return acquired.length ? { restored: { pages: acquired.length, tokens, bytes: source.size, ms: now() - t0 } } : {};
}

function release(runner: StepRunner, pages: number[]): void {
  for (const p of pages) runner.kv.release(p);
  pages.length = 0;
}
