// Wasm threads for intab's CPU kernels: helper threads (Web Workers in a browser, worker_threads in Node) that
// instantiate the same kernel modules over the same shared WebAssembly.Memory and run one call each when the calling
// thread asks, so a matmul's rows are split across cores. The calling thread runs its own share meanwhile and then
// waits for the others by spinning on a shared word: a call lasts microseconds to milliseconds and a decode step makes
// hundreds, so a wake-up through the OS per call would cost more than it saves. A helper spins the same way for a
// new call, and sleeps (Atomics.wait) once none has come for SPIN_MS.
//
// In a browser this needs SharedArrayBuffer, which only a cross-origin isolated page has (COOP same-origin and COEP
// require-corp or credentialless): threadsUnavailable says whether, and why not.
//
// The control words, an Int32Array over their own SharedArrayBuffer: [SEQ] the call's number (helpers wait for it to
// change), [STOP] 1 ends the helpers, [FAILED] 1 once a helper's call threw; per helper h, [DONE + h] the number of
// the last call it finished. From byte 4·JOB, per helper JOB_WORDS f64s: the call, the function's index, then its
// arguments (f64s hold any i32 and f32 exactly). After the calls, the first failure's message (its length, then its
// UTF-16 code units, ERROR_WORDS at most).

const SEQ = 0;
const STOP = 1;
const FAILED = 2;
const DONE = 8;
const JOB = 64;
const JOB_WORDS = 12;
/** The most arguments a threaded function takes. */
const MAX_ARGS = JOB_WORDS - 1;
/** The most helpers (DONE + helpers ≤ JOB). */
const MAX_HELPERS = JOB - DONE;
/** Words for a failure's message. */
const ERROR_WORDS = 512;
/** How long a helper spins for the next call before it sleeps. */
const SPIN_MS = 5;
/** How long the calling thread waits for a helper's share before it gives up on the threads. */
const STALL_MS = 120_000;
/** How long a helper may take to start (load its script, instantiate the kernels). */
const START_MS = 20_000;

/** Why wasm threads cannot run here, or undefined when they can. */
export function threadsUnavailable(): string | undefined {
  const g = globalThis as { crossOriginIsolated?: boolean; process?: { versions?: { node?: string } }; Worker?: unknown };
  const node = g.process?.versions?.node !== undefined;
  if (!node && g.crossOriginIsolated !== true) return 'the page is not cross-origin isolated (serve it with COOP same-origin and COEP require-corp or credentialless)';
  if (typeof SharedArrayBuffer === 'undefined') return 'SharedArrayBuffer is missing here';
  if (!node && typeof g.Worker !== 'function') return 'this context cannot start Workers';
  return undefined;
}

/**
 * The threads to run: `asked`, by default the cores, at most 4 (one step's matrices are small); 1 where threads cannot
 * run, with `note` saying why where that costs something (more were asked, or the default met several cores).
 */
export function threadPlan(asked?: number): { threads: number; note?: string } {
  const cores = (globalThis.navigator as { hardwareConcurrency?: number } | undefined)?.hardwareConcurrency ?? 1;
  const why = threadsUnavailable();
  if (!why) return { threads: asked ?? Math.max(1, Math.min(4, cores)) };
  return (asked ?? cores) > 1 ? { threads: 1, note: why } : { threads: 1 };
}

/** A shared memory of `initial` pages that may grow to the wasm32 limit (a shared memory must declare its maximum). */
export function sharedMemory(initial: number): WebAssembly.Memory {
  return new WebAssembly.Memory({ initial, maximum: 65536, shared: true });
}

/** Whether `memory` is a shared one (its modules then declare a shared import). */
export function isShared(memory: WebAssembly.Memory): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer;
}

/** A thread's handle, browser or Node. */
interface Helper {
  post(message: unknown): void;
  terminate(): void;
}

/** What the calling thread sends a helper once. */
interface HelperInit {
  memory: WebAssembly.Memory;
  modules: WebAssembly.Module[];
  control: SharedArrayBuffer;
  index: number;
  words: { seq: number; stop: number; failed: number; done: number; job: number; jobWords: number; spinMs: number; error: number; errorWords: number };
}

/**
 * Helper threads over `memory`, each with its own instance of `modules`.
 * @example
 * const threads = await WasmThreads.start(memory, [matmulModule], 1);
 * threads.run(threads.fn(matmulModule, 'gemv_q4_0_split4'), [[...argsOfHelper0]], () => ownShare());
 */
export class WasmThreads {
  private seq = 0;
  private stopped = false;

  private constructor(
    private readonly control: Int32Array,
    /** The calls (the header). */
    private readonly jobs: Float64Array,
    private readonly helpers: Helper[],
    private readonly modules: WebAssembly.Module[],
    /** Where the failure's message starts in the control words. */
    private readonly errorAt: number,
  ) {}

