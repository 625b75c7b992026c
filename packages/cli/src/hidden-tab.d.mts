// Types of hidden-tab.mjs for the TypeScript tests.
import type { Browser, Page } from 'playwright';
export declare function launchHideable(o?: { headed?: boolean; args?: string[] }): Promise<{
  browser: Browser;
  page: Page;
  hide: () => Promise<void>;
  show: () => Promise<void>;
  close: () => Promise<void>;
}>;
