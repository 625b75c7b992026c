// e2e tier: Playwright against the examples, served by Vite, in Debian's Chromium with WebGPU.
import { defineConfig } from '@playwright/test';
import { chromiumArgs, chromiumPath } from '../scripts/chromium.mjs';

const PORT = 4318;
/** The offline assistant (examples/pwa), built and served by scripts/pwa.mjs. */
export const PWA_PORT = 4319;

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  timeout: 240_000,
  workers: 1,
  reporter: [['list'], ['json']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    launchOptions: { executablePath: chromiumPath(), args: chromiumArgs() },
  },
  webServer: [
    {
      command: `node node_modules/vite/bin/vite.js --host 127.0.0.1 --port ${PORT} --strictPort`,
      cwd: '..',
      url: `http://127.0.0.1:${PORT}/examples/kernel-lab/`,
      reuseExistingServer: false,
      timeout: 120_000,
    },
    {
      // The offline assistant as its README command serves it: a production build and a static server.
      command: `node scripts/pwa.mjs --port ${PWA_PORT}`,
      cwd: '..',
      url: `http://127.0.0.1:${PWA_PORT}/`,
      reuseExistingServer: false,
      timeout: 180_000,
    },
  ],
});
