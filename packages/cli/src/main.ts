// Command dispatch for the intab CLI: the usage text (which also says which flags each command takes: flags.ts), the
// runtime choice (headless Chromium, or Dawn in Node), and one module per command. bin/intab.mjs builds this module
// and its imports into dist/cli and calls main(argv).
import { parseArgs } from './args.ts';
import { benchChat } from './bench-chat.ts';
import { benchCompare } from './bench-compare.ts';
import { benchGrammar } from './bench-grammar.ts';
import { benchHidden } from './bench-hidden.ts';
import { benchShare } from './bench-share.ts';
import { benchKernels } from './bench-kernels.ts';
import { benchServe } from './bench-serve.ts';
import { benchSoak } from './bench-soak.ts';
import { benchStore } from './bench-store.ts';
import { benchTools } from './bench-tools.ts';
import { benchEmbed } from './bench-embed.ts';
import { benchSystems } from './bench-systems.ts';
import { exportOnnx } from './export-onnx.ts';
import { checkFlags, flagsByCommand } from './flags.ts';
import { generate } from './generate.ts';
import { makeModel } from './make-model.ts';
import { deviceKit } from './device-kit.ts';
import { bundleNode, runNodeRuntime } from './node-runtime.ts';
import { runtimeOf, serve } from './serve.ts';

export { parseArgs };
/** For scripts/test.mjs (plain Node, which runs the CLI's build): the Chromium every tier drives. */
export { chromiumPath } from './chromium.ts';

