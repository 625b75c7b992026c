// @ts-check
// Every ```ts block of the READMEs as a module that type-checks on its own against the published package: the
// packaging test writes them into its fresh app and runs tsc over them. A block may use the names a README's prose
// takes for granted (an `engine`, an element to write to, a `prompt`): each one the block uses without declaring it
// is declared here, with the type the README means, and intab's exports it uses without importing them are imported.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The names README blocks take from their context, and their types. */
/** @type {Record<string, string>} */
const CONTEXT = {
  engine: 'import("intab").IntabEngine',
  output: 'HTMLElement',
  out: 'HTMLElement',
  banner: 'HTMLElement',
  bar: 'HTMLProgressElement',
  prompt: 'string',
  model: 'string',
  id: 'string',
  apiKey: 'string',
  messages: "{ role: 'user'; content: string }[]",
  show: '(...values: unknown[]) => void',
  render: '(...values: unknown[]) => void',
  signal: 'AbortSignal',
  OpenAI: 'typeof import("openai").default',
  notes: '{ title: string; text: string }[]',
};

/** @typedef {{ origin: string, code: string }} Snippet where it comes from ('README.md#3'), and the module: declarations, then the block as written */

/** @param {string} code @param {string} name */
function declared(code, name) {
  const decl = new RegExp(`\\b(?:const|let|var|function|class)\\s+${name}\\b`);
  const imported = new RegExp(`import\\s*(?:type\\s*)?\\{[^}]*\\b${name}\\b[^}]*\\}`);
  return decl.test(code) || imported.test(code);
}

/** @param {string} code @param {string} name */
function uses(code, name) {
  // A use: the name as a word, not a property (`.name`) nor an object key (`name:`).
  return new RegExp(`(?<![.\\w$'"])${name}(?![\\w$]|\\s*:(?!:))`).test(code.replace(/(^|\s)\/\/.*$/gm, '$1'));
}

/** The names intab's entry exports (values and types), from its index.ts. */
/** @param {string} root @returns {string[]} */
function intabExports(root) {
  const index = readFileSync(join(root, 'packages/intab/src/index.ts'), 'utf8');
  const names = new Set();
  for (const m of index.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of m[1].split(',')) {
      const n = part.replace(/\btype\b/, '').split(/\bas\b/).pop().trim();
      if (/^\w+$/.test(n)) names.add(n);
    }
  }
  return [...names];
}

/** The ```ts blocks of README.md and packages/intab/README.md, each a self-contained module. */
/** @param {string} root @returns {Snippet[]} */
export function readmeSnippets(root) {
  const exports = intabExports(root);
  /** @type {Snippet[]} */
  const out = [];
  for (const file of ['README.md', 'packages/intab/README.md']) {
    const text = readFileSync(join(root, file), 'utf8');
    let n = 0;
    for (const m of text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)) {
      n++;
      const block = m[1];
      const lines = [];
      const missing = exports.filter((e) => uses(block, e) && !declared(block, e));
      if (missing.length) lines.push(`import { ${missing.join(', ')} } from 'intab';`);
      for (const [name, type] of Object.entries(CONTEXT)) if (uses(block, name) && !declared(block, name)) lines.push(`declare const ${name}: ${type};`);
      lines.push('export {};', block);
      out.push({ origin: `${file}#${n}`, code: lines.join('\n') });
    }
  }
  return out;
}
