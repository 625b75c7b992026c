// The page e2e/csp.spec.ts builds (csp.vite.config.ts) and serves under a strict Content-Security-Policy, as an app's
// production build is served: `?backend=` picks what runs stories260K (served beside the page under models/), and the
// page runs the golden greedy cases end to end (createEngine, the worker, generate) and shows the ids it got, every CSP
// violation it saw, and whether its own eval is refused (the policy is on: a test that cannot pass by accident).

import { createEngine, type Backend } from '../../packages/intab/src/index.ts';

const violations: string[] = [];
document.addEventListener('securitypolicyviolation', (e) => violations.push(`${e.effectiveDirective}: ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
const status = document.getElementById('status')!;

async function run(backend: Backend) {
  const golden = (await (await fetch('./models/golden.json')).json()) as { cases: { prompt: number[]; greedy: number[] }[] };
  const engine = await createEngine({ model: new URL('./models/stories260K-vocab-ud.gguf', location.href).href, backend });
  const runs: number[][] = [];
  for (const c of golden.cases) {
    const ids: number[] = [];
    for await (const chunk of engine.generate({ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true })) ids.push(...chunk.ids);
    runs.push(ids);
  }
  const backendName = engine.info.backend.name;
  await engine.destroy();
  return { backend: backendName, runs, golden: golden.cases.map((c) => c.greedy) };
}

/** What the page's own eval meets: 'EvalError' when the policy is enforced. */
function evalRefused(): string {
  try {
    new Function('csp-sentinel')();
    return 'ran';
  } catch (err) {
    return (err as Error).name;
  }
}

const backend = (new URLSearchParams(location.search).get('backend') ?? 'webgpu') as Backend;
run(backend)
  .then((r) => r as Partial<Awaited<ReturnType<typeof run>>> & { error?: string }, (err: Error) => ({ error: `${err.name}: ${err.message}` }))
  .then((r) => {
    // The violations of the run, then the eval that must be refused (its event comes later: it is not among them).
    const result = { ...r, violations: [...violations], sentinel: evalRefused() };
    status.textContent = JSON.stringify(result, null, 2);
    document.body.dataset.done = 'true';
  });
