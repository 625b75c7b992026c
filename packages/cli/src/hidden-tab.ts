// A Chromium whose background tab really goes hidden (document.visibilityState 'hidden', timers throttled), for
// `intab bench hidden` and e2e/hidden-tab.spec.ts. Playwright's own launch cannot give one: it passes
// --disable-background-timer-throttling, --disable-renderer-backgrounding and --disable-backgrounding-occluded-windows,
// and its page session turns CDP focus emulation on, which keeps every page 'visible' (focus emulation is per CDP
// session, so turning it off from a session of ours changes nothing). So Chromium is started here, with the repo's
// flags only, and Playwright attaches over CDP with noDefaults (no focus emulation on the default context's pages);
// hiding is what a user does: another tab of the same window in front.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, CDPSession, Page } from 'playwright';
import { chromiumArgs, chromiumPath } from './chromium.ts';

/** How long Chromium may take to open its DevTools endpoint (a cold start on a loaded 2-core machine). */
const START_MS = 30_000;

/** A Chromium tab that can be sent to the background and brought back. */
export interface HideableTab {
  browser: Browser;
  page: Page;
  hide: () => Promise<void>;
  show: () => Promise<void>;
  close: () => Promise<void>;
}

/**
 * Starts Chromium (headless unless `headed`) with a DevTools port on loopback and attaches Playwright to it. `page` is
 * the window's first tab; `hide()` puts a second tab in front of it and `show()` closes that tab again, each resolving
 * once the page reports the new document.visibilityState (else it throws, saying what to check).
 */
export async function launchHideable(o: { headed?: boolean; args?: string[] } = {}): Promise<HideableTab> {
  const profile = mkdtempSync(join(tmpdir(), 'intab-hidden-'));
  const args = [
    ...chromiumArgs(),
    ...(o.args ?? []),
    ...(o.headed ? [] : ['--headless']),
    // WebGPU on SwiftShader where there is no GPU (Playwright's launch adds this one itself).
    '--enable-unsafe-swiftshader',
    '--no-default-browser-check',
    '--password-store=basic',
    '--use-mock-keychain',
    '--remote-debugging-address=127.0.0.1',
    '--remote-debugging-port=0',
    `--user-data-dir=${profile}`,
    'about:blank',
  ];
  const proc = spawn(chromiumPath(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  // A caller that exits without close() (an uncaught error, Ctrl-C) must not leave this Chromium running.
  const orphan = () => proc.kill('SIGKILL');
  process.once('exit', orphan);
  let browser: Browser | undefined;
  let cdp: CDPSession | undefined;
  const close = async () => {
    process.off('exit', orphan);
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      // Browser.close shuts Chromium down (Playwright's close() of a CDP connection only disconnects); a signal if
      // that fails or takes too long.
      await cdp?.send('Browser.close').catch(() => {});
      if (!cdp) proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    }
    await browser?.close().catch(() => {});
    // Chromium's helper processes may still be writing the profile as the browser process exits.
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  };
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      let err = '';
      const timer = setTimeout(() => reject(new Error(`Chromium did not open its DevTools port within ${START_MS / 1000} s: ${err.trim().slice(-400) || 'no output'}`)), START_MS);
      proc.stderr?.on('data', (d) => {
        err += d;
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
        if (m) clearTimeout(timer), resolve(m[1]);
      });
      proc.once('error', (e) => (clearTimeout(timer), reject(new Error(`could not start ${chromiumPath()}: ${e.message}`))));
      proc.once('exit', (code) => (clearTimeout(timer), reject(new Error(`Chromium exited (${code}) before opening its DevTools port: ${err.trim().slice(-400)}`))));
    });
    proc.stderr?.resume(); // keep draining it: a full pipe would stall Chromium
    const { chromium } = await import('playwright');
    browser = await chromium.connectOverCDP(endpoint, { noDefaults: true, isLocal: true });
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? (await context.newPage());
    const { targetInfo } = await (await context.newCDPSession(page)).send('Target.getTargetInfo');
    const session = await browser.newBrowserCDPSession();
    cdp = session;
    let cover: string | undefined;
    const settle = async (want: 'hidden' | 'visible', how: string) => {
      for (let t0 = Date.now(); Date.now() - t0 < 5000; await new Promise((r) => setTimeout(r, 50))) {
        if ((await page.evaluate(() => document.visibilityState)) === want) return;
      }
      throw new Error(`the page stayed '${await page.evaluate(() => document.visibilityState)}' after ${how}: this Chromium does not background tabs (check that nothing passes --disable-renderer-backgrounding or turns CDP focus emulation on)`);
    };
    return {
      browser,
      page,
      async hide() {
        if (cover) return;
        ({ targetId: cover } = await session.send('Target.createTarget', { url: 'about:blank', newWindow: false, background: false }));
        await session.send('Target.activateTarget', { targetId: cover });
        await settle('hidden', 'another tab was put in front of it');
      },
      async show() {
        if (!cover) return;
        await session.send('Target.closeTarget', { targetId: cover });
        cover = undefined;
        await session.send('Target.activateTarget', { targetId: targetInfo.targetId });
        await settle('visible', 'the tab in front of it was closed');
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
