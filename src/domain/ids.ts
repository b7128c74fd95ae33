// The one generator of ids: records (`acct_…`, `txn_…`), API keys' random part, and the ids of
// API responses (`chatcmpl-…`, OpenAI's spelling), all from uniformly random base62 characters.
import { randomFillSync } from 'node:crypto';

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from the CSPRNG a few kilobytes at a time and used once each, in order
// (as Node's randomUUID does): one system call per ~150 ids rather than one per id.
const pool = Buffer.alloc(4096);
let used = pool.length;

function randomByte(): number {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  return pool[used++]!;
}

/** `length` uniformly random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    // 248 = 4 * 62: bytes at or above it would favour the first characters.
    if (byte < 248) out += BASE62[byte % 62];
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
