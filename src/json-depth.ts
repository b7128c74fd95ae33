// How deep a request body's JSON may nest, checked on the text before it is parsed. V8's JSON.parse
// slows down on deep nesting (an 800 KB body of 400 000 nested arrays took a second of the event
// loop, five times a flat one of the same size), and whatever walks the value recursively next
// (JSON.stringify of a forwarded field) overflows its stack a few thousand levels down. No request
// of this API needs more than a few dozen: a tool's parameters or a response format's schema may
// nest 64 levels of objects and arrays (chat-options' MAX_SCHEMA_DEPTH), about twice as many in JSON.

/** The deepest a request body's JSON may nest (objects and arrays), anywhere in it. */
export const MAX_JSON_DEPTH = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether `text` (JSON, or anything: only brackets outside strings are counted) nests at most
 * `max` levels. Bytes are read as UTF-8, whose multi-byte characters never contain the ASCII bytes
 * counted. A text shorter than twice `max` cannot nest deeper, and is not scanned.
 */
export function jsonNestsWithin(text: string | Uint8Array, max = MAX_JSON_DEPTH): boolean {
  if (text.length <= 2 * max) return true;
  const code = typeof text === 'string' ? (i: number) => text.charCodeAt(i) : (i: number) => text[i]!;
  // A string's end found by indexOf (native), not a character at a time: most of a body is text.
  const quote = typeof text === 'string' ? (from: number) => text.indexOf('"', from) : (from: number) => text.indexOf(QUOTE, from);
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = code(i);
    if (c === QUOTE) {
      // To the closing quote: one not escaped (after an even run of backslashes).
      for (;;) {
        const end = quote(i + 1);
        if (end < 0) return true;
        let slashes = 0;
        while (code(end - 1 - slashes) === BACKSLASH) slashes++;
        i = end;
        if (slashes % 2 === 0) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return false;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return true;
}

/** The refusal's wording, the same on both doors. */
export const TOO_DEEP_MESSAGE = `The request body nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays.`;
