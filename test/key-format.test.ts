// The API key format: shape, checksum, digest and display, all without a database.
import { describe, expect, it } from 'vitest';
import {
  API_KEY_LENGTH,
  digestApiKey,
  displayKey,
  generateApiKey,
  hasValidChecksum,
  keyDisplayParts,
} from '../src/domain/keys/key-format.js';
import { newId, randomBase62 } from '../src/domain/ids.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('API key format', () => {
  it('generates ask_ followed by 32 random and 6 checksum base62 characters', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key).toMatch(/^ask_[0-9A-Za-z]{38}$/);
      expect(key).toHaveLength(API_KEY_LENGTH);
      expect(hasValidChecksum(key)).toBe(true);
    }
  });

  it('never generates the same key twice in 5000 draws', () => {
    const keys = new Set(Array.from({ length: 5000 }, generateApiKey));
    expect(keys.size).toBe(5000);
  });

  it('keeps the checksum of a known key stable, so keys already issued stay valid', () => {
    expect(hasValidChecksum('ask_0123456789abcdefghijABCDEFGHIJxy0PImn9')).toBe(true);
    expect(hasValidChecksum('ask_0123456789abcdefghijABCDEFGHIJxy0PImn8')).toBe(false);
  });

  it('detects every single-character change of a key', () => {
    const key = generateApiKey();
    for (let i = 4; i < key.length; i++) {
      for (const c of BASE62) {
        if (c === key[i]) continue;
        const typo = key.slice(0, i) + c + key.slice(i + 1);
        expect(hasValidChecksum(typo), `change at ${i} to ${c}`).toBe(false);
      }
    }
  });

  it('refuses keys of the wrong prefix, length or alphabet', () => {
    const key = generateApiKey();
    for (const bad of [
      '',
      'ask_',
      key.slice(0, -1),
      `${key}0`,
      `sk-${key.slice(4)}`,
      `ASK_${key.slice(4)}`,
      `${key.slice(0, 10)}-${key.slice(11)}`,
      ` ${key}`,
      `${key}\n`,
    ]) {
      expect(hasValidChecksum(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('digests a key as lowercase SHA-256 hex', () => {
    expect(digestApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(digestApiKey(generateApiKey())).toMatch(/^[0-9a-f]{64}$/);
  });

  it('shows a key as its first 12 and last 4 characters', () => {
    const key = 'ask_AbCd1234efghijklmnopqrstuvwxyz0123wxyz';
    const parts = keyDisplayParts(key);
    expect(parts).toEqual({ prefix: 'ask_AbCd1234', last4: 'wxyz' });
    expect(displayKey(parts.prefix, parts.last4)).toBe('ask_AbCd1234…wxyz');
  });

  it('makes record ids of a prefix and 20 base62 characters: the time first (they sort as created), then 12 random', () => {
    expect(newId('acct')).toMatch(/^acct_[0-9A-Za-z]{20}$/);
    expect(newId('key')).toMatch(/^key_[0-9A-Za-z]{20}$/);
    const ids = Array.from({ length: 2000 }, () => newId('txn'));
    expect(new Set(ids).size).toBe(ids.length);
    // Made one after another, they sort in the order made (the same millisecond: by their time part).
    const times = ids.map((id) => id.slice(4, 12));
    expect([...times].sort()).toEqual(times);
    const earlier = newId('txn');
    const later = (() => {
      const until = Date.now() + 2;
      while (Date.now() < until) {}
      return newId('txn');
    })();
    expect(earlier < later).toBe(true);
    // The random part uses the whole alphabet.
    expect(new Set(ids.map((id) => id.slice(12)).join('')).size).toBe(62);
  });

  it('draws random base62 strings of the asked length that use the whole alphabet', () => {
    const text = randomBase62(20_000);
    expect(text).toHaveLength(20_000);
    expect(new Set(text).size).toBe(62);
    expect(text).toMatch(/^[0-9A-Za-z]+$/);
  });
});
