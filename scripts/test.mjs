#!/usr/bin/env node
// The whole test suite, every tier, then one closing line "N passed, N failed" summed over the tiers:
//   typecheck  tsc --noEmit over all packages
//   node       Vitest in Node: CPU references, block codecs, parsers
//   gpu        Vitest in headless Chromium with WebGPU: every kernel against its CPU twin
//   e2e        Playwright against the examples
// Exits non-zero when any tier fails. Usage: node scripts/test.mjs [tier ...]
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, ensureInstall } from './ensure-install.mjs';

ensureInstall();
// Chromium, which the gpu and e2e tiers drive, from the CLI's own module (packages/cli/src/chromium.ts, built by its
// bin): a CLI that does not build is the tiers' to report, a missing browser ends the run here.
let cli;
try {
  cli = await (await import('../packages/cli/bin/intab.mjs')).loadCli();
} catch (e) {
  console.error(`[intab] the CLI did not build (the typecheck and node tiers will say why): ${e.message}`);
}
try {
  cli?.chromiumPath();
} catch (e) {
  console.error(`[intab] ${e.message}`);
  process.exit(1);
}

const OUT = join(ROOT, '.vitest-results');
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const bin = (name) => join(ROOT, 'node_modules', '.bin', name);

const tiers = {
  typecheck() {
    const r = spawnSync(bin('tsc'), ['-p', 'tsconfig.json', '--noEmit'], { cwd: ROOT, stdio: 'inherit' });
    return r.status === 0 ? { passed: 1, failed: 0 } : { passed: 0, failed: 1 };
  },
  node: () => vitest('node'),
  gpu: () => vitest('gpu'),
  e2e() {
    const file = join(OUT, 'e2e.json');
    const r = spawnSync(bin('playwright'), ['test', '-c', 'e2e/playwright.config.ts'], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, PLAYWRIGHT_JSON_OUTPUT_NAME: file },
    });
    if (!existsSync(file)) return { passed: 0, failed: 1, note: `playwright exited ${r.status} without a report` };
    const s = JSON.parse(readFileSync(file, 'utf8')).stats ?? {};
    const failed = (s.unexpected ?? 0) + (s.flaky ?? 0);
    return { passed: s.expected ?? 0, failed: failed || (r.status === 0 ? 0 : 1), skipped: s.skipped ?? 0 };
  },
};

function vitest(project) {
  const file = join(OUT, `${project}.json`);
  const r = spawnSync(
    bin('vitest'),
    ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${file}`],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (!existsSync(file)) return { passed: 0, failed: 1, note: `vitest exited ${r.status} without a report` };
  const j = JSON.parse(readFileSync(file, 'utf8'));
  // A file that fails to load reports no tests: count it as one failure so it cannot pass silently.
  const brokenFiles = (j.testResults ?? []).filter((f) => f.status === 'failed' && !(f.assertionResults ?? []).length).length;
  const failed = j.numFailedTests + brokenFiles;
  return {
    passed: j.numPassedTests,
    failed: failed || (r.status === 0 ? 0 : 1),
    skipped: (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0),
  };
}

const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(tiers);
let passed = 0;
let failed = 0;
let skipped = 0;
const rows = [];
for (const name of chosen) {
  if (!tiers[name]) {
    console.error(`unknown tier '${name}'; tiers: ${Object.keys(tiers).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n=== tier: ${name} ===`);
  const r = tiers[name]();
  passed += r.passed;
  failed += r.failed;
  skipped += r.skipped ?? 0;
  rows.push(`${name}: ${r.passed} passed, ${r.failed} failed${r.note ? ` (${r.note})` : ''}`);
}
console.log('\n' + rows.join('\n'));
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed ? 1 : 0);
