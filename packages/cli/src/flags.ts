// Which flags each command takes, read from the usage text itself (a flag the usage does not show is not taken, so the
// two cannot drift apart), and the check that refuses any other flag, naming the closest known one: a mistyped
// `--max-token 5 --temprature 0` must not silently run with the defaults.
import { editDistance } from '@intab/engine/field-checks';
import type { Flags } from './args.ts';

/** Flags every command takes. */
const GLOBAL = ['help', 'runtime', 'headed'];

/**
 * Each command's flags, from its usage block: a block starts at a line `  intab <command> ...` (several commands as
 * `a|b c|...`) and runs to the next; every `--flag` in it (synopsis and description) belongs to its commands.
 */
export function flagsByCommand(usage: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  let current: string[] = [];
  for (const line of usage.split('\n')) {
    const head = /^ {2}intab ([a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)?(?:\|[a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)?)*)/.exec(line);
    if (head) {
      current = head[1].split('|').map((c) => c.trim());
      for (const c of current) if (!out.has(c)) out.set(c, new Set(GLOBAL));
    }
    for (const m of line.matchAll(/--([a-z][a-z0-9-]*)/g)) for (const c of current) out.get(c)?.add(m[1]);
  }
  return out;
}

/**
 * Throws when `flags` holds one that `command` (e.g. 'generate', 'bench decode') does not take, naming the closest it
 * does. `also`: flags this command takes besides its own (bench serve takes serve's).
 */
export function checkFlags(command: string, flags: Flags, known: Map<string, Set<string>>, also: string[] = []): void {
  const own = known.get(command);
  if (!own) return;
  const allowed = new Set([...own, ...also]);
  for (const name of Object.keys(flags)) {
    if (allowed.has(name)) continue;
    let best = '';
    let bestD = Infinity;
    for (const k of allowed) {
      const d = editDistance(name, k);
      if (d < bestD) [best, bestD] = [k, d];
    }
    const hint = bestD <= Math.max(2, Math.floor(name.length / 3)) ? ` Did you mean --${best}?` : '';
    throw new Error(`intab ${command} does not take --${name}.${hint} (intab --help lists each command's flags.)`);
  }
}
