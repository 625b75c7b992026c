// The bytes each token id stands for in the middle of a text: what a grammar-constrained decoder walks, byte by byte,
// to decide which tokens the grammar allows next. Read from the tokenizer.json's decoder chain, token by token:
//   ByteLevel (GPT-2 / Qwen / Llama 3): every char of the token is one byte through GPT-2's byte↔unicode table;
//   Replace + ByteFallback + Fuse + Strip (SentencePiece BPE, also GGUF 'llama' tokenizers converted by
//   gguf-tokenizer.ts): '▁' → ' ', '<0xNN>' → the byte NN; Strip only trims the very start of a text, so it is
//   ignored here ("in the middle");
//   Metaspace: '▁' → ' ' (prepend_scheme only affects the first token of a text: ignored);
//   WordPiece: '##x' → 'x', any other token → ' ' + token (its mid-text form);
//   BPEDecoder: the end-of-word suffix → ' '.
// Special added tokens (BOS, EOS, <|im_start|>, ...) and ids without a token are null: a grammar never allows them
// (EOS is handled apart). Non-special added tokens pass through the decoder chain too (Qwen3's <think> stays
// itself; a GGUF's user-defined '<0x7B>' is '{', as decode() gives it). A token that decodes to
// nothing is null too (it would let a constrained decoder loop without progress).

import type { Tokenizer } from './tokenizer.ts';

type Piece = string | Uint8Array;
type Decoder = Record<string, unknown>;

let byteLevelTable: Int16Array | undefined;

/** GPT-2's bytes_to_unicode, inverted: char code → byte (-1 for chars outside the table). */
function byteLevelDecodeTable(): Int16Array {
  if (byteLevelTable) return byteLevelTable;
  const table = new Int16Array(512).fill(-1);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[printable ? b : 256 + n++] = b;
  }
  return (byteLevelTable = table);
}

const utf8 = new TextEncoder();

function byteLevel(piece: Piece): Piece {
  if (typeof piece !== 'string') return piece;
  const table = byteLevelDecodeTable();
  const out: number[] = [];
  for (const ch of piece) {
    const c = ch.codePointAt(0)!;
    const b = c < 512 ? table[c] : -1;
    if (b >= 0) out.push(b);
    else for (const x of utf8.encode(ch)) out.push(x); // not from the table (an added token's text): itself
  }
  return Uint8Array.from(out);
}

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;

function replace(piece: Piece, d: Decoder): Piece {
  if (typeof piece !== 'string') return piece;
  const pattern = d.pattern as { String?: string; Regex?: string } | undefined;
  const content = typeof d.content === 'string' ? d.content : '';
  if (typeof pattern?.String === 'string' && pattern.String.length > 0) return piece.split(pattern.String).join(content);
  if (typeof pattern?.Regex === 'string') {
    try {
      return piece.replace(new RegExp(pattern.Regex, 'gu'), () => content);
    } catch {
      return piece;
    }
  }
  return piece;
}

function applyDecoder(piece: Piece, d: Decoder | null | undefined): Piece {
  if (!d || typeof d !== 'object') return piece;
  switch (d.type) {
    case 'Sequence': {
      for (const x of (Array.isArray(d.decoders) ? d.decoders : []) as Decoder[]) piece = applyDecoder(piece, x);
      return piece;
    }
    case 'ByteLevel':
      return byteLevel(piece);
    case 'Replace':
      return replace(piece, d);
    case 'ByteFallback': {
      if (typeof piece !== 'string') return piece;
      const m = BYTE_PIECE.exec(piece);
      return m ? Uint8Array.of(parseInt(m[1], 16)) : piece;
    }
    case 'Metaspace': {
      if (typeof piece !== 'string') return piece;
      const rep = typeof d.replacement === 'string' ? d.replacement : '\u2581';
      return piece.split(rep).join(' ');
    }
    case 'WordPiece': {
      if (typeof piece !== 'string') return piece;
      const prefix = typeof d.prefix === 'string' ? d.prefix : '##';
      return piece.startsWith(prefix) ? piece.slice(prefix.length) : ` ${piece}`;
    }
    case 'BPEDecoder': {
      if (typeof piece !== 'string') return piece;
      const suffix = typeof d.suffix === 'string' ? d.suffix : '</w>';
      return suffix ? piece.split(suffix).join(' ') : piece;
    }
    // Fuse joins tokens, Strip trims the start/end of the whole text: neither changes a token mid-text.
    default:
      return piece;
  }
}

/**
 * The UTF-8 bytes each token id produces when decoded in the middle of a text, indexed by id (length
 * `tokenizer.vocabSize`); null for special tokens, ids without a token and tokens that decode to nothing.
 * Concatenating the bytes of `encode(text, { addSpecialTokens: false })` gives the text as the tokenizer saw it
 * (after its normalizer: NFC for Qwen3, a leading '▁' for SentencePiece).
 * @example
 * const bytes = tokenBytes(tokenizer);
 * new TextDecoder().decode(bytes[9707]!); // 'Hello' (Qwen3)
 */
export function tokenBytes(tokenizer: Tokenizer): (Uint8Array | null)[] {
  const decoder = (tokenizer.json.decoder ?? null) as Decoder | null;
  const added = new Map(tokenizer.addedTokens.map((t) => [t.id, t]));
  const out: (Uint8Array | null)[] = new Array(tokenizer.vocabSize).fill(null);
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    const a = added.get(id);
    if (a?.special || tokenizer.isSpecial(id)) continue;
    // Non-special added tokens go through the decoder chain like any other (as tokenizers' decode does them):
    // Qwen3's <think> stays itself, a GGUF's user-defined '<0x7B>' piece is the byte '{'.
    const text = a ? a.content : tokenizer.idToToken(id);
    if (text === undefined || text.length === 0) continue;
    const piece = applyDecoder(text, decoder);
    const bytes = typeof piece === 'string' ? utf8.encode(piece) : piece;
    out[id] = bytes.length > 0 ? bytes : null;
  }
  return out;
}
