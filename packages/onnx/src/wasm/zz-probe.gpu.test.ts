import { test } from 'vitest';
import { I32, WasmModule } from './wasm-module.ts';

test('probe u8', async () => {
  const a = Int8Array.from({ length: 16 }, (_, i) => [127, -128, 100, -77][i % 4] - (i >> 2));
  const b = Uint8Array.from({ length: 16 }, (_, i) => [255, 254, 128, 200][i % 4] - (i >> 2));
  const acc = new Int32Array([1000, -2000, 3000, -4000]);
  const mod = new WasmModule({ memoryPages: 1 });
  const v = (lanes: Int8Array | Uint8Array | Int32Array) => new Uint8Array(lanes.buffer, lanes.byteOffset, lanes.byteLength);
  mod.func('add', [I32], []).get(0).v128_const(v(a)).v128_const(v(b)).v128_const(v(acc)).i32x4_relaxed_dot_i8x16_i7x16_add_s().v128_store(0);
  const bytes = mod.encode();
  const memory = new WebAssembly.Memory({ initial: 1 });
  const probe = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports as any;
  probe.add(0);
  const got = [...new Int32Array(memory.buffer, 0, 4)];
  const want = [0, 1, 2, 3].map((l) => acc[l] + [0, 1, 2, 3].reduce((s, j) => s + a[4 * l + j] * b[4 * l + j], 0));
  const sat = [0, 1, 2, 3].map((l) => { let s = acc[l]; for (const p of [0, 2]) { const x = a[4 * l + p] * b[4 * l + p] + a[4 * l + p + 1] * b[4 * l + p + 1]; s += Math.max(-32768, Math.min(32767, x)); } return s; });
  console.log(JSON.stringify({ got, want, sat }));
  // loop many times to reach turbofan
  const f = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports as any;
  for (let i = 0; i < 200000; i++) f.add(0);
  console.log(JSON.stringify({ hot: [...new Int32Array(memory.buffer, 0, 4)] }));
});
