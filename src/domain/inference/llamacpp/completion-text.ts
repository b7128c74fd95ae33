// Generated tokens → the text a client receives, token by token: whole characters only (a UTF-8
// character split over byte tokens is held back until it completes), nothing that could still turn
// into a stop sequence, and a cut before the first stop sequence. Runs once per generated token, so
// it is kept cheap: a token's text is cached when the model's detokenizer does not depend on the
// tokens before it, and stop sequences are searched only in the short tail not yet sent.
import type { Token } from 'node-llama-cpp';

/** The part of node-llama-cpp's LlamaModel this module uses. */
export interface Detokenizer {
  detokenize(tokens: readonly Token[], specialTokens?: boolean, lastTokens?: readonly Token[]): string;
  tokenize(text: string, specialTokens?: boolean): Token[];
}

/** Tokens a UTF-8 character may be split into (byte tokens): hold them back until the character completes. */
export const MAX_PARTIAL_CHARACTER_TOKENS = 4;
/** Tokens before the current ones given to the detokenizer when it needs them (node-llama-cpp reads the last 3). */
const CONTEXT_TOKENS = 3;
const REPLACEMENT_CHARACTER = '\uFFFD';

// Spaces, punctuation, contractions and multi-byte characters: what a detokenizer treats differently
// after other tokens (a SentencePiece model drops the leading space of a text's first token).
const PROBE_TEXT = "Hello world. It's a test , isn't it ? Yes ! 'quoted' - café 日本語 🙂\n  two  spaces\tand 1 2 3";

/**
 * Whether every token of a probe text decodes, alone, to the text it adds after the tokens before
 * it. True for byte-level BPE vocabularies (GPT-2 style: Qwen, Llama 3, the fixtures); false for
 * SentencePiece ones that add a space prefix (Llama 2, Mistral), which then decode in context.
 */
export function decodesWithoutContext(model: Detokenizer): boolean {
  const tokens = model.tokenize(PROBE_TEXT, false);
  for (let i = 1; i < tokens.length; i++) {
    const alone = model.detokenize([tokens[i]!], false);
    if (alone.endsWith(REPLACEMENT_CHARACTER)) continue; // part of a character: decoded with its other parts
    if (alone !== model.detokenize([tokens[i]!], false, tokens.slice(Math.max(0, i - CONTEXT_TOKENS), i))) return false;
  }
  return true;
}

/** Where the earliest stop sequence starts in `text`, or -1; `hit` is the one found there. */
function findStop(text: string, stops: readonly string[], hit: { stop: string }): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best < 0 || i < best)) {
      best = i;
      hit.stop = s;
    }
  }
  return best;
}

const BLANK = /^\s+$/;

/** The length of the longest proper prefix of `stop` that `text` ends with (0 if none), without allocating. */
function endingPrefixLength(text: string, stop: string): number {
  const first = stop.charCodeAt(0);
  for (let k = Math.min(stop.length - 1, text.length); k > 0; k--) {
    const start = text.length - k;
    if (text.charCodeAt(start) !== first) continue;
    let j = 1;
    while (j < k && text.charCodeAt(start + j) === stop.charCodeAt(j)) j++;
    if (j === k) return k;
  }
  return 0;
}

/**
 * A response format's grammar (node-llama-cpp's JSON grammar) ends its value with four newlines,
 * its stop trigger, and the model writes them as tokens: they are the grammar's, not the answer's.
 * A completion under such a grammar (`grammarEnds`, its triggers) therefore tells when the value
 * is whole (`ended`): at the trigger, or when generation stops with a whole JSON value and only
 * the start of the trigger after it (max_tokens ran out in the newlines, or right at the value's
 * end). The blank tokens after a whole value (`tailTokens`) are neither sent nor billed, as a
 * model's end-of-generation token is not; the finish reason is `stop`, not `length`.
 */
