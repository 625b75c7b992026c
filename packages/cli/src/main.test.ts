import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { grammarBenchOptions } from './bench-grammar.ts';
import { chatJobFromFlags, readConversation } from './bench-chat.ts';
import { compareOptions } from './bench-compare.ts';
import { jobFromFlags } from './generate.ts';
import { USAGE as USAGE_FOR_TESTS, main, parseArgs } from './main.ts';
import { flagsByCommand } from './flags.ts';
import { makeModelOptions, writeSyntheticModel } from './make-model.ts';
import { benchServeOptions } from './bench-serve.ts';
import { CHATML, serveOptions } from './serve.ts';

describe('intab CLI arguments', () => {
  test('flags with values, boolean flags and positionals', () => {
    expect(parseArgs(['bench', 'kernels', '--json', '--filter', 'lm_head', '--timeout=30'])).toEqual({
      positional: ['bench', 'kernels'],
      flags: { json: true, filter: 'lm_head', timeout: '30' },
    });
    // boolean flags never swallow the next word
    expect(parseArgs(['--quick', 'bench'])).toEqual({ positional: ['bench'], flags: { quick: true } });
  });

  test('no command prints usage and exits 2; an unknown command exits 2', async () => {
    const log = console.log;
    const err = console.error;
    const out: string[] = [];
    console.log = console.error = (...a: unknown[]) => void out.push(a.join(' '));
    try {
      expect(await main([])).toBe(2);
      expect(await main(['frobnicate'])).toBe(2);
      expect(await main(['--help'])).toBe(0);
    } finally {
      console.log = log;
      console.error = err;
    }
    expect(out.join('\n')).toMatch(/usage:\n\s+intab generate --model/);
    for (const cmd of ['intab bench decode', 'intab bench speculative', 'intab bench grammar', 'intab bench chat', 'intab bench kernels', 'intab make-model', 'intab serve', 'intab bench serve']) expect(out.join('\n')).toContain(cmd);
    for (const flag of ['--api-key KEY[:rpm=N,tpm=N]', '--rate-limit rpm=N,tpm=N', '--cert FILE --key FILE', '--max-queue N', '--keep-alive-ms', '--grace-ms', '/v1/realtime-text', 'return_token_ids', '"lost_tokens"', '--clients N']) {
      expect(out.join('\n')).toContain(flag);
    }
    for (const flag of ['--conversation FILE', '--prefix-cache on|off|both', '--preload', '--persist', '"ttft_ratio_last_turn"', '"ttft_growth_on"']) expect(out.join('\n')).toContain(flag);
    for (const flag of ['--compare REF', '--rounds N', '"type":"compare-run"', '"ref_commit"', '"prefill_ratio"']) expect(out.join('\n')).toContain(flag);
    for (const flag of ['--concurrency N', '--abort-after-tokens K', '--batch 1,2,4,8', '--speculative ngram|draft|self|auto', '--draft', '--spec-k K', '--no-adaptive', '--methods ngram,self,draft', '--grounded-prompt']) {
      expect(out.join('\n')).toContain(flag);
    }
    // the grounded prompt's construction, and its limit, are spelled out
    expect(out.join('\n')).toMatch(/P \+ G \+ P/);
    expect(out.join('\n')).toMatch(/does not copy/);
    expect(out.join('\n')).toMatch(/unknown command 'frobnicate'/);
  });

  const model = { kind: 'gguf' as const, files: ['m.gguf'], urls: ['/__intab_model/m.gguf'] };

  test('generate --concurrency and --abort-after-tokens reach the page job as numbers', () => {
    const { flags } = parseArgs(['generate', '--prompt-ids', '1,2,3', '--concurrency', '3', '--abort-after-tokens=5', '--temperature', '0']);
    const job = jobFromFlags(flags, 'generate', model);
    expect(job).toMatchObject({ mode: 'generate', promptIds: [1, 2, 3], concurrency: 3, abortAfterTokens: 5, temperature: 0, maxTokens: 128 });
    expect(job.batch).toBeUndefined();
    // without the flags the job is the single-stream one it always was
    const single = jobFromFlags(parseArgs(['--prompt-ids', '1']).flags, 'generate', model);
    expect(single.concurrency).toBeUndefined();
    expect(single.abortAfterTokens).toBeUndefined();
  });

  test('bench decode --batch takes a list of batch sizes', () => {
    const job = jobFromFlags(parseArgs(['--batch', '1,2, 4,8', '--prompt-tokens', '16', '--max-tokens', '16']).flags, 'bench', model);
    expect(job).toMatchObject({ mode: 'bench', batch: [1, 2, 4, 8], promptTokens: 16, maxTokens: 16, temperature: 0 });
  });

  test('bad counts and lists fail with a message that says what to pass', () => {
    const flags = (argv: string[]) => parseArgs(argv).flags;
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--concurrency', '0']), 'generate', model)).toThrow(/--concurrency needs a whole number of at least 1/);
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--concurrency', '2.5']), 'generate', model)).toThrow(/--concurrency needs a whole number/);
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--abort-after-tokens', 'x']), 'generate', model)).toThrow(/--abort-after-tokens needs a number/);
    expect(() => jobFromFlags(flags(['--batch', '1,0']), 'bench', model)).toThrow(/--batch needs comma-separated batch sizes, e\.g\. --batch 1,2,4,8/);
    expect(() => jobFromFlags(flags(['--batch']), 'bench', model)).toThrow(/--batch needs/);
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--batch', '2']), 'generate', model)).toThrow(/--batch is for intab bench decode/);
    expect(() => jobFromFlags(flags(['--concurrency', '2']), 'bench', model)).toThrow(/--concurrency is for intab generate/);
  });

  test('bench decode --compare REF: 3 rounds by default, both trees get the same flags with the model made absolute', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'intab-cmp-'));
    writeFileSync(join(dir, 'm.gguf'), '');
    const rel = relative(process.cwd(), join(dir, 'm.gguf'));
    const o = compareOptions(parseArgs(['--model', rel, '--compare', 'HEAD~3', '--batch', '1,2', '--max-tokens', '16', '--quantize', 'q8_0']).flags);
    expect(o).toEqual({ ref: 'HEAD~3', rounds: 3, args: ['bench', 'decode', '--model', join(dir, 'm.gguf'), '--batch', '1,2', '--max-tokens', '16', '--quantize', 'q8_0', '--json'] });
    expect(compareOptions(parseArgs(['--model', rel, '--compare', 'abc1234', '--rounds', '1', '--json']).flags)).toEqual({ ref: 'abc1234', rounds: 1, args: ['bench', 'decode', '--model', join(dir, 'm.gguf'), '--json'] });
    const bad = (argv: string[]) => () => compareOptions(parseArgs(['--model', rel, ...argv]).flags);
    expect(bad(['--compare'])).toThrow(/--compare needs a git ref/);
    expect(bad(['--compare', 'HEAD', '--rounds', '0'])).toThrow(/--rounds needs a whole number from 1 to 50/);
    // the bench flags are checked before any worktree is made
    expect(bad(['--compare', 'HEAD', '--concurrency', '2'])).toThrow(/--concurrency is for intab generate/);
    expect(() => compareOptions(parseArgs(['--compare', 'HEAD']).flags)).toThrow(/--model .* is required/);
    await expect(main(['bench', 'decode', '--model', rel, '--rounds', '2'])).rejects.toThrow(/--rounds goes with --compare REF/);
  });

  const draft = { kind: 'gguf' as const, files: ['d.gguf'], urls: ['/__intab_draft/d.gguf'] };

  test('generate --speculative: the request option, with --spec-k and --no-adaptive folded in', () => {
    const job = (argv: string[], d?: typeof draft) => jobFromFlags(parseArgs(argv).flags, 'generate', model, d);
    expect(job(['--prompt-ids', '1,2', '--speculative', 'ngram']).speculative).toBe('ngram');
    expect(job(['--prompt-ids', '1,2', '--speculative', 'self', '--spec-k', '3', '--no-adaptive']).speculative).toEqual({ method: 'self', k: 3, adaptive: false });
    // --no-adaptive never swallows the next word
    expect(parseArgs(['--no-adaptive', 'generate']).positional).toEqual(['generate']);
    // a draft model is served under its own prefix and named in the job; --draft alone is the engine's 'auto'
    const withDraft = job(['--prompt-ids', '1', '--speculative', 'draft', '--draft', 'd.gguf'], draft);
    expect(withDraft).toMatchObject({ speculative: 'draft', draft: { kind: 'gguf', urls: ['/__intab_draft/d.gguf'] } });
    expect(job(['--prompt-ids', '1', '--draft', 'd.gguf'], draft).speculative).toBeUndefined();
    expect(job(['--prompt-ids', '1', '--draft', 'd.gguf', '--spec-k', '2'], draft).speculative).toEqual({ method: 'auto', k: 2 });
    // without the flags nothing about speculation reaches the page
    const plain = job(['--prompt-ids', '1']);
    for (const k of ['speculative', 'draft', 'methods', 'specK'] as const) expect(plain[k]).toBeUndefined();
  });

  test('generate --json-schema / --json-object / --grammar / --regex: the constrained format in the job', () => {
    const dir = mkdtempSync(join(tmpdir(), 'intab-cli-'));
    const schemaFile = join(dir, 'schema.json');
    writeFileSync(schemaFile, JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } } }));
    const gbnfFile = join(dir, 'list.gbnf');
    writeFileSync(gbnfFile, 'root ::= "a" | "b"');
    const job = (argv: string[]) => jobFromFlags(parseArgs(['--prompt', 'x', ...argv]).flags, 'generate', model);
    expect(job(['--json-schema', schemaFile]).format).toEqual({ responseFormat: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'integer' } } } } });
    expect(job(['--json-schema', schemaFile, '--lenient']).format).toMatchObject({ responseFormat: { strict: false } });
    expect(job(['--json-object', '--json']).format).toEqual({ responseFormat: { type: 'json_object' } });
    expect(job(['--grammar', gbnfFile]).format).toEqual({ grammar: 'root ::= "a" | "b"' });
    expect(job(['--regex', '[0-9]{3}']).format).toEqual({ regex: '[0-9]{3}' });
    expect(job([]).format).toBeUndefined();
    expect(() => job(['--json-schema', join(dir, 'missing.json')])).toThrow(/--json-schema .*missing\.json: cannot read it/);
    writeFileSync(schemaFile, '{ not json');
    expect(() => job(['--json-schema', schemaFile])).toThrow(/not JSON/);
    expect(() => job(['--grammar', gbnfFile, '--regex', 'a'])).toThrow(/cannot be combined/);
    expect(() => job(['--lenient'])).toThrow(/--lenient goes with --json-schema/);
    expect(() => jobFromFlags(parseArgs(['--regex', 'a']).flags, 'bench', model)).toThrow(/--regex is for intab generate/);
  });

  test('bad speculative flags fail with a message that says what to pass', () => {
    const job = (argv: string[], mode: 'generate' | 'bench' | 'speculative' = 'generate') => () => jobFromFlags(parseArgs(argv).flags, mode, model);
    expect(job(['--prompt-ids', '1', '--speculative', 'draft'])).toThrow(/--speculative draft needs --draft <gguf file \| HF folder>/);
    expect(job(['--prompt-ids', '1', '--speculative', 'medusa'])).toThrow(/--speculative takes ngram, draft, self or auto/);
    expect(job(['--prompt-ids', '1', '--speculative'])).toThrow(/--speculative takes ngram, draft, self or auto/);
    expect(job(['--prompt-ids', '1', '--speculative', 'ngram', '--spec-k', '0'])).toThrow(/--spec-k needs a whole number of proposals per step from 1 to 16/);
    expect(job(['--prompt-ids', '1', '--speculative', 'ngram', '--spec-k', '17'])).toThrow(/--spec-k needs/);
    expect(job(['--prompt-ids', '1', '--spec-k', '4'])).toThrow(/--spec-k needs --speculative ngram\|draft\|self\|auto/);
    expect(job(['--prompt-ids', '1', '--no-adaptive'])).toThrow(/--no-adaptive needs --speculative/);
    expect(job(['--prompt-ids', '1', '--methods', 'ngram'])).toThrow(/--methods is for intab bench speculative/);
    expect(job(['--speculative', 'ngram'], 'bench')).toThrow(/--speculative is not for intab bench decode: measure speculative decoding with intab bench speculative/);
    expect(job(['--draft', 'd.gguf'], 'bench')).toThrow(/--draft is not for intab bench decode/);
  });

  test('bench speculative: methods (draft only with --draft), a fixed k of 4, 64 tokens and 32 prompt tokens by default', () => {
    const job = (argv: string[], d?: typeof draft) => jobFromFlags(parseArgs(argv).flags, 'speculative', model, d);
    expect(job([])).toMatchObject({ mode: 'speculative', methods: ['ngram', 'self'], specK: 4, maxTokens: 64, promptTokens: 32, temperature: 0, repeats: 3 });
    expect(job(['--repeats', '5']).repeats).toBe(5);
    expect(job(['--draft', 'd.gguf', '--quantize', 'q8_0'], draft)).toMatchObject({ methods: ['ngram', 'self', 'draft'], quantize: 'q8_0', draft: { urls: ['/__intab_draft/d.gguf'] } });
    expect(job(['--methods', 'self, ngram,self', '--spec-k', '6', '--max-tokens', '32'])).toMatchObject({ methods: ['self', 'ngram'], specK: 6, maxTokens: 32 });
    expect(job(['--prompt', 'Once upon a time', '--grounded-prompt', 'Tom had a red ball. Once upon a time'])).toMatchObject({
      prompt: 'Once upon a time',
      groundedPrompt: 'Tom had a red ball. Once upon a time',
    });
    expect(job(['--prompt-ids', '1,5,9']).promptIds).toEqual([1, 5, 9]);
  });

  test('bad bench speculative flags fail with a message that says what to pass', () => {
    const job = (argv: string[]) => () => jobFromFlags(parseArgs(argv).flags, 'speculative', model);
    expect(job(['--methods', 'draft'])).toThrow(/--methods draft needs --draft <gguf file \| HF folder>/);
    expect(job(['--methods', 'ngram,medusa'])).toThrow(/--methods needs a comma-separated list of ngram, self and draft/);
    expect(job(['--methods'])).toThrow(/--methods needs/);
    expect(job(['--speculative', 'ngram'])).toThrow(/--speculative is for intab generate: intab bench speculative measures --methods/);
    expect(job(['--no-adaptive'])).toThrow(/--no-adaptive is for intab generate/);
    expect(job(['--temperature', '0.8'])).toThrow(/--temperature is not for intab bench speculative: it decodes greedily/);
    expect(job(['--chat', 'hi'])).toThrow(/--chat is not for intab bench speculative/);
    expect(job(['--repeats', '0'])).toThrow(/--repeats needs a whole number from 1 to 50/);
    expect(job(['--spec-k', 'x'])).toThrow(/--spec-k needs a whole number/);
    expect(job(['--grounded-prompt'])).toThrow(/--grounded-prompt needs text/);
    expect(job(['--prompt-tokens', '0'])).toThrow(/--prompt-tokens needs a whole number of at least 1/);
  });

  test('bench grammar: both tokenizers, every schema, a decode part of 48 tokens x 3 pairs by default', () => {
    const opts = (argv: string[]) => grammarBenchOptions(parseArgs(['bench', 'grammar', ...argv]).flags);
    expect(opts([])).toMatchObject({ json: false, tokenizers: ['qwen3', 'llama3'], schemas: undefined, decode: true, model: undefined, maxTokens: 48, repeats: 3, temperature: 1, seed: 1 });
    expect(opts(['--json', '--tokenizers', 'llama3, qwen3,llama3', '--schemas', '20'])).toMatchObject({ json: true, tokenizers: ['llama3', 'qwen3'], schemas: 20 });
    expect(opts(['--model', 'm.gguf', '--max-tokens', '32', '--repeats=5', '--decode-schema', 'Kubernetes/kb_1'])).toMatchObject({ model: 'm.gguf', maxTokens: 32, repeats: 5, decodeSchema: 'Kubernetes/kb_1' });
    // --no-decode is a boolean: it never swallows the next word
    expect(parseArgs(['bench', '--no-decode', 'grammar']).positional).toEqual(['bench', 'grammar']);
    expect(opts(['--no-decode', '--json']).decode).toBe(false);
  });

  test('bad bench grammar flags fail with a message that says what to pass', () => {
    const opts = (argv: string[]) => () => grammarBenchOptions(parseArgs(argv).flags);
    expect(opts(['--tokenizers', 'gpt2'])).toThrow(/--tokenizers needs a comma-separated list of qwen3 and llama3/);
    expect(opts(['--tokenizers'])).toThrow(/--tokenizers needs/);
    expect(opts(['--schemas', '0'])).toThrow(/--schemas needs a whole number from 1 to 100/);
    expect(opts(['--schemas', '101'])).toThrow(/--schemas needs/);
    expect(opts(['--schemas', 'all'])).toThrow(/--schemas needs/);
    expect(opts(['--repeats', '0'])).toThrow(/--repeats needs a whole number from 1 to 20/);
    expect(opts(['--max-tokens', '1'])).toThrow(/--max-tokens needs a whole number from 2/);
    expect(opts(['--model'])).toThrow(/--model needs a model/);
    expect(opts(['--decode-schema'])).toThrow(/--decode-schema needs a schema id/);
    expect(opts(['--no-decode', '--model', 'm.gguf'])).toThrow(/--model is for the decode part, which --no-decode skips/);
    expect(opts(['--temperature', '-1'])).toThrow(/--temperature needs a number of at least 0/);
  });

  test('make-model --tokenizer qwen3|llama3', () => {
    const opts = (argv: string[]) => makeModelOptions(parseArgs(['make-model', ...argv]).flags);
    expect(opts(['--out', 'm.gguf'])).toEqual({ like: 'smollm2-135m', dtype: 'q4_0', out: 'm.gguf', seed: 1 });
    expect(opts(['--like', 'qwen3-0.6b', '--dtype', 'q8_0', '--tokenizer', 'qwen3', '--out', 'q.gguf', '--seed', '7'])).toEqual({ like: 'qwen3-0.6b', dtype: 'q8_0', out: 'q.gguf', seed: 7, tokenizer: 'qwen3' });
    expect(opts(['--tokenizer', 'llama3', '--out', 'l.gguf']).tokenizer).toBe('llama3');
    expect(() => opts(['--tokenizer', 'llama2', '--out', 'm.gguf'])).toThrow(/--tokenizer takes qwen3 or llama3/);
    expect(() => opts(['--tokenizer', '--out', 'm.gguf'])).toThrow(/--tokenizer takes/);
    expect(() => opts(['--tokenizer', 'qwen3'])).toThrow(/--out <file.gguf> is required/);
    expect(opts(['--layers', '2', '--out', 'm.gguf']).layers).toBe(2);
    expect(() => opts(['--layers', '0', '--out', 'm.gguf'])).toThrow(/--layers needs a whole number from 1 to 256, e.g. --layers 2/);
    // Qwen3.5 below one period of its pattern (3 Gated DeltaNet layers, then attention) has no attention layer: refused.
    expect(() => writeSyntheticModel({ ...opts(['--like', 'qwen3.5-0.8b', '--layers', '3', '--out', join(tmpdir(), 'never.gguf')]) })).toThrow(/--layers 3: a qwen3.5-0.8b file needs at least 4 layers/);
  });
});

