// The page e2e/remote.spec.ts drives: intab's public entry on `window.intab`, and stories260K's URL, so the spec can
// create engines (remote, local, routed between them) from a real page, where fetch is the browser's (CORS, streams).

import * as intab from '../../packages/intab/src/index.ts';

const MODEL = new URL(`/@fs${import.meta.env.INTAB_SHARED}/models/stories260K/stories260K-vocab-ud.gguf`, location.href).href;
Object.assign(window, { intab, MODEL });
document.getElementById('status')!.textContent = 'ready';
document.body.dataset.ready = 'true';