export class CompletionText {
  /** Every token generated so far (the window of the repeat penalties; the usage less `tailTokens`). */
  readonly tokens: Token[] = [];
  /** A stop sequence appeared: the text before it went out, nothing more will. */
  stopped = false;
  /** The grammar's value is whole (see the class's comment). */
  ended = false;
  /** Tokens at the end whose text is only whitespace (counted under a grammar only). */
  private blankTail = 0;
  private readonly all: readonly string[];
  private readonly hit = { stop: '' };
  /** Tokens whose text is not out yet: an incomplete character. */
  private undecoded: Token[] = [];
  /**
   * Decoded text not sent yet because it could be the start of a stop sequence; shorter than the
   * longest stop sequence (any occurrence of a stop starting earlier would have been found).
   */
  private pending = '';

  /**
   * @param pieces a cache of each token's text, shared by the calls on one model; only when
   *   `decodesWithoutContext(model)` (null: each token is decoded after the ones before it).
   */
  constructor(
    private readonly model: Detokenizer,
    private readonly stops: readonly string[],
    private readonly pieces: Map<Token, string> | null,
    private readonly grammarEnds: readonly string[] = [],
  ) {
    this.all = grammarEnds.length ? [...stops, ...grammarEnds] : stops;
  }

  /** The grammar's closing tokens after its whole value: generated, but neither sent nor billed. */
  get tailTokens(): number {
    return this.ended ? this.blankTail : 0;
  }

  /** Takes the next generated token; returns the text that may be sent now ('' when none). */
  push(token: Token): string {
    this.tokens.push(token);
    if (this.stopped) return '';
    const piece = this.decode(token);
    if (this.grammarEnds.length) this.blankTail = piece !== '' && BLANK.test(piece) ? this.blankTail + 1 : 0;
    return this.release(piece);
  }

  /** The end of generation: what was held back (a partial character, a tail that never became a stop sequence). */
  finish(): string {
    if (this.stopped) return '';
    const piece = this.decodeHeld(true);
    const text = this.pending + piece;
    this.pending = '';
    const hit = this.find(text);
    if (hit >= 0) return text.slice(0, hit);
    if (piece === '' && this.grammarEnds.length && this.wholeValue()) {
      // Generation stopped inside the grammar's closing newlines (or right at the value's end):
      // what was held back is the start of the trigger.
      this.stopped = true;
      this.ended = true;
      return text.trimEnd();
    }
    return text;
  }

  /** Whether the text so far is a whole JSON value (a number could still have grown: not whole). */
  private wholeValue(): boolean {
    try {
      return typeof JSON.parse(this.model.detokenize(this.tokens, false)) !== 'number';
    } catch {
      return false;
    }
  }

  private find(text: string): number {
    const at = findStop(text, this.all, this.hit);
    if (at >= 0) {
      this.stopped = true;
      this.ended = this.grammarEnds.includes(this.hit.stop);
    }
    return at;
  }

  private decode(token: Token): string {
    if (this.undecoded.length === 0 && this.pieces) {
      let piece = this.pieces.get(token);
      if (piece === undefined) {
        piece = this.model.detokenize([token], false);
        this.pieces.set(token, piece);
      }
      if (!piece.endsWith(REPLACEMENT_CHARACTER)) return piece;
    }
    this.undecoded.push(token);
    return this.decodeHeld(false);
  }

  private decodeHeld(force: boolean): string {
    const held = this.undecoded;
    if (held.length === 0) return '';
    let piece: string;
    if (this.pieces) {
      piece = this.model.detokenize(held, false);
    } else {
      const before = this.tokens.length - held.length;
      piece = this.model.detokenize(held, false, this.tokens.slice(Math.max(0, before - CONTEXT_TOKENS), before));
    }
    if (!force && piece.endsWith(REPLACEMENT_CHARACTER) && held.length < MAX_PARTIAL_CHARACTER_TOKENS) return '';
    this.undecoded = [];
    return piece;
  }

  /** Cuts before a stop sequence, or holds back a tail that could still grow into one. */
  private release(piece: string): string {
    if (this.all.length === 0 || piece === '') return piece;
    const text = this.pending === '' ? piece : this.pending + piece;
    const hit = this.find(text);
    if (hit >= 0) {
      this.pending = '';
      return text.slice(0, hit);
    }
    let held = 0;
    for (const s of this.all) held = Math.max(held, endingPrefixLength(text, s));
    if (held === 0) {
      this.pending = '';
      return text;
    }
    this.pending = text.slice(text.length - held);
    return text.slice(0, text.length - held);
  }
}
