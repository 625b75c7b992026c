// The main thread's life line to the worker that holds its engine. The worker takes a Web Lock for as long as it
// lives, and the tab waits for the same lock, which the browser grants it only when the worker is gone (terminated,
// or killed for memory: neither sends anything), so every pending call is rejected instead of hanging. The request
// comes as a message (`intab:life-line`, the lock's name and a port to answer 'held' on), taken before Comlink sees it.

/** Answers a life-line message (taking the lock for the rest of this worker's life); false for any other message. */
export function answerLifeLine(ev: MessageEvent): boolean {
  if (ev.data?.type !== 'intab:life-line') return false;
  const port = ev.ports[0];
  void navigator.locks?.request(String(ev.data.lock), () => {
    port?.postMessage('held');
    return new Promise<never>(() => {}); // held until this worker ends
  });
  return true;
}