  /** Starts `helpers` threads (1..56); resolves once each has instantiated the modules over `memory` (a shared one). */
  static async start(memory: WebAssembly.Memory, modules: WebAssembly.Module[], helpers: number): Promise<WasmThreads> {
    const why = threadsUnavailable();
    if (why) throw new Error(`wasm threads cannot run: ${why}`);
    if (!isShared(memory)) throw new Error('wasm threads need a shared memory (sharedMemory())');
    if (!(Number.isInteger(helpers) && helpers >= 1 && helpers <= MAX_HELPERS)) throw new RangeError(`helpers: 1..${MAX_HELPERS}, got ${helpers}`);
    const errorAt = JOB + 2 * helpers * JOB_WORDS;
    const control = new SharedArrayBuffer(4 * (errorAt + ERROR_WORDS));
    const started: Helper[] = [];
    const ready: Promise<void>[] = [];
    const source = `(${helperMain.toString()})()`;
    const words = { seq: SEQ, stop: STOP, failed: FAILED, done: DONE, job: JOB, jobWords: JOB_WORDS, spinMs: SPIN_MS, error: errorAt, errorWords: ERROR_WORDS };
    try {
      for (let index = 0; index < helpers; index++) {
        const { helper, ready: r } = await spawn(source);
        started.push(helper);
        ready.push(r);
        helper.post({ memory, modules, control, index, words } satisfies HelperInit);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`a helper thread did not start in ${START_MS / 1000} s`)), START_MS)));
      try {
        await Promise.race([Promise.all(ready), late]);
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      Atomics.store(new Int32Array(control), STOP, 1);
      for (const h of started) h.terminate();
      throw err;
    }
    return new WasmThreads(new Int32Array(control), new Float64Array(control, 4 * JOB, helpers * JOB_WORDS), started, modules, errorAt);
  }

  /** True once close() ran (or a helper failed or stalled): callers then run on their own thread alone. */
  get closed(): boolean {
    return this.stopped;
  }

  /** Threads a call runs on: the helpers and the calling thread. */
  get threads(): number {
    return this.helpers.length + 1;
  }

  /** The index `run` takes for export `name` of `module` (one of those the helpers were started with). */
  fn(module: WebAssembly.Module, name: string): number {
    let index = 0;
    for (const m of this.modules) {
      const names = WebAssembly.Module.exports(m).filter((d) => d.kind === 'function').map((d) => d.name);
      if (m === module) {
        const i = names.indexOf(name);
        if (i < 0) throw new Error(`the module exports no function ${name}`);
        return index + i;
      }
      index += names.length;
    }
    throw new Error('the module is not one the threads were started with');
  }

  /**
   * Runs function `fn` on every helper h with args[h] while the calling thread runs `own`, and returns once all are
   * done. The calls must write to disjoint memory.
   */
  run(fn: number, args: readonly (readonly number[])[], own: () => void): void {
    if (this.stopped) throw new Error('the wasm threads were closed');
    const ctl = this.control;
    const n = this.helpers.length;
    if (args.length !== n) throw new RangeError(`args for ${n} helpers, got ${args.length}`);
    for (let h = 0; h < n; h++) {
      const a = args[h];
      if (a.length > MAX_ARGS) throw new RangeError(`at most ${MAX_ARGS} arguments, got ${a.length}`);
      const at = h * JOB_WORDS;
      this.jobs[at] = fn;
      for (let i = 0; i < MAX_ARGS; i++) this.jobs[at + 1 + i] = i < a.length ? a[i] : 0;
    }
    const seq = (this.seq = (this.seq + 1) | 0);
    Atomics.store(ctl, SEQ, seq);
    Atomics.notify(ctl, SEQ);
    let ownError: unknown;
    try {
      own();
    } catch (err) {
      ownError = err;
    }
    // the helpers' shares, finished or failed: spin (see the header), with a clock read now and then
    let start = 0;
    for (let h = 0; h < n; h++) {
      for (let spins = 0; Atomics.load(ctl, DONE + h) !== seq; spins++) {
        if ((spins & 0xffff) !== 0xffff) continue;
        const now = performance.now();
        if (!start) start = now;
        else if (now - start > STALL_MS) {
          this.close();
          throw new Error(`a CPU kernel thread did not finish its share in ${STALL_MS / 1000} s; the threads were stopped`);
        }
      }
    }
    if (ownError !== undefined) throw ownError;
    if (Atomics.load(ctl, FAILED)) {
      this.close();
      const length = ctl[this.errorAt];
      const message = String.fromCharCode(...ctl.subarray(this.errorAt + 1, this.errorAt + 1 + length));
      throw new Error(`a CPU kernel thread failed: ${message || 'no message'}`);
    }
  }

  /** Ends the helpers. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    Atomics.store(this.control, STOP, 1);
    Atomics.store(this.control, SEQ, (this.seq + 1) | 0);
    Atomics.notify(this.control, SEQ);
    for (const h of this.helpers) h.terminate();
  }
}

/** A helper thread running `source`; `ready` resolves on its first message (it has instantiated the modules). */
async function spawn(source: string): Promise<{ helper: Helper; ready: Promise<void> }> {
  const node = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node;
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const ready = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  const onMessage = (m: { ready?: boolean; error?: string }) => {
    if (m.ready) resolve();
    if (m.error) reject(new Error(m.error));
  };
  if (node) {
    const specifier = 'node:worker_threads';
    const { Worker } = (await import(/* @vite-ignore */ specifier)) as typeof import('node:worker_threads');
    const w = new Worker(source, { eval: true });
    w.on('message', onMessage);
    w.on('error', (err) => onMessage({ error: err.message }));
    w.unref(); // a process whose work is done does not wait for its kernel threads
    return { helper: { post: (m) => w.postMessage(m), terminate: () => void w.terminate() }, ready };
  }
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  try {
    const w = new Worker(url, { name: 'intab-cpu-kernels' });
    w.onmessage = (e: MessageEvent) => onMessage(e.data);
    // a script the page's CSP refuses (worker-src without blob:) fails here, with no message of its own
    w.onerror = (e: ErrorEvent) => onMessage({ error: e.message || "the helper thread's script did not load (a Content-Security-Policy needs worker-src blob: for wasm threads)" });
    return { helper: { post: (m) => w.postMessage(m), terminate: () => w.terminate() }, ready };
  } finally {
    // the Worker has read its URL by the time it runs; revoking it later would leak it on every start
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }
}

