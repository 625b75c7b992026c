// The assistant's Service Worker: the OpenAI-compatible /v1 endpoint (relayed to the tab that holds the engine),
// then the precached app shell (every built file, the engine's worker chunk included), so the site opens offline.
// The model itself is not here: it is in the model store (the origin's private file system), kept by the page.
import { clientsClaim } from 'workbox-core';
import { cleanupOutdatedCaches, createHandlerBoundToURL, precacheAndRoute } from 'workbox-precaching';
import { NavigationRoute, registerRoute } from 'workbox-routing';
import { relayOpenAI, type RelayScope } from 'intab/service-worker';

declare const self: RelayScope & { __WB_MANIFEST: (string | { url: string; revision: string | null })[]; skipWaiting(): Promise<void> };

// First: /v1 must reach the relay, not the navigation fallback below.
relayOpenAI(self, { openHint: "the assistant (this site's main page)" });
void self.skipWaiting();
clientsClaim();
// `?model=` and other parameters do not change which file a page is.
precacheAndRoute(self.__WB_MANIFEST, { ignoreURLParametersMatching: [/.*/] });
cleanupOutdatedCaches();
registerRoute(new NavigationRoute(createHandlerBoundToURL('index.html'), { denylist: [/^\/v1(\/|$)/, /api\.html$/] }));