export const USAGE = `usage:
  intab generate --model <gguf file | HF folder | URL> (--prompt-ids 1,2,3 | --prompt "text" | --chat "message") [--max-tokens N]
                 [--temperature T --top-k K --top-p P --seed S] [--quantize q8_0|q4_0] [--ignore-eos]
                 [--concurrency N] [--abort-after-tokens K]
                 [--speculative ngram|draft|self|auto] [--draft <gguf file | HF folder | URL>] [--spec-k K] [--no-adaptive]
                 [--json-schema FILE [--lenient] | --json-object | --grammar FILE | --regex PATTERN]
                 [--backend webgpu|auto|onnx-wasm|onnx-webgpu] [--cpu-kernels intab|onnxruntime] [--cpu-threads N] [--json]
      Runs the model in headless Chromium through the engine: one JSON line per token ({"id", "text"}),
      then a line with "done": true, ids, finish_reason, prompt_tokens, ttft_ms, prefill_tok_s, decode_tok_s,
      the backend and the adapter.
      --backend: what runs the model (the engine's LoadOptions.backend): webgpu, the default here, is intab's own
      WGSL kernels; onnx-wasm and onnx-webgpu run an ONNX graph written from the GGUF or safetensors weights on
      onnxruntime-web's wasm or WebGPU execution provider; auto is what createEngine does by default (webgpu on a
      hardware adapter, else onnx-wasm). On onnx-wasm a GGUF whose layer matrices are q4_0 / q8_0 runs on intab's own
      wasm SIMD128 kernels (--cpu-kernels onnxruntime runs the ONNX graph instead). Not with --quantize on onnx-*, nor
      with --runtime node. --cpu-threads N splits each of those kernels' matrices across N threads (default 1 here:
      the CLI's page is cross-origin isolated, as wasm threads need, only when N > 1); the adapter says how many ran.
      --concurrency N runs N copies of the request at once through one engine (continuous batching): every line
      carries "stream": i, one done line per stream, then a "summary" line (aggregate tok/s, identical_ids).
      --abort-after-tokens K aborts each stream's AbortSignal after K tokens; its done line gives
      finish_reason "abort" and abort_latency_ms (abort to the end of the stream).
      --speculative decodes speculatively (the output is what plain decoding gives): ngram copies what followed
      an earlier occurrence of the last tokens (prompt lookup), draft asks the --draft model (a smaller model
      with the same vocabulary, loaded beside the target; --draft alone means auto), self runs the model's
      first half of layers, auto is draft with --draft, else ngram. --spec-k K: most proposals per step (1..16;
      8 for ngram, 4 else); --no-adaptive proposes k every step (adaptive k shrinks k, and turns speculation
      off while it does not pay). The done line gains "speculative": method, proposed, accepted, targetSteps,
      verifySteps, draftSteps, targetMs, verifyMs, draftMs, acceptance_rate and
      tokens_per_target_step = (generated - 1) / targetSteps.
      --json-schema FILE constrains the output to JSON that validates against the schema (every token sampled
      under the grammar's mask; --lenient drops keywords that cannot be enforced instead of refusing the
      schema); --json-object to any JSON; --grammar FILE to a GBNF grammar; --regex PATTERN to a regex. JSON
      runs' done line carries "json" (the parsed value, or null when max tokens cut the document short).
  intab bench decode --model <...> [--quantize q8_0|q4_0] [--prompt-tokens N] [--max-tokens N] [--batch 1,2,4,8] [--json]
                 [--compare REF [--rounds N (3)]] [--backend webgpu|auto|onnx-wasm|onnx-webgpu] [--cpu-kernels intab|onnxruntime]
                 [--cpu-threads N]
      Prefill and decode tok/s, the weight bytes read per token, and the GPU work of a decode step
      (dispatches_per_token, dispatches_per_step, bind_groups_per_step: intab's kernels only). --backend as for
      generate (records name it). With --batch, per batch size B: B concurrent
      streams (same prompt length and max tokens), one line each with aggregate_decode_tok_s,
      per_stream_decode_tok_s and ttft_ms.
      --compare REF measures this working tree against a git ref (HEAD~3, a commit, a branch) in one sitting: REF is
      checked out in a temporary git worktree and installed (pnpm, offline first), then each tree's own CLI runs the
      same bench decode (same flags and model file), the trees alternating for --rounds rounds (current first in even
      rounds, REF first in odd ones). JSON lines: per run {"type":"compare-run","tree":"current"|"ref","round",
      "tok_s","prefill_tok_s","ttft_ms",...}, then {"type":"compare","ref","ref_commit","rounds","current_tok_s",
      "ref_tok_s","ratio" (current/ref, of the medians),"current_prefill_tok_s","ref_prefill_tok_s","prefill_ratio",
      "round_ratios","samples",...} (tok_s is decode_tok_s; with --batch aggregate_decode_tok_s, one summary per
      batch size). The worktree is removed at the end, on failure and on Ctrl-C.
  intab bench speculative --model <...> [--draft <...>] [--quantize q8_0|q4_0] [--max-tokens N (64)]
                 [--methods ngram,self,draft] [--spec-k K (4)] [--prompt "text" | --prompt-ids 1,2,3]
                 [--grounded-prompt "text"] [--prompt-tokens N (32)] [--repeats N (3)] [--seed S] [--cpu-kernels intab|onnxruntime]
                 [--cpu-threads N] [--json]
      Speculative against plain greedy decoding (ignoring EOS, max tokens each), in one engine, on two prompts:
        open      --prompt / --prompt-ids; by default a short open question for a model with a tokenizer,
                  else --prompt-tokens seeded random ids (BOS first);
        grounded  --grounded-prompt; by default P + G + P, P the open prompt (its BOS not repeated) and G the
                  plain greedy continuation of P (max tokens long), so the continuation can copy text in the
                  prompt. A model that does not copy (repeat G after the second P) gets no grounded speedup.
      Per prompt and method (default ngram and self, plus draft with --draft): one line with adaptive k (the
      method's default k at most) and one with adaptive false and k = --spec-k, each after an unmeasured
      warm-up of the same method, from --repeats alternating (plain, speculative) run pairs. Fields: prompt,
      method, k, adaptive, acceptance_rate, tokens_per_target_step, verify_decode_cost_ratio (ms per verify
      step / median ms per plain decode step), draft_ms_per_step, decode_tok_s and plain_decode_tok_s
      (medians), speedup (median of the pairs' ratios; speedup_min, speedup_max), identical_ids (every
      speculative run's ids equal its plain run's), model and adapter.
  intab bench grammar [--json] [--tokenizers qwen3,llama3] [--schemas N (per subset; all 100)] [--seed S] [--peer xgrammar]
                 [--model <gguf file | HF folder | URL> --max-tokens N (48) --repeats N (3) --temperature T (1)
                  --decode-schema ID | --no-decode]
      Structured output's figures. In Node (no browser), over the JSONSchemaBench sample (../shared/schemas):
        coverage  per subset, schemas compiled in strict mode / total, beside the published figures
                  (llguidance, llama.cpp, XGrammar, Outlines) of ../shared/schemas/README.md;
        compile   per tokenizer (Qwen3 151k, Llama 3 128k): compile ms p50/p99 and first mask ms (compile + the
                  initial state's mask, fresh cache);
        mask      per tokenizer and cache (cold: fresh grammar and mask cache; warm: same, another document):
                  per-token mask µs p50/p99 over seeded random generations under the masks (uniform among the
                  allowed tokens, forced tokens taken as the engine does, EOS preferred after 32 tokens, at most
                  512); every document parsed and validated with ajv: invalid_outputs must be 0.
      Then decode in headless Chromium on WebGPU: one engine, the same prompt unconstrained (ignoring EOS) and
      constrained by a schema of the sample (--decode-schema ID; Github_medium/o33964 by default, Auth0's user
      profile: 8 required fields of every JSON type),
      alternated --repeats times: median decode_tok_s of each, tok_s_ratio, and ms_per_step / step_slowdown
      (per engine step: forced tokens make constrained tokens per step > 1, and join the next step's input), and
      grammar_ms_per_step: the grammar's work (mask, accept, forced) per sampled token, replayed in the page on
      the last constrained document with a fresh grammar; the documents are validated with ajv. Without --model, a random-weight
      smollm2-135m body with the Qwen3 tokenizer (vocab 151,669) is made in a temp folder.
        mask_profile  per tokenizer (a fresh vocabulary and fresh grammars: a cold walk cache), which path made each
                  mask (a cache hit or a compute path), cold, warm and repeat passes, the trie and walk cache;
        step      once: ns per grammar step, cached and on first visits.
      --peer xgrammar: also web-xgrammar (WebLLM's engine, its wasm build, in the same process) on the same schemas
      and walks (each token drawn from both engines' masks): peer_coverage (ours strict and strict: false, theirs),
      peer_compile and peer_mask per engine (compile ms, mask µs p50/p90/p99 at the same states), peer_summary
      (ours/theirs ratios, the targets, documents both engines completed and ajv validated: invalid must be 0).
      A schema web-xgrammar does not compile within 60 s (checked in a worker thread first) counts as not compiled
      by it: peer_coverage.xgrammar_timed_out.
      JSON lines: {"bench":"grammar","kind":"coverage"|"compile"|"mask"|"mask_profile"|"step"|"decode"|"peer_...","tokenizer",...};
      tables without --json.
  intab bench chat --model <...> [--conversation FILE] [--prefix-cache on|off|both] [--max-tokens N (32)] [--json]
                 [--preload] [--persist [--persist-tokens N (2048)]] [--repeats N (5)] [--quantize q8_0|q4_0]
                 [--backend webgpu|auto|onnx-wasm|onnx-webgpu (webgpu)] [--cpu-threads N]
      Time to first token over a conversation, in headless Chromium on WebGPU (or --backend: onnxruntime-web, whose
      runner keeps a cached prefix's K/V beside each sequence's tensors). FILE is a JSON array of OpenAI-style
      messages: a system message, then user messages (assistant messages are ignored); without it a built-in 8-turn
      chat. For each user message in order, the conversation so far (the system message, the earlier user messages,
      the model's own earlier replies, this message) is one chat request (greedy, --max-tokens) through one engine.
      One JSON line per turn: {"bench":"chat","prefix_cache":"on"|"off","turn":i,"prompt_tokens","cached_tokens",
      "ttft_ms","ids"}. both (the default) runs the conversation with the cache off and on, alternating turn by turn,
      then {"bench":"chat","summary":true,"identical_ids","ttft_ratio_last_turn" (off/on),"ttft_growth_on"
      (last/first turn),...}. A model without a chat template gets a plain transcript.
      --preload: the first request's TTFT after engine.preload() of the system prompt, against the same request
      without it and against prefilling only the request's own tokens (--repeats pairs run back to back, in
      alternating order; preloaded_vs_user_only is the median of the pairs' ratios):
      {"bench":"chat","preload":true,"ttft_ms_no_preload","ttft_ms_preloaded","ttft_ms_user_only",
      "preloaded_vs_user_only","speedup",...}.
      --persist: a prefix of --persist-tokens tokens preloaded (recompute_ms), saved to the Origin Private File
      System, the engine loaded again and the prefix restored (restore_ms): {"bench":"chat","persist":true,
      "recompute_ms","restore_ms","restore_speedup","identical_ids",...}.
  intab bench store --model <file.gguf> [--repeats N (3)] [--json]
      The model store, in headless Chromium, on the file served by the CLI (HTTP Range on loopback): raw fetch of
      the file against downloading it into the store (SHA-256 and chunk writes as it streams), SHA-256 alone,
      checking a stored copy, and createEngine from the network (cache: false) against from the store. Medians:
      {"bench":"store","raw_fetch_mib_s","store_download_mib_s","download_vs_raw","sha256_mib_s","verify_ms",
      "load_network_ms","load_store_ms","load_store_vs_network",...}.
  intab bench hidden --model <gguf file | HF folder | URL> [--tokens N (256)] [--rounds N (3)] [--prompt-ids 1,2,3 (1)]
                 [--backend webgpu|auto|onnx-wasm|onnx-webgpu] [--quantize q8_0|q4_0] [--json]
      Decode in a background tab against the same tab in front: one engine (createEngine, its loop in the worker) in
      a headless Chromium started without Playwright's anti-throttling switches or focus emulation, so a tab behind
      another really is hidden (visibilityState 'hidden', timers throttled, no animation frames). After two warm-up
      decodes, the same greedy request (--tokens tokens, ignoring EOS) runs visible, then hidden (a second tab in
      front), then visible again (hidden and visible --rounds times). One line: {"bench":"hidden","visibleTokPerS",
      "hiddenTokPerS" (medians; first token to last, on the page's clock),"ratio" (hidden/visible),"visibilityState"
      (what the page saw during the hidden decodes),"visibleTimerHz","hiddenTimerHz","hiddenRafHz" (setTimeout(0)
      wake-ups and frames per second meanwhile),"identicalIds",...}; --json adds a "hidden-run" line per run first.
      Exits 1 when the page was not hidden throughout or the ids differ.
  intab bench share --model <gguf file | URL> [--tabs 1,2,4] [--tokens N (64)] [--rounds N (2)] [--prompt-ids 1,2,3 (1)]
                 [--backend webgpu|onnx-wasm|onnx-webgpu] [--quantize q8_0|q4_0] [--json]
      One engine for an origin's tabs (createEngine({ share: 'origin' })): for each tab count, in a fresh browser
      context, the first tab loads the model (cache: false) and the others attach to its engine; then one greedy
      stream per tab, all at once, against the same streams from one tab (--rounds times, medians). One line per tab
      count: {"bench":"share","tabs","load_ms_first","load_ms_next","next_load_ratio" (target ≤ 0.05),
      "gpu_bytes_held","gpu_bytes_if_separate","one_model" (one load, every tab attached, the same GPU buffers),
      "decode_tok_s_tabs","decode_tok_s_one_tab","decode_ratio" (target ≥ 0.95),"identical_ids","met",...}.
      Exits 1 when the streams' greedy ids differ.
  intab make-model --like smollm2-135m|smollm2-360m|llama-3.2-1b|qwen3-0.6b|smollm3-3b|gemma3-270m|gemma3-1b|qwen3.5-0.8b --dtype q4_0|q8_0|f16|... --out FILE
                 [--seed S] [--tokenizer qwen3|llama3] [--layers N]
      Writes a random-weight GGUF with that model's shapes, for bench decode. --tokenizer embeds that real
      tokenizer (tokenizer.ggml.*, chat template) and makes the vocabulary the tokenizer's (Qwen3 151,669,
      Llama 3 128,256 rows: no dtype needs padding of the row count), for text prompts and constrained output.
      --layers N keeps the widths and vocabulary with N layers (checks on real shapes at a size a test runs),
      and the family's layer pattern from the first layer (qwen3.5: three Gated DeltaNet layers, then one attention).
      Every key is written in the type the GGUF spec and llama.cpp give it: the file loads in llama.cpp.
      --like all-minilm-l6|nomic-embed-v1.5 writes an embedding model (llama.cpp's bert / nomic-bert, mean pooling)
      with a 30,522-token WordPiece vocabulary built from a real word list (--dtype f32|f16|bf16|q8_0|q4_0), so
      texts embed in llama.cpp and in intab alike.
      --like qwen3-embedding-0.6b|embeddinggemma-300m writes a decoder embedding model (llama.cpp's qwen3 with last-token
      pooling, <|endoftext|> appended; gemma-embedding: both ways, symmetric window, mean pooling, dense_2/dense_3, <bos>
      … <eos>) with its real tokenizer; llama.cpp embeds it (embedding context), intab opens it with openAnyGguf.
  intab bench compare --model <gguf file | HF folder | ONNX folder> [--systems LIST] [--prompt-tokens N (32)]
                 [--max-tokens N (64)] [--rounds N (3)] [--seed S] [--threads N (1)] [--json]
      intab against the peers, in one headless Chromium sitting, on the same weights and seeded prompt ids, greedy:
      intab/webgpu (intab's kernels on the checkpoint), intab/onnx-wasm and intab/onnx-webgpu (the engine on
      onnxruntime-web over the ONNX graph), transformers.js/wasm and transformers.js/webgpu (the same ONNX folder),
      wllama/wasm (the GGUF). A checkpoint is written as an ONNX folder first (export-onnx), so every ONNX system runs
      the same graph. Systems load once, then run in alternating rounds (order rotated each round); each run is
      timed on the page alike. One line per system: {"bench":"compare","system","backend","decode_tok_s",
      "prefill_tok_s","ttft_ms","ids_equal" (the same greedy ids as intab/webgpu, else intab/onnx-wasm),
      "decode_vs_intab_webgpu","decode_vs_intab_same_backend" (a peer against intab on its kind of backend),...},
      then a summary: {"summary":true,"auto_backend","auto_is_fastest","fastest_intab_backend","fastest_system"}.
      --json adds a "compare-run" line per run. --systems: a comma-separated subset of intab/webgpu,
      intab/onnx-wasm, intab/onnx-webgpu, transformers.js/wasm, transformers.js/webgpu, wllama/wasm, llama.cpp/native; a
      bare name stands for its backends that apply (--systems intab,llama.cpp).
      llama.cpp/native (a GGUF; llama.cpp/cpu is taken too) is llama.cpp run natively on this CPU (node-llama-cpp, --threads threads, K/V in f32) after
      the page's systems, on the same prompt ids. --threads also sets intab's CPU kernels' threads (intab/onnx-wasm on
      a q4_0 / q8_0 GGUF; above 1 the page is served cross-origin isolated); wllama and transformers.js stay on one; its line adds "threads" and "decode_vs_intab_webgpu",
      "prefill_vs_intab_webgpu", "ttft_vs_intab_webgpu" (llama.cpp ÷ intab), "intab_webgpu_decode_vs_native",
      "intab_webgpu_prefill_vs_native" (intab ÷ llama.cpp), and the same for intab_onnx_wasm.
  intab export-onnx --model <gguf file | HF folder> --out DIR
      Writes the model as an ONNX folder in the onnx-community layout (config.json, tokenizer files, onnx/model.onnx,
      onnx/model.onnx_data): the graph the onnx-wasm and onnx-webgpu backends run, which transformers.js and
      onnxruntime load too (f32 weights; q8_0/q4_0 matrices are dequantized).
  intab serve --model <gguf file | HF folder | URL> [--port P (8080)] [--host H (127.0.0.1)] [--name NAME]
                 [--api-key KEY[:rpm=N,tpm=N] ...] [--rate-limit rpm=N,tpm=N] [--cert FILE --key FILE]
                 [--runtime node|chromium] [--backend webgpu|auto|onnx-wasm|onnx-webgpu] [--quantize q8_0|q4_0]
                 [--chat-template FILE|chatml] [--max-batch N (16)] [--max-queue N (64)] [--max-queued-chunks N (8)]
                 [--kv-mib N (256)] [--no-prefix-cache] [--keep-alive-ms MS (15000)] [--grace-ms MS (10000)]
                 [--cors ORIGIN] [--seed S] [--dawn-backend auto|vulkan|opengl] [--dawn FILE] [--adapter NAME] [--threads N]
      An OpenAI-compatible server in Node over one engine (every request shares its continuous batching), answered
      by intab's one OpenAI core. --runtime node (the default) runs the engine in this process, no browser: intab's
      kernels on Dawn where Dawn finds a hardware adapter, else onnxruntime-node's CPU execution provider (--backend
      auto, the default there: the browser's rule, software adapter → CPU; --backend webgpu insists on Dawn,
      onnx-wasm on onnxruntime-node's CPU provider; --dawn-backend, --dawn and --adapter as for generate --runtime
      node, --threads: onnxruntime-node's threads per session, one per core up to 4 by default). --runtime chromium
      runs it in headless Chromium on the browser's WebGPU (--backend webgpu, the default there) or onnxruntime-web.
      POST /v1/chat/completions and POST /v1/completions (Server-Sent Events with "stream": true,
      else JSON; vLLM's "return_token_ids": true adds each choice's token_ids, in stream chunks too), GET /v1/models,
      GET /v1/stats (engine pages and paused sequences, requests in flight, counters), GET /health, and the
      WebSocket /v1/realtime-text: one socket, several streamed requests by id, each cancellable
      ({"type":"request","id","endpoint":"chat.completions"|"completions","body"} / {"type":"cancel","id"}; answers
      {"type":"chunk"|"done"|"cancelled"|"error","id",...}). Errors are OpenAI's shapes and statuses.
      Plaintext serves HTTP/1.1 and HTTP/2 (h2c, prior knowledge) on the one port; --cert/--key (PEM) serve HTTPS
      with HTTP/2 and HTTP/1.1. Backpressure: a client that reads slowly is not pulled from the engine, which pauses
      its sequence and coalesces its tokens (nothing dropped, the others not slowed); a client that goes away aborts
      its request and frees its KV pages. Idle streams get ": keep-alive" comments every --keep-alive-ms.
      --api-key (repeatable) requires Authorization: Bearer KEY (else 401); --rate-limit sets each key's requests
      and tokens per minute (token buckets; a request is charged prompt + max tokens, settled on what it used;
      429 with Retry-After), KEY:rpm=N,tpm=N a key's own. Past --max-batch running and --max-queue waiting
      requests, 503. --chat-template gives a model that ships none a Jinja template (chatml: ChatML).
      SIGINT/SIGTERM: stop accepting, let running streams finish for --grace-ms, abort the rest, exit (again: now).
      Prints {"serve":"listening","url","ws","model","runtime","backend","backend_reason","adapter","api_keys",
      "ready_ms" (from the process's start to listening)}; one line per request on stderr.
  intab bench serve (--model <...> [serve's flags] | --url URL [--api-key KEY]) [--clients N (8)] [--seconds S (20)]
                 [--max-tokens N (64)] [--prompt-tokens N (8)] [--transport http1|h2] [--seed S] [--json]
      A load run: starts intab serve on --model (or uses the OpenAI-compatible server at --url), then N clients send
      streamed text completions back to back for S seconds (seeded random prompt ids, greedy, return_token_ids and
      include_usage). One line per client {"bench":"serve","client","requests","completion_tokens",
      "tok_s_per_stream_p50","ttft_ms_p50","errors","lost_tokens"}, then {"bench":"serve","summary":true,
      "requests_per_s","tokens_per_s","ttft_ms_p50","ttft_ms_p99","per_stream_tok_s_p50","per_stream_tok_s_min",
      "errors","lost_tokens","runtime","backend",...}: lost_tokens counts, per request, the difference between the
      token ids that arrived and the usage's completion_tokens; runtime is where the engine ran (--runtime, as for
      serve; read from the server's /v1/stats with --url), ready_ms the server's start-up. Exits 1 on an error or a
      lost token.
  intab bench soak --model <gguf file | HF folder | URL> [--minutes N (20)] [--every-s S (60)] [--seed S (1)]
                 [--streams N (8)] [--draft <...>] [--kv-mib N (16)] [--max-batch N (8)] [--json]
      A long run of mixed traffic against one engine (createEngine: its Worker, intab's WebGPU kernels) in headless
      Chromium: --streams clients send requests back to back, the mix drawn from each client's seeded RNG: plain
      streams (prompt, maxTokens and sampling varied), aborts (the AbortSignal, after some tokens or some ms, and a
      break out of the for-await loop), speculative requests (draft, ngram and self; the model drafts for itself
      unless --draft), constrained ones (JSON Schema, any JSON, regex; the model needs a tokenizer), slow readers that
      backpressure pauses, prompts that share prefixes, and requests the engine must refuse. Every request's end is checked (an abort only when
      aborted, every generated token delivered, a constrained output that matches); any other end is an unexpected
      error. Every --every-s one line: {"bench":"soak","interval","minute","heap_bytes" (page + engine worker, JS heap
      after a full GC, over CDP),"heap_page_bytes","heap_worker_bytes","embedder_heap_bytes","gpu_buffers" (live
      GPUBuffers on the engine's device),"kv_pages_in_use","kv_pages_held","kv_pages_total","cached_pages",
      "draft_cached_pages" (the prefix caches: their trees grow until full),"requests" ({stop,length,abort,error}: this
      interval's, error being refused as expected),"unexpected_errors","tok_s"}, measured at rest (no new requests
      until those in flight have ended); then
      {"bench":"soak","summary":true,"heap_ratio","buffers_ratio" (the last interval over the second),"flat" (both
      within 5%),"unexpected_errors","kinds" (requests by kind and outcome),"idle" (after the last requests end:
      "pages_leaked" must be 0),"ok",...}. Exits 1 unless flat, with 0 unexpected errors, every kind ended at least
      once (each client sends one of every kind first) and no page leaked.
      --kv-mib is small so the prefix cache fills in the first interval and then evicts; a larger model needs more.
  intab bench tools --model <gguf file | HF folder | URL> [--max-tokens N (64)] [--repeats N (3)] [--tools N (10)]
                 [--seed S (1)] [--backend auto|webgpu|onnx-wasm] [--threads N] [--json]
      What tool calling costs, on the engine in this process (as intab serve --runtime node loads it: Dawn on a
      hardware adapter, else onnxruntime-node's CPU provider), each figure against the same request without tools.
      decode: a reply forced to a call (tool_choice 'required', at most --max-tokens) against a plain answer of the
      call's length (ignoring EOS): {"bench":"tools","kind":"decode","decode_tok_s_tools","decode_tok_s_plain",
      "decode_ratio" (medians; target >= 0.95),"met",...}. ttft: turn 2 of a chat whose system prompt with --tools
      tools was preloaded, against the same chat without tools: {"bench":"tools","kind":"ttft","ttft_ms_tools",
      "ttft_ms_plain","ttft_ratio" (target <= 1.2),"prefilled_tokens_tools" (turn 2's prompt less what the prefix
      cache held),"preloaded_tokens_tools","ttft_ms_text","ttft_ratio_text" (the same tools as plain text in the
      system prompt, no tools in the request: what the longer context alone costs),...,"met"}. Both carry backend,
      adapter and tool_format; --json adds a "decode_run" / "ttft_run" line per run first (after an untimed warm-up).
      The ttft figure needs a prefix cache (--backend webgpu; onnxruntime has none: the line says it was skipped). The
      model needs a chat template (make-model --tokenizer qwen3).
  intab bench embed --model <embedding GGUF> [--batch 1,8,32] [--repeats N (3)]
                 [--backend auto|webgpu|onnx-wasm|onnx-webgpu] [--runtime node|chromium] [--threads N (1)]
                 [--no-transformers] [--no-native] [--no-worker] [--timeout S (1800)] [--json]
      Embedding throughput on the engine in this process (as intab serve --runtime node loads it: Dawn on a hardware
      adapter, else onnxruntime-node's CPU provider, --threads threads) against transformers.js in this process
      (feature-extraction, mean pooling, normalize; the same weights written as a Hugging Face encoder export with
      onnx/model.onnx, fp32 on onnxruntime-node's CPU provider with intab's session options and --threads threads:
      the same backend as intab's Node CPU path; one pipeline call per batch) and llama.cpp natively on this CPU
      (node-llama-cpp, the same GGUF, --threads threads, the texts one by one as its embedding context takes them):
      {"bench":"embed","system","batch","inputs_per_s","tokens_per_s","ms" (median of --repeats after a warm-up),...}
      per system and batch (transformers.js's with "vectors_match" (least cosine to intab's vectors of the texts
      timed) and "tokens_equal"), then per batch and peer {"kind":"ratio","batch","versus","inputs_per_s_ratio" (intab
      over the peer),"tokens_equal"}; versus transformers.js also "target":1,"met","same_backend" (false when intab
      runs on Dawn), and no ratio ("refused") unless tokens are equal and vectors_match >= 0.9999.
      Texts are the embedding tests' 20, in turn (one word to ~150 tokens). Make a model with
      intab make-model --like all-minilm-l6 --dtype f32 --out /tmp/minilm.gguf.
      --runtime chromium runs intab and transformers.js in one headless Chromium page instead, same texts and batches,
      calls alternating: intab through createEngine (its Worker) on --backend onnx-wasm (onnxruntime-web's wasm),
      onnx-webgpu (its WebGPU execution provider), webgpu (intab's kernels) or auto, loading the GGUF from the CLI's
      server; transformers.js's pipeline on the same graph, device wasm beside onnx-wasm, else webgpu; one wasm thread
      each; --no-worker runs intab's engine on the page's thread (createEngine's worker: false), as transformers.js
      runs. Lines add "host" (node or chromium), "backend", "adapter" and "worker"; ratio lines "backend",
      "versus_backend" and "same_backend":true.
  intab bench kernels [--json] [--quick] [--filter TEXT] [--timeout SECONDS]
      Runs the kernel benchmark in headless Chromium on WebGPU and prints one record per case
      (JSON lines with --json): baselines first, then kernel, dtype, shape, median_ms, gbps,
      gflops, roofline_ratio, read_ratio.
  intab generate|bench decode|bench speculative|bench kernels ... --runtime node [--dawn-backend auto|vulkan|opengl]
                 [--dawn FILE] [--adapter NAME]
      The same command without a browser: the same kernels, Runner and engine (built into one file with Vite, beside
      the CLI's own build in packages/cli/dist/cli, rebuilt when a source changes) on Dawn, the webgpu package's
      dawn.node, with the model read from disk; --backend auto|onnx-wasm|onnx-webgpu run on onnxruntime-node instead
      (auto: Dawn on a hardware adapter, else onnxruntime-node's CPU execution provider). Lines are the browser
      runtime's plus "runtime":"node", "dawn_backend" and "feature_level" (null on onnxruntime-node); bench kernels runs
      the kernel lab's checks ("check" lines: each kernel against its CPU twin) before the benchmark. --dawn-backend
      (or INTAB_DAWN_BACKEND): auto, the default, tries Vulkan and then OpenGL (Mesa's llvmpipe through EGL where there
      is no GPU: a compatibility-mode adapter, f32 kernels, no subgroups); vulkan on a machine with a GPU. --dawn FILE
      (or INTAB_DAWN) loads that dawn.node. --runtime chromium (headless Chromium; 'browser' is its older name) is the
      default of these commands; intab serve's is node.
  intab bundle-node --out DIR [--no-node]
      Writes DIR/intab-node.mjs (the Node runtime in one file), DIR/dawn.node (this platform's) and DIR/node (this
      Node binary; not with --no-node): with a model file, all a machine without a browser or a registry needs for
      DIR/node DIR/intab-node.mjs bench decode --model MODEL.gguf --dawn-backend vulkan --json.
  intab device-kit --out DIR [--compress gzip|xz] [--node FILE] [--vulkan-loader FILE|none]
      Writes a kit of at most 48 MiB that runs on a bare x86-64 Linux with an NVIDIA GPU and no network: this Node
      binary (or --node) and Dawn's dawn.node compressed (gzip, unpacked there by gzip, python3 or busybox; xz is
      smaller), the Node runtime in one file, a Vulkan loader where one is found here (--vulkan-loader), run.sh and a
      README. There, DIR/run.sh checks every kernel against its CPU twin, then prints JSON lines of bench kernels and
      of bench decode (batch 1 and 4) on SmolLM2-135M-, Qwen3-0.6B- and Llama-3.2-1B-shaped models it makes (q4_0,
      q8_0, f16 where the adapter has shader-f16), into DIR/results.jsonl too, on Dawn's Vulkan backend where it finds
      the NVIDIA driver's ICD, else on OpenGL (run.sh -h: its quick mode and its flags). Prints
      {"device_kit","id","bytes","mib",...}.`;

