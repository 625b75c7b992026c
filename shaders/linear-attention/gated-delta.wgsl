// gated-delta: the gated delta rule of Qwen3.5's linear-attention layers over a step's tokens, decode (one token per
// sequence) and prefill (T tokens per sequence, a sequential scan) alike. Per value head h, its state S (Dk × Dv)
// and each of the sequence's tokens in order:
//   k̂ = k / max(‖k‖, eps),  q̂ = scale · q / max(‖q‖, eps)   (L2NORM; else k̂ = k, q̂ = scale · q)
//   S ← exp(g) · S;   u = β · (v − Sᵀ k̂);   S ← S + k̂ uᵀ;   o = Sᵀ q̂        (o from the updated state)
//   qkv: (T, ROW) f32, token t's row holding q (Hk, Dk) at Q_OFF, k (Hk, Dk) at K_OFF, v (Hv, Dv) at V_OFF (the
//        conv's output read in place); value head h reads key head h % Hk (TILED, llama.cpp) or h / (Hv / Hk)
//   g, beta: token t's Hv values at t·G_STRIDE + G_OFF and t·B_STRIDE + B_OFF ((T, Hv) dense by default; both
//        may be views of one [b | a] projection row). RAW_GATES: they hold the raw projections a and b, and
//        g = ssm_a[h] · softplus(a + dt_bias[h]), β = sigmoid(b), from gate_w = [ssm_a (Hv) | dt_bias (Hv)]
//        (ssm_a = −exp(A_log))
//   state: (slots, Hv, Dk, Dv) f32, S[h][i][j] at ((slot·Hv + h)·Dk + i)·Dv + j
//   slot_ids: (B) u32 each sequence row's slot    seq_ids: (T) u32 (lib/seq-range.wgsl)    out: (T, Hv, Dv) f32
// Column j of S evolves on its own given k̂, q̂, v_j, g and β, so one invocation owns 4 columns (a vec4) of one
// head of one sequence row (linear id (b·Hv + h)·Dv/4 + j4, grid2d), keeps them in private memory (DK vec4s) while
// it walks the row's tokens, and reads and writes its slot once a step whatever T is; no workgroup memory, no
// barrier (software adapters pay a coroutine switch per barrier). One pass over S a token: with the sums over
// the raw k and q, a = Sᵀk, c = Sᵀq, kk = ‖k‖², qq = ‖q‖², kq = k·q (norms applied afterwards as scalars
// rk = 1/max(√kk, eps), rq = scale/max(√qq, eps)),
//   u = β (v − exp(g) rk a),   o = exp(g) rq c + rk rq kq u,   S ← exp(g) S + k (rk u)ᵀ
// and the pass that writes the new S forms the next token's a, c, kk, qq, kq as it goes (the first token's come
// with the read of the slot, the last token's S goes straight back to it). Per token and column: 4·Dk FMAs.
// Rounding differs from reference/gated-delta.ts (which normalizes first and sums S·q̂ over the updated S) by a
// few ulp; the chunked (WY/UT) form and why not: packages/gpu/src/kernels/gated-delta.ts (measured there).
// A row with no token in the step, or whose slot is ≥ slots, touches nothing. Dk % 4 == 0, Dk ≤ MAX_DK, Dv % 4 == 0.

override WG_SIZE: u32 = 64u;
override DK: u32 = 128u;      // Dk: key head dimension
override TILED: bool = true;  // key head of value head h: h % Hk (true) or h / (Hv / Hk)
override L2NORM: bool = true;
override RAW_GATES: bool = false;
const MAX_DK: u32 = 128u;

