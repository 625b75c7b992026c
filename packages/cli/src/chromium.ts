// Where Chromium lives and how to start it with WebGPU, for everything that drives one: the CLI's headless pages, the
// GPU test tier (vite.config.ts) and the e2e tier (e2e/playwright.config.ts) reach it through scripts/chromium.mjs, so
// every tier runs the same browser with the same flags. Never downloads a browser.
import { existsSync } from 'node:fs';

const CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  '/Applications/Chromium.app/Contents/MacOS/Chromium',
];

/** Path of the Chromium/Chrome to drive: $CHROMIUM_PATH, else the first known install found. */
export function chromiumPath(): string {
  const env = process.env.CHROMIUM_PATH;
  if (env) return env;
  const found = CANDIDATES.find((p) => existsSync(p));
  if (!found) {
    throw new Error('No Chromium or Chrome found. Install one (Debian: `apt-get install -y chromium`) or set CHROMIUM_PATH.');
  }
  return found;
}

/** Flags that enable WebGPU headless (SwiftShader on machines without a GPU) and keep Chromium off the network. */
export function chromiumArgs(): string[] {
  const args = [
    '--enable-unsafe-webgpu',
    '--disable-dev-shm-usage',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ];
  if (typeof process.getuid === 'function' && process.getuid() === 0) args.push('--no-sandbox');
  return args;
}