/** Commands the Node runtime (--runtime node) runs. */
const NODE_COMMANDS = ['generate', 'bench decode', 'bench speculative', 'bench kernels'];
/** Flags of the Node runtime only. */
const NODE_FLAGS = ['dawn-backend', 'dawn', 'adapter'];


/** Runs one command line; resolves with the exit code (errors are thrown, and bin/intab.mjs prints them). */
export async function main(argv: string[]): Promise<number> {
  const { positional, flags } = parseArgs(argv);
  if (flags.help || positional.length === 0) {
    console.log(USAGE);
    return positional.length === 0 && !flags.help ? 2 : 0;
  }
  const [cmd, sub] = positional;
  // intab serve (and bench serve, which starts one) runs either runtime in this process: serveOptions reads the flag.
  const serving = cmd === 'serve' || (cmd === 'bench' && sub === 'serve');
  // bench tools runs the Node runtime in this process, as intab serve does.
  if (cmd === 'bench' && sub === 'tools') {
    if (flags.runtime !== undefined && flags.runtime !== 'node') throw new Error('intab bench tools runs the engine in this process (--runtime node)');
    const { runtime: _runtime, ...rest } = flags;
    checkFlags('bench tools', rest, flagsByCommand(USAGE));
    return benchTools(rest);
  }
  if (cmd === 'bench' && sub === 'embed') {
    // --runtime node (the default): the engine in this process; chromium: intab and transformers.js in one page.
    const { runtime, ...rest } = flags;
    checkFlags('bench embed', rest, flagsByCommand(USAGE));
    return benchEmbed(rest, runtimeOf(runtime, 'node'));
  }
  const runtime = runtimeOf(flags.runtime, serving ? 'node' : 'chromium');
  if (runtime === 'node' && !serving) {
    checkFlags(cmd === 'generate' ? cmd : `${cmd} ${sub}`, flags, flagsByCommand(USAGE));
    const command = cmd === 'generate' ? cmd : `${cmd} ${sub}`;
    if (!NODE_COMMANDS.includes(command)) throw new Error(`--runtime node runs ${NODE_COMMANDS.join(', ')}; '${positional.join(' ')}' runs in the browser only`);
    return runNodeRuntime(argv);
  }
  if (!serving) for (const f of NODE_FLAGS) if (flags[f] !== undefined) throw new Error(`--${f} goes with --runtime node (Dawn in Node); the browser picks its own adapter`);
  const command = cmd === 'bench' ? `${cmd} ${sub ?? ''}`.trim() : cmd;
  const known = flagsByCommand(USAGE);
  checkFlags(command, flags, known, command === 'bench serve' ? [...(known.get('serve') ?? [])] : []);
  if (cmd === 'bundle-node') return bundleNode(flags);
  if (cmd === 'device-kit') return deviceKit(flags);
  if (cmd === 'bench' && sub === 'kernels') return benchKernels(flags);
  if (cmd === 'bench' && sub === 'decode') {
    if (flags.compare !== undefined) return benchCompare(flags);
    if (flags.rounds !== undefined) throw new Error('--rounds goes with --compare REF: runs of each tree');
    return generate(flags, 'bench');
  }
  if (cmd === 'bench' && sub === 'speculative') return generate(flags, 'speculative');
  if (cmd === 'bench' && sub === 'grammar') return benchGrammar(flags);
  if (cmd === 'bench' && sub === 'chat') return benchChat(flags);
  if (cmd === 'bench' && sub === 'store') return benchStore(flags);
  if (cmd === 'bench' && sub === 'hidden') return benchHidden(flags);
  if (cmd === 'bench' && sub === 'share') return benchShare(flags);
  if (cmd === 'bench' && sub === 'compare') return benchSystems(flags);
  if (cmd === 'bench' && sub === 'serve') return benchServe(flags);
  if (cmd === 'bench' && sub === 'soak') return benchSoak(flags);
  if (cmd === 'serve') return serve(flags, argv);
  if (cmd === 'generate') return generate(flags, 'generate');
  if (cmd === 'make-model') return makeModel(flags);
  if (cmd === 'export-onnx') return exportOnnx(flags);
  console.error(`intab: unknown command '${positional.join(' ')}'\n${USAGE}`);
  return 2;
}