describe('intab bench chat arguments', () => {
  const model = { kind: 'gguf' as const, files: ['m.gguf'], urls: ['/m/m.gguf'] };
  const file = (content: string) => {
    const path = join(mkdtempSync(join(tmpdir(), 'intab-chat-')), 'conversation.json');
    writeFileSync(path, content);
    return path;
  };

  test('defaults, and a conversation whose assistant messages are dropped', () => {
    expect(chatJobFromFlags({}, model)).toMatchObject({ mode: 'chat', cacheModes: 'both', maxTokens: 32, temperature: 0, preload: false, persist: false, persistTokens: 2048 });
    expect(chatJobFromFlags({}, model).conversation).toBeUndefined(); // the page's built-in 8-turn chat
    expect(chatJobFromFlags({}, model).backend).toBe('webgpu');
    expect(chatJobFromFlags({ backend: 'onnx-wasm', preload: true }, model)).toMatchObject({ backend: 'onnx-wasm', preload: true });
    expect(() => chatJobFromFlags({ backend: 'cuda' }, model)).toThrow(/--backend takes webgpu, auto, onnx-wasm, onnx-webgpu/);
    expect(() => chatJobFromFlags({ backend: 'onnx-wasm', quantize: 'q8_0' }, model)).toThrow(/drop one of them/);
    const path = file(JSON.stringify([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'ignored' },
      { role: 'user', content: 'b' },
    ]));
    const job = chatJobFromFlags({ conversation: path, 'prefix-cache': 'on', 'max-tokens': '8', preload: true, persist: true }, model);
    expect(job).toMatchObject({ cacheModes: 'on', maxTokens: 8, preload: true, persist: true });
    expect(job.conversation).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ]);
  });

  test('bad flags and bad files say what to do', () => {
    expect(() => chatJobFromFlags({ 'prefix-cache': 'maybe' }, model)).toThrow(/on, off or both/);
    expect(() => chatJobFromFlags({ 'max-tokens': '0' }, model)).toThrow(/--max-tokens needs a whole number/);
    expect(() => readConversation('/nonexistent/c.json')).toThrow(/cannot read it/);
    expect(() => readConversation(file('{'))).toThrow(/not JSON/);
    expect(() => readConversation(file('{"role":"user"}'))).toThrow(/JSON array/);
    expect(() => readConversation(file('[{"role":"user","content":1}]'))).toThrow(/message 0 should be/);
    expect(() => readConversation(file('[{"role":"user","content":"a"},{"role":"system","content":"b"}]'))).toThrow(/only the first/);
    expect(() => readConversation(file('[{"role":"tool","content":"a"}]'))).toThrow(/role 'tool'/);
    expect(() => readConversation(file('[{"role":"system","content":"a"}]'))).toThrow(/no user message/);
  });
});

