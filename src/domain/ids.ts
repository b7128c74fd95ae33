// The one generator of ids: records (`acct_…`, `txn_…`) and the ids of API responses
// (`chatcmpl-…`, OpenAI's spelling), time-ordered then random; and API keys' random part, random
// throughout (src/domain/keys/key-format.ts).
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

/** The current millisecond as 8 base62 characters (62^8 ms is about 6,900 years): they sort as time does. */
function timeBase62(ms: number): string {
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = BASE62[ms % 62] + out;
    ms = Math.floor(ms / 62);
  }
  return out;
}

/**
 * An id such as `acct_` + 20 base62 characters: 8 of the creation time (in milliseconds), then 12
 * random (about 71 bits; unique without coordination between instances). Time first makes ids of
 * one table arrive in index order: each insert appends to the id index's last page instead of a
 * random one, which made a billed call's SQLite work a quarter cheaper (README, Benchmarks). The
 * creation time they show is also in every record's created_at. Response ids use OpenAI's
 * spelling with a hyphen: `newId('chatcmpl', '-')`.
 */
export function newId(prefix: 'acct' | 'key' | (string & {}), separator: '_' | '-' = '_'): string {
  return `${prefix}${separator}${timeBase62(Date.now())}${randomBase62(12)}`;
}
