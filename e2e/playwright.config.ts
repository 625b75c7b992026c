// e2e tier: Playwright against the examples, served by Vite, in Debian's Chromium with WebGPU.
import { defineConfig } from '@playwright/test';
import { chromiumArgs, chromiumPath } from '../scripts/chromium.mjs';

const PORT = 4318;

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
  webServer: {
    command: `node node_modules/vite/bin/vite.js --host 127.0.0.1 --port ${PORT} --strictPort`,
    cwd: '..',
    url: `http://127.0.0.1:${PORT}/examples/kernel-lab/`,
    reuseExistingServer: false,
    timeout: 120_000,
  },
});
