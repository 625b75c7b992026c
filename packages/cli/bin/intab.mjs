#!/usr/bin/env node
// intab command line. `intab bench kernels [--json] [--quick] [--filter TEXT]`
import { main } from '../src/main.mjs';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`intab: ${err?.message ?? err}`);
    process.exit(1);
  },
);
