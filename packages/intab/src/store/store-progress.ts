// Progress of the model store's work over a model's files (downloads, and the hashing of stored files), as
// ensure()'s onProgress reports it: totals per file and overall, at most ten reports a second, and for downloads a
// speed over the last seconds and an ETA.

import type { StoreProgress } from './model-store.ts';

/** What Progress reads of a model: its id, and each file's name, size and stored bytes. */
export interface ProgressModel {
  id: string;
  files: { name: string; size?: number; state: { bytes: number; size?: number } }[];
}

/** Progress over a model's files: totals, and for downloads a speed over the last seconds and an ETA. */
export class Progress {
  private readonly loaded: number[];
  private readonly totals: number[];
  private readonly samples: { t: number; bytes: number }[] = [];
  private last = 0;

  constructor(
    private readonly m: ProgressModel,
    private readonly phase: 'download' | 'verify',
    private readonly report?: (p: StoreProgress) => void,
  ) {
    this.loaded = m.files.map((f) => (phase === 'download' ? f.state.bytes : 0));
    this.totals = m.files.map((f) => f.size ?? f.state.size ?? f.state.bytes);
  }

  /** A file that needs no work now (stored and unchanged): counted as done, without a report. */
  skip(i: number): void {
    this.loaded[i] = this.totals[i] = this.m.files[i].state.bytes;
  }

  file(i: number, loaded: number, total: number | undefined): void {
    this.loaded[i] = loaded;
    if (total !== undefined) this.totals[i] = total;
    if (!this.report) return;
    const now = performance.now();
    const sum = this.loaded.reduce((a, b) => a + b, 0);
    const total_ = this.totals.reduce((a, b, j) => a + Math.max(b, this.loaded[j]), 0);
    if (now - this.last < 100 && sum < total_) return; // at most ten reports a second
    this.last = now;
    const p: StoreProgress = {
      phase: this.phase,
      model: this.m.id,
      loaded: sum,
      total: total_,
      files: this.m.files.map((f, j) => ({ name: f.name, loaded: this.loaded[j], total: Math.max(this.totals[j], this.loaded[j]) })),
    };
    if (this.phase === 'download') {
      this.samples.push({ t: now, bytes: sum });
      while (this.samples.length > 2 && now - this.samples[0].t > 3000) this.samples.shift();
      const first = this.samples[0];
      const dt = (now - first.t) / 1000;
      if (dt > 0.2) {
        p.bytesPerSecond = (sum - first.bytes) / dt;
        if (p.bytesPerSecond > 0) p.etaSeconds = (total_ - sum) / p.bytesPerSecond;
      }
    }
    this.report(p);
  }
}