/**
 * A helper thread's whole program, run from its source text (so no bundler need know of a worker file): it refers to
 * nothing outside itself. It takes HelperInit, instantiates the modules, says it is ready, then runs each call.
 */
function helperMain(): void {
  type Port = { postMessage(m: unknown): void };
  const req = (globalThis as { require?: (id: string) => { parentPort: Port & { once(e: string, f: (m: unknown) => void): void } } }).require;
  const nodePort = typeof req === 'function' ? req('node:worker_threads').parentPort : undefined;
  const scope = globalThis as unknown as Port & { addEventListener(t: string, f: (e: { data: unknown }) => void, o: object): void; close(): void };
  const post = (m: unknown) => (nodePort ? nodePort.postMessage(m) : scope.postMessage(m));
  const start = (init: HelperInit) => {
    const { memory, modules, control, index, words: W } = init;
    const fns: ((...args: number[]) => void)[] = [];
    try {
      for (const module of modules) {
        const exports = new WebAssembly.Instance(module, { env: { memory } }).exports as Record<string, (...args: number[]) => void>;
        for (const d of WebAssembly.Module.exports(module)) if (d.kind === 'function') fns.push(exports[d.name]);
      }
    } catch (err) {
      post({ error: `a CPU kernel thread could not instantiate the kernels: ${(err as Error)?.message ?? err}` });
      return;
    }
    const ctl = new Int32Array(control);
    const jobs = new Float64Array(control, 4 * W.job, (index + 1) * W.jobWords);
    const job = index * W.jobWords;
    let seen = Atomics.load(ctl, W.seq);
    post({ ready: true });
    for (;;) {
      let since = 0;
      for (let spins = 0; Atomics.load(ctl, W.seq) === seen; spins++) {
        if ((spins & 0x3fff) !== 0x3fff) continue;
        const now = performance.now();
        if (!since) since = now;
        else if (now - since > W.spinMs) Atomics.wait(ctl, W.seq, seen);
      }
      seen = Atomics.load(ctl, W.seq);
      if (Atomics.load(ctl, W.stop)) break;
      try {
        const j = job;
        fns[jobs[j]](jobs[j + 1], jobs[j + 2], jobs[j + 3], jobs[j + 4], jobs[j + 5], jobs[j + 6], jobs[j + 7], jobs[j + 8], jobs[j + 9], jobs[j + 10], jobs[j + 11]);
      } catch (err) {
        // the first failure's message, where the calling thread reads it once this call is done
        if (Atomics.compareExchange(ctl, W.failed, 0, 1) === 0) {
          const text = `${(err as Error)?.message ?? err}`.slice(0, W.errorWords - 1);
          for (let i = 0; i < text.length; i++) ctl[W.error + 1 + i] = text.charCodeAt(i);
          ctl[W.error] = text.length;
        }
      }
      Atomics.store(ctl, W.done + index, seen);
    }
    if (!nodePort) scope.close();
  };
  if (nodePort) nodePort.once('message', (m) => start(m as HelperInit));
  else scope.addEventListener('message', (e) => start(e.data as HelperInit), { once: true });
}
