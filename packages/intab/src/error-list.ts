// Every error class intab throws, in one list, by the entry that exports it. It is made of the lists each package
// declares beside its classes (the worker's, which the error registry that rebuilds them across the worker is made of
// too; the page's own; the remote backend's), plus the one class each of 'intab/service-worker' and 'intab/vite'.
// errors.test.ts checks against it that every class declared in the packages is here, that each entry exports its
// own, that the worker rebuilds every class it can throw, and that the README's table of codes has one row per class.
// No entry imports this file: it reaches vite.ts, which runs in Node (in an app's vite.config) only.

import { WORKER_ERRORS } from '@intab/engine/errors';
import { PAGE_ERRORS } from './errors.ts';
import { REMOTE_ERRORS } from './remote/errors.ts';
import { ServiceWorkerScopeError } from './service-worker.ts';
import { InvalidPluginOptionError } from './vite.ts';

/** Every error class, by the entry that exports it, by name. */
export const ERROR_CLASSES = {
  intab: { ...WORKER_ERRORS, ...PAGE_ERRORS, ...REMOTE_ERRORS },
  'intab/service-worker': { ServiceWorkerScopeError },
  'intab/vite': { InvalidPluginOptionError },
} as const;
