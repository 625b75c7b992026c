// Registers the assistant's Service Worker (built from sw.ts by vite-plugin-pwa): it precaches the app, so the
// site opens offline, and answers /v1 from the assistant's tab. Resolves once the page is controlled by it.
export async function registerServiceWorker(): Promise<ServiceWorkerRegistration | undefined> {
  if (!('serviceWorker' in navigator)) return undefined;
  const registration = await navigator.serviceWorker.register(new URL('./sw.js', location.href), { scope: './' });
  if (!navigator.serviceWorker.controller) {
    // First visit: the worker takes control once active (it calls clients.claim()).
    await new Promise<void>((resolve) => navigator.serviceWorker.addEventListener('controllerchange', () => resolve(), { once: true }));
  }
  return registration;
}
