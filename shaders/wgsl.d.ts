// WGSL sources are imported as text through Vite's `?raw` suffix.
declare module '*.wgsl?raw' {
  const source: string;
  export default source;
}
