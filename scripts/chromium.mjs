// Where Chromium lives and how to start it with WebGPU: the CLI's module (packages/cli/src/chromium.ts), for the
// configs and specs that run it through a TypeScript-aware loader (vite.config.ts, e2e/playwright.config.ts, e2e
// specs), so every tier runs the same browser with the same flags. Plain-Node scripts ask the built CLI instead
// (scripts/test.mjs: loadCli() of packages/cli/bin/intab.mjs).
export { chromiumArgs, chromiumPath } from '../packages/cli/src/chromium.ts';
