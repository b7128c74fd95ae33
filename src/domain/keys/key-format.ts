// The shape of tollgate's API keys. A key is `ask_` + 32 random base62 characters +
// a 6-character base62 CRC32 of the random part (GitHub's token format): a typo or a truncated
// paste is refused from the checksum alone, before any database lookup, and secret scanners can
// recognise the keys. Only the SHA-256 digest of a key is stored.
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { BASE62, randomBase62 } from '../ids.js';

export const API_KEY_PREFIX = 'ask_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
/** The part of a key kept in clear for display: `ask_` and the first 8 random characters. */
export const DISPLAY_PREFIX_LENGTH = 12;
export const API_KEY_LENGTH = API_KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH;

const KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

function checksumOf(randomPart: string): string {
  let n = crc32(randomPart) >>> 0;
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateApiKey(): string {
  const random = randomBase62(RANDOM_LENGTH);
  return `${API_KEY_PREFIX}${random}${checksumOf(random)}`;
}

/** True when `key` has the shape of a tollgate key and its checksum matches; no database involved. */
export function hasValidChecksum(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const random = key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + RANDOM_LENGTH);
  return key.slice(API_KEY_PREFIX.length + RANDOM_LENGTH) === checksumOf(random);
}

/** SHA-256 of the whole key, lowercase hex: what the database stores and looks keys up by. */
export function digestApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The parts of a key that may be stored and shown: its first 12 and last 4 characters. */
export function keyDisplayParts(key: string): { prefix: string; last4: string } {
  return { prefix: key.slice(0, DISPLAY_PREFIX_LENGTH), last4: key.slice(-4) };
}

/** How a key is shown after creation, e.g. `ask_AbCd1234…wxyz`. */
export function displayKey(prefix: string, last4: string): string {
  return `${prefix}…${last4}`;
}
