// The one generator of ids: records (`acct_…`, `txn_…`), API keys' random part, and the ids of
// API responses (`chatcmpl-…`, OpenAI's spelling), all from uniformly random base62 characters.
import { randomBytes } from 'node:crypto';

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` uniformly random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(Math.ceil((length - out.length) * 1.1) + 4)) {
      // 248 = 4 * 62: bytes at or above it would favour the first characters.
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/**
 * An id such as `acct_` + 20 base62 characters (about 119 random bits). Response ids use OpenAI's
 * spelling with a hyphen: `newId('chatcmpl', '-')`.
 */
export function newId(prefix: 'acct' | 'key' | (string & {}), separator: '_' | '-' = '_'): string {
  return `${prefix}${separator}${randomBase62(20)}`;
}