describe('intab serve and intab bench serve arguments', () => {
  const model = join(mkdtempSync(join(tmpdir(), 'intab-serve-')), 'm.gguf');
  writeFileSync(model, '');

  test('defaults, keys with their own limits, TLS files and a chat template', () => {
    expect(serveOptions({ model })).toMatchObject({ model, host: '127.0.0.1', port: 8080, runtime: 'node', backend: 'auto', apiKeys: [], maxBatch: 16, maxQueue: 64, maxQueuedChunks: 8, kvBudgetMiB: 256, prefixCache: true, keepAliveMs: 15_000, graceMs: 10_000 });
    expect(serveOptions({ model, runtime: 'chromium' })).toMatchObject({ runtime: 'chromium', backend: 'webgpu' });
    expect(() => serveOptions({ model, runtime: 'chromium', 'dawn-backend': 'vulkan' })).toThrow(/--dawn-backend goes with --runtime node/);
    expect(() => serveOptions({ model, headed: true })).toThrow(/--headed shows the browser of --runtime chromium/);
    expect(serveOptions({ model }).rateLimit).toBeUndefined();
    expect(serveOptions({ model }).tls).toBeUndefined();
    const { flags } = parseArgs(['serve', '--model', model, '--port', '0', '--no-prefix-cache', '--rate-limit', 'rpm=60', '--chat-template', 'chatml', '--backend', 'onnx-wasm']);
    const o = serveOptions(flags, ['sk-a', 'sk-b:tpm=500']);
    expect(o).toMatchObject({ port: 0, prefixCache: false, rateLimit: { rpm: 60 }, chatTemplate: CHATML, backend: 'onnx-wasm', apiKeys: [{ key: 'sk-a' }, { key: 'sk-b', rateLimit: { tpm: 500 } }] });
    const dir = mkdtempSync(join(tmpdir(), 'intab-tls-'));
    writeFileSync(join(dir, 'c.pem'), 'CERT');
    writeFileSync(join(dir, 'k.pem'), 'KEY');
    expect(String(serveOptions({ model, cert: join(dir, 'c.pem'), key: join(dir, 'k.pem') }).tls?.cert)).toBe('CERT');
  });

  test('bad flags say what to pass', () => {
    expect(() => serveOptions({})).toThrow(/--model .* is required/);
    expect(() => serveOptions({ model, backend: 'cuda' })).toThrow(/--backend takes webgpu, auto, onnx-wasm, onnx-webgpu/);
    expect(() => serveOptions({ model, cert: 'c.pem' })).toThrow(/--cert and --key go together/);
    expect(() => serveOptions({ model, cert: '/nonexistent/c.pem', key: '/nonexistent/k.pem' })).toThrow(/--cert \/nonexistent\/c.pem: cannot read it/);
    expect(() => serveOptions({ model, port: '70000' })).toThrow(/--port needs a whole number from 0 to 65535/);
    expect(() => serveOptions({ model, 'rate-limit': '60/min' })).toThrow(/--rate-limit takes rpm=N/);
    expect(() => serveOptions({ model }, ['bad key'])).toThrow(/--api-key needs a key/);
    expect(() => serveOptions({ model, 'chat-template': '/nonexistent.jinja' })).toThrow(/--chat-template .*cannot read it/);
    expect(() => serveOptions({ model, quantize: 'q3' })).toThrow(/--quantize takes q8_0 or q4_0/);
    // --no-prefix-cache never swallows the next word
    expect(parseArgs(['--no-prefix-cache', 'serve']).positional).toEqual(['serve']);
  });

  test('bench serve: 8 clients for 20 s of 64 tokens by default; a server or --url', () => {
    expect(benchServeOptions({ model })).toMatchObject({ clients: 8, seconds: 20, maxTokens: 64, promptTokens: 8, transport: 'http1', url: undefined });
    expect(benchServeOptions({ url: 'http://127.0.0.1:8000', 'api-key': 'k', clients: '32', transport: 'h2' })).toMatchObject({ url: 'http://127.0.0.1:8000', apiKey: 'k', clients: 32, transport: 'h2' });
    expect(() => benchServeOptions({})).toThrow(/needs --model .* or --url/);
    expect(() => benchServeOptions({ model, transport: 'h3' })).toThrow(/--transport takes http1/);
    expect(() => benchServeOptions({ model, clients: '0' })).toThrow(/--clients needs a whole number from 1/);
  });
});

