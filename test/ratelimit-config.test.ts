// Rate limits in the config file and the environment: the tiers' RPM and TPM (the issue's
// defaults, overridable per key), the rate_limits section, and REDIS_URL choosing the backend.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../src/config.js';

describe('rate limits in the config', () => {
  it("default to the contract's limits per tier, beside billing's keys", () => {
    const { tiers } = parseConfigText('models: []', 'test.yaml');
    expect(Object.fromEntries(Object.entries(tiers).map(([name, t]) => [name, { rpm: t.rpm, tpm: t.tpm }]))).toEqual({
      free: { rpm: 20, tpm: 40_000 },
      developer: { rpm: 500, tpm: 1_000_000 },
      startup: { rpm: 2_000, tpm: 5_000_000 },
      enterprise: { rpm: 10_000, tpm: 20_000_000 },
    });
  });

  it('let operators override one key of one tier and keep the rest', () => {
    const { tiers } = parseConfigText('tiers:\n  free: { rpm: 3 }\n  startup: { tpm: 7, monthly_fee: 5 }', 'test.yaml');
    expect(tiers.free).toMatchObject({ rpm: 3, tpm: 40_000, monthly_tokens: 100_000 });
    expect(tiers.startup).toMatchObject({ rpm: 2_000, tpm: 7, monthly_fee: 5 });
  });

  it('refuse limits that are not positive integers, naming the key', () => {
    expect(() => parseConfigText('tiers:\n  free: { rpm: 0 }', 'test.yaml')).toThrow(/tiers\.free\.rpm/);
    expect(() => parseConfigText('tiers:\n  free: { tpm: 1.5 }', 'test.yaml')).toThrow(/tiers\.free\.tpm/);
    expect(() => parseConfigText('rate_limits:\n  alert_threshold: -1', 'test.yaml')).toThrow(/rate_limits\.alert_threshold/);
    expect(() => parseConfigText('rate_limits:\n  backend: memcached', 'test.yaml')).toThrow(/rate_limits\.backend/);
    expect(() => parseConfigText('rate_limits:\n  fail_open: true', 'test.yaml')).toThrow(/rate_limits: unknown key "fail_open"/);
  });

  it('use memory by default, Redis when REDIS_URL is set, and whatever backend is written', () => {
    expect(parseConfigText('models: []', 't').rateLimits).toEqual({
      backend: 'memory',
      fail_closed: false,
      alert_threshold: 100,
      key_prefix: 'tollgate:',
    });
    const withRedis = parseConfigText('models: []', 't', { REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(withRedis.rateLimits.backend).toBe('redis');
    expect(withRedis.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(parseConfigText('rate_limits: { backend: memory }', 't', { REDIS_URL: 'redis://x' }).rateLimits.backend).toBe('memory');
    expect(parseConfigText('rate_limits: { backend: none, fail_closed: true, alert_threshold: 5 }', 't').rateLimits).toMatchObject({
      backend: 'none',
      fail_closed: true,
      alert_threshold: 5,
    });
  });

  it('stop start-up when the Redis backend is asked for without REDIS_URL', () => {
    expect(() => parseConfigText('rate_limits: { backend: redis }', 'test.yaml')).toThrow(
      /rate_limits\.backend: "redis" needs the REDIS_URL/,
    );
  });
});
