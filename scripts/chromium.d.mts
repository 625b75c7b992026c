// The types of chromium.mjs, which re-exports the CLI's module.
export { chromiumArgs, chromiumPath } from '../packages/cli/src/chromium.ts';
