// Test tooling of other packages that the CLI's benchmarks and make-model use and that no package exports yet: the
// random-weight GGUF writer and the real tokenizer files (@intab/model's src/reference/synthetic.ts and
// src/tokenizer/test-corpus.ts), the grammar tests' seeded RNG, mask sampler and ajv oracle (@intab/grammar's
// src/tokens/test-grammars.ts and test-validator.ts). They are reached by path here, in this one file, until their
// packages (or @intab/testing) export them; then only this file changes.
export { SYNTHETIC_SHAPES, syntheticGguf, type SyntheticShape } from '../../model/src/reference/synthetic.ts';
export { realTokenizerFiles, type RealTokenizerName } from '../../model/src/tokenizer/test-corpus.ts';
export { rng, sampleMask } from '../../grammar/src/tokens/test-grammars.ts';
export { schemaValidator } from '../../grammar/src/tokens/test-validator.ts';
