// The entry of intab-node.mjs, the Node runtime's bundle: `node intab-node.mjs bench decode --model m.gguf --json`.
import { runNode } from './main.ts';

runNode(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`intab: ${err?.message ?? err}`);
    process.exit(1);
  },
);