describe('flags a command does not take', () => {
  test('are errors that name the closest known flag, per command, from the usage text', async () => {
    await expect(main(['generate', '--model', 'm.gguf', '--prompt', 'hi', '--max-token', '5'])).rejects.toThrow(/intab generate does not take --max-token\. Did you mean --max-tokens\?/);
    await expect(main(['generate', '--model', 'm.gguf', '--prompt', 'hi', '--temprature', '0'])).rejects.toThrow(/Did you mean --temperature\?/);
    await expect(main(['bench', 'decode', '--model', 'm.gguf', '--concurency', '2'])).rejects.toThrow(/intab bench decode does not take --concurency/);
    await expect(main(['serve', '--model', 'm.gguf', '--ratelimit', 'rpm=1'])).rejects.toThrow(/Did you mean --rate-limit\?/);
    // Nothing close: no guess.
    await expect(main(['bench', 'kernels', '--zzzzzzzz'])).rejects.toThrow(/^intab bench kernels does not take --zzzzzzzz\. \(intab --help/);
  });

  test('every command has a usage block, and the runtime flags belong to the commands the Node runtime runs', () => {
    const known = flagsByCommand(USAGE_FOR_TESTS);
    for (const c of ['generate', 'bench decode', 'bench speculative', 'bench grammar', 'bench chat', 'bench store', 'bench compare', 'bench serve', 'bench kernels', 'serve', 'make-model', 'export-onnx', 'bundle-node']) expect(known.has(c), c).toBe(true);
    for (const c of ['generate', 'bench decode', 'bench speculative', 'bench kernels']) expect([...known.get(c)!]).toEqual(expect.arrayContaining(['runtime', 'dawn-backend', 'adapter']));
    expect(known.get('serve')!.has('runtime')).toBe(true); // global
    // serve runs on Dawn by default (--runtime node), so it takes Dawn's flags and onnxruntime-node's threads.
    expect([...known.get('serve')!]).toEqual(expect.arrayContaining(['dawn-backend', 'dawn', 'adapter', 'threads']));
    expect(known.get('bench compare')!.has('dawn-backend')).toBe(false);
  });
});
