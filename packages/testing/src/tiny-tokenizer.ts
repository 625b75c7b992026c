// A tiny real tokenizer for tests (no GPU, no Node imports): byte-level BPE over printable ASCII plus the
// ChatML special tokens, with a ChatML chat template, as tokenizer.json + tokenizer_config.json objects.
// Its 98 ids fit any test model's vocabulary (the fixture's 128, stories260K's 512), so chat requests run.

/** tokenizer.json and tokenizer_config.json: ids 0..93 '!'..'~', 94 ' ', 95 '\n', 96 <|im_start|>, 97 <|im_end|>. */
export function tinyChatTokenizerFiles(): { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const vocab: Record<string, number> = {};
  for (let c = 33; c <= 126; c++) vocab[String.fromCharCode(c)] = c - 33;
  vocab['Ġ'] = 94;
  vocab['Ċ'] = 95;
  const special = (id: number, content: string) => ({ id, content, special: true, normalized: false, lstrip: false, rstrip: false, single_word: false });
  return {
    tokenizerJson: {
      version: '1.0',
      added_tokens: [special(96, '<|im_start|>'), special(97, '<|im_end|>')],
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: null,
      decoder: { type: 'ByteLevel' },
      model: { type: 'BPE', unk_token: null, vocab, merges: [] },
    },
    tokenizerConfig: {
      eos_token: '<|im_end|>',
      chat_template:
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    },
  };
}