struct Params {
  tokens: u32,     // T
  sequences: u32,  // B: rows of slot_ids
  slots: u32,      // slots in state
  v_heads: u32,    // Hv
  k_heads: u32,    // Hk
  dv4: u32,        // Dv / 4
  row4: u32,       // ROW / 4: qkv row stride in vec4s
  q_off4: u32,     // Q_OFF / 4
  k_off4: u32,     // K_OFF / 4
  v_off4: u32,     // V_OFF / 4
  scale: f32,      // q scale (1/√Dk)
  eps: f32,        // l2 norm floor
  g_stride: u32,   // G_STRIDE
  g_off: u32,      // G_OFF
  b_stride: u32,   // B_STRIDE
  b_off: u32,      // B_OFF
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read> beta: array<f32>;
@group(0) @binding(4) var<storage, read> slot_ids: array<u32>;
@group(0) @binding(5) var<storage, read> seq_ids: array<u32>;
@group(0) @binding(6) var<storage, read_write> state: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> gate_w: array<f32>;  // RAW_GATES only

var<private> s: array<vec4<f32>, MAX_DK>;  // S[h][i][4·j4 .. 4·j4 + 3], i < Dk

// Keeps rows i..i+3 of the invocation's S columns (s0..s3) and returns their parts of Sᵀk and Sᵀq (k, q: those rows).
fn keep_rows(i: u32, s0: vec4<f32>, s1: vec4<f32>, s2: vec4<f32>, s3: vec4<f32>, k: vec4<f32>, q: vec4<f32>) -> mat2x4<f32> {
  s[i] = s0;
  s[i + 1u] = s1;
  s[i + 2u] = s2;
  s[i + 3u] = s3;
  return mat2x4<f32>(s0 * k.x + s1 * k.y + s2 * k.z + s3 * k.w, s0 * q.x + s1 * q.y + s2 * q.z + s3 * q.w);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let dv4 = p.dv4;
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  if (id >= p.sequences * p.v_heads * dv4) { return; }
  let j4 = id % dv4;
  let h = (id / dv4) % p.v_heads;
  let b = id / (dv4 * p.v_heads);
  let slot = slot_ids[b];
  if (slot >= p.slots) { return; }
  let t0 = seq_first(b, p.tokens);
  let t1 = seq_first(b + 1u, p.tokens);
  if (t0 >= t1) { return; }

  let dk4 = DK / 4u;
  let kh = select(h / (p.v_heads / p.k_heads), h % p.k_heads, TILED);
  let qh = p.q_off4 + kh * dk4;  // q's vec4 offset in a row
  let kh4 = p.k_off4 + kh * dk4;  // k's
  let base = (slot * p.v_heads + h) * DK * dv4 + j4;
  // S from its slot, and the first token's sums over raw k and q: a = Sᵀk, c = Sᵀq, kk = k·k, qq = q·q, kq = k·q.
  var a = vec4<f32>(0.0);
  var c = vec4<f32>(0.0);
  var kk = 0.0;
  var qq = 0.0;
  var kq = 0.0;
  for (var i4 = 0u; i4 < dk4; i4++) {
    let kv = qkv[t0 * p.row4 + kh4 + i4];
    let qv = qkv[t0 * p.row4 + qh + i4];
    kk += dot(kv, kv);
    qq += dot(qv, qv);
    kq += dot(kv, qv);
    let i = 4u * i4;
    let r = keep_rows(i, state[base + i * dv4], state[base + (i + 1u) * dv4], state[base + (i + 2u) * dv4],
                      state[base + (i + 3u) * dv4], kv, qv);
    a += r[0];
    c += r[1];
  }
  for (var t = t0; t < t1; t++) {
    var rk = 1.0;
    var rq = p.scale;
    if (L2NORM) {
      rk = 1.0 / max(sqrt(kk), p.eps);
      rq = p.scale / max(sqrt(qq), p.eps);
    }
    var gt = g[t * p.g_stride + p.g_off + h];
    var bt = beta[t * p.b_stride + p.b_off + h];
    if (RAW_GATES) {
      let x = gt + gate_w[p.v_heads + h];
      gt = gate_w[h] * select(log(1.0 + exp(x)), x, x > 20.0);  // softplus, linear past 20 as torch and ggml
      bt = 1.0 / (1.0 + exp(-bt));
    }
    let gi = t * p.v_heads + h;
    let decay = exp(gt);
    let u = bt * (qkv[t * p.row4 + p.v_off4 + h * dv4 + j4] - decay * rk * a);  // β(v − (exp(g)·S)ᵀk̂)
    out[gi * dv4 + j4] = decay * rq * c + (rk * rq * kq) * u;                          // (exp(g)·S + k̂uᵀ)ᵀq̂
    let ku = rk * u;
    let kb = t * p.row4 + kh4;
    if (t + 1u == t1) {
      // The last token: S ← exp(g)·S + k̂ uᵀ straight back to the slot.
      for (var i4 = 0u; i4 < dk4; i4++) {
        let kv = qkv[kb + i4];
        let i = 4u * i4;
        state[base + i * dv4] = decay * s[i] + kv.x * ku;
        state[base + (i + 1u) * dv4] = decay * s[i + 1u] + kv.y * ku;
        state[base + (i + 2u) * dv4] = decay * s[i + 2u] + kv.z * ku;
        state[base + (i + 3u) * dv4] = decay * s[i + 3u] + kv.w * ku;
      }
      break;
    }
    // S ← exp(g)·S + k̂ uᵀ, and in the same pass the next token's sums over the updated S: one read and one
    // write of S per token.
    let nkb = (t + 1u) * p.row4 + kh4;
    let nqb = (t + 1u) * p.row4 + qh;
    a = vec4<f32>(0.0);
    c = vec4<f32>(0.0);
    kk = 0.0;
    qq = 0.0;
    kq = 0.0;
    for (var i4 = 0u; i4 < dk4; i4++) {
      let kv = qkv[kb + i4];
      let nk = qkv[nkb + i4];
      let nq = qkv[nqb + i4];
      kk += dot(nk, nk);
      qq += dot(nq, nq);
      kq += dot(nk, nq);
      let i = 4u * i4;
      let r = keep_rows(i, decay * s[i] + kv.x * ku, decay * s[i + 1u] + kv.y * ku, decay * s[i + 2u] + kv.z * ku,
                        decay * s[i + 3u] + kv.w * ku, nk, nq);
      a += r[0];
      c += r[1];
    }
  }
}
