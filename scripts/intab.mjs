#!/usr/bin/env node
// The intab CLI from a fresh clone: `node scripts/intab.mjs <command> ...` installs the workspace first when it needs
// to (pnpm through npx: no pnpm on the PATH needed), then runs packages/cli's bin, which builds the TypeScript CLI on
// its first run. With pnpm installed, `pnpm intab <command> ...` is the same command.
import { ensureInstall } from './ensure-install.mjs';

ensureInstall();
const { runCli } = await import('../packages/cli/bin/intab.mjs');
runCli(process.argv.slice(2));
