// kv-append: write the K/V rows of a step's T new tokens into the paged cache.
//   k_cache[page, slot, :, :] = k_new[t, :, :],  v_cache[...] = v_new[t, :, :]
//   page = page_table[seq_ids[t] * max_pages + positions[t] / PAGE],  slot = positions[t] % PAGE
//   k_new, v_new: (T, Hkv, D) f32    k_cache, v_cache: (pages, PAGE, Hkv, D) f32
//   page_table: (B, max_pages) u32    seq_ids, positions: (T) u32
// One invocation copies one element of K and of V (linear id over T * Hkv * D, grid2d). Tokens whose
// sequence, page-table column or page id is out of range are skipped rather than written elsewhere.

override WG_SIZE: u32 = 64u;

struct Params {
  tokens: u32,     // T
  row: u32,        // Hkv * D: floats per token
  page_size: u32,  // PAGE
  max_pages: u32,  // page-table columns
  sequences: u32,  // B: page-table rows
  pages: u32,      // pages in the cache
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k_new: array<f32>;
@group(0) @binding(2) var<storage, read> v_new: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read> page_table: array<u32>;
@group(0) @binding(6) var<storage, read> seq_ids: array<u32>;
@group(0) @binding(7) var<storage, read> positions: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  if (i >= p.tokens * p.row) { return; }
  let t = i / p.row;
  let e = i % p.row;
  let seq = seq_ids[t];
  let pos = positions[t];
  let col = pos / p.page_size;
  if (seq >= p.sequences || col >= p.max_pages) { return; }
  let page = page_table[seq * p.max_pages + col];
  if (page >= p.pages) { return; }
  let dst = (page * p.page_size + pos % p.page_size) * p.row + e;
  k_cache[dst] = k_new[i];
  v_cache[dst] = v_new[i];
}
