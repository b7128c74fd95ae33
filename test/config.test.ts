// The config file: defaults, and bad configs stopping start-up with a message naming model and key.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../src/config.js';

const chat = (patch = '') => `
models:
  - id: chat-a
    category: chat
    owned_by: acme
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 1.0, output_price_per_million: 2.0, currency: usd }
    specifications: { context_window: 8192, max_output_tokens: 512, training_cutoff: "2024-10" }
    engine: { type: openai, base_url: "http://127.0.0.1:8000/v1", model: m }
${patch}`;

const fails = (text: string) => {
  try {
    parseConfigText(text, 'test.yaml');
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('the config file', () => {
  it('parses the shipped default config', () => {
    const cfg = parseConfigText(readFileSync(new URL('../config/default.yaml', import.meta.url), 'utf8'), 'default.yaml');
    expect(cfg.models.map((m) => m.category).sort()).toEqual(['chat', 'embedding', 'moderation', 'reranking']);
    expect(cfg.server.body_limit).toBe('1mb');
    expect(cfg.graphql.introspection).toBe(true);
  });

  it('fills the alerts section from the defaults of its keys, whole or in part', () => {
    const defaults = {
      unusual_usage: { factor: 5, min_tokens: 100_000, min_spend: 1, check_interval_seconds: 300, enabled: true },
      delivery: {
        max_attempts: 10,
        backoff_seconds: 10,
        max_backoff_seconds: 3600,
        poll_interval_ms: 1000,
        lease_seconds: 120,
        batch_size: 20,
      },
    };
    expect(parseConfigText('', 't').alerts).toEqual(defaults);
    expect(parseConfigText('alerts: { delivery: { max_attempts: 3 } }', 't').alerts).toEqual({
      ...defaults,
      delivery: { ...defaults.delivery, max_attempts: 3 },
    });
  });

  it('fills engine defaults', () => {
    const m = parseConfigText(chat(), 't').models[0]!;
    expect(m.engine).toMatchObject({ type: 'openai', timeout_ms: 60000, rerank_path: '/rerank', max_tokens_param: 'max_tokens' });
  });

  it('takes engine.max_tokens_param max_completion_tokens, and names the key for anything else', () => {
    const yaml = (v: string) => chat().replace('model: m }', `model: m, max_tokens_param: ${v} }`);
    expect(parseConfigText(yaml('max_completion_tokens'), 't').models[0]!.engine).toMatchObject({
      max_tokens_param: 'max_completion_tokens',
    });
    expect(fails(yaml('max_new_tokens'))).toContain('max_tokens_param');
  });

  it('names the model and the unknown key', () => {
    const msg = fails(chat().replace('status: active', 'status: active\n    colour: blue'));
    expect(msg).toContain('model "chat-a"');
    expect(msg).toContain('"colour"');
  });

  it('names the model and the missing field', () => {
    const msg = fails(chat().replace('    owned_by: acme\n', ''));
    expect(msg).toContain('model "chat-a"');
    expect(msg).toContain('owned_by');
    expect(msg).toContain('missing');
  });

  it('refuses a millisecond timer past 2^31 - 1 (node would fire it at once), naming the key', () => {
    const msg = fails(chat().replace('model: m }', 'model: m, timeout_ms: 3000000000 }'));
    expect(msg).toContain('model "chat-a"');
    expect(msg).toContain('timeout_ms');
    expect(msg).toContain('at most 2147483647 (about 24.8 days, the longest interval a timer keeps)');
    expect(fails('server: { shutdown_timeout_ms: 3000000000 }')).toContain('shutdown_timeout_ms');
    expect(parseConfigText(chat().replace('model: m }', 'model: m, timeout_ms: 2147483647 }'), 't').models[0]!.engine).toMatchObject({
      timeout_ms: 2147483647,
    });
  });

  it('refuses a REDIS_URL that can never connect (rate limits would be silently off), and takes the forms ioredis reads', () => {
    for (const bad of ['redis//127.0.0.1:6379', 'http://x', 'localhost:6379']) {
      const e = (() => {
        try {
          parseConfigText('', 't', { REDIS_URL: bad });
        } catch (err) {
          return err as Error;
        }
        return null;
      })();
      expect(e, bad).toBeInstanceOf(ConfigError);
      expect(e!.message).toContain('not a Redis URL (use redis://host:6379');
    }
    // The password is not repeated in the message.
    const secret = (() => {
      try {
        parseConfigText('', 't', { REDIS_URL: 'http://user:hunter2@x' });
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    })();
    expect(secret).not.toContain('hunter2');
    for (const good of ['redis://127.0.0.1:6379', 'rediss://user:pw@host:6380/2', '/run/redis/redis.sock'])
      expect(parseConfigText('', 't', { REDIS_URL: good }).redisUrl).toBe(good);
  });

  it('refuses a pricing currency other than usd, saying why, instead of billing it as dollars', () => {
    const msg = fails(chat().replace('currency: usd', 'currency: eur'));
    expect(msg).toContain('model "chat-a"');
    expect(msg).toContain('currency');
    expect(msg).toContain('only usd is supported');
    expect(fails(chat().replace('currency: usd', 'currency: USD'))).toContain('lowercase three-letter');
    expect(parseConfigText(chat(), 't').models[0]!.pricing).toMatchObject({ currency: 'usd' });
  });

  it('refuses a category-specific key of another category', () => {
    const msg = fails(chat().replace('function_calling: false', 'function_calling: false, embeddings: true'));
    expect(msg).toContain('capabilities');
    expect(msg).toContain('"embeddings"');
  });

  it('refuses an engine without a base URL, and both forms at once', () => {
    expect(fails(chat().replace('base_url: "http://127.0.0.1:8000/v1", ', ''))).toContain('engine.base_url or engine.base_urls');
    expect(fails(chat().replace('model: m }', 'model: m, base_urls: ["http://127.0.0.1:8001/v1"] }'))).toContain('not both');
  });

  it('refuses an upstream URL of another scheme than http(s), which crashed start-up with a stack trace', () => {
    for (const url of ['ftp://127.0.0.1:8000/v1', 'file:///tmp/x', 'ws://127.0.0.1:8000/v1', 'http//127.0.0.1:8000/v1', 'not a url']) {
      const msg = fails(chat().replace('http://127.0.0.1:8000/v1', url));
      expect(msg, url).toContain('engine.base_url');
      expect(msg, url).toContain('an http:// or https:// URL');
      const many = fails(chat().replace('base_url: "http://127.0.0.1:8000/v1"', `base_urls: ["http://127.0.0.1:8000/v1", "${url}"]`));
      expect(many, url).toContain('engine.base_urls');
    }
    expect(parseConfigText(chat().replace('http://', 'HTTPS://'), 'c.yaml').models).toHaveLength(1);
  });

  it("refuses a deprecated model's sunset that is not an ISO date (its Sunset header was dropped without a word)", () => {
    const deprecated = (sunset: string) => chat().replace('status: active', `status: deprecated\n    sunset: ${sunset}`);
    expect(fails(deprecated('"next year"'))).toContain('sunset');
    expect(fails(deprecated('"2027-02-30x"'))).toContain('an ISO date such as 2027-01-31');
    expect(parseConfigText(deprecated('2027-03-01'), 'c.yaml').models[0]!.sunset).toBeDefined();
    expect(parseConfigText(deprecated('"2027-03-01T12:00:00Z"'), 'c.yaml').models).toHaveLength(1);
  });

  it('refuses duplicate ids and a bad status', () => {
    const twice = chat() + chat().replace('models:\n', '');
    expect(fails(twice)).toContain('duplicate id');
    expect(fails(chat().replace('status: active', 'status: retired'))).toContain('status');
  });

  it('takes server.body_limit as a size or a plain number of bytes, as its hint says, and refuses zero', () => {
    expect(parseConfigText(`${chat()}server:\n  body_limit: 100000\n`, 'c.yaml').server.body_limit).toBe('100000');
    expect(parseConfigText(`${chat()}server:\n  body_limit: 512kb\n`, 'c.yaml').server.body_limit).toBe('512kb');
    expect(fails(`${chat()}server:\n  body_limit: 0\n`)).toContain('server.body_limit');
  });

  it('refuses unknown top-level keys and broken YAML', () => {
    expect(fails(chat() + 'extra: 1\n')).toContain('"extra"');
    expect(fails('models: [')).toContain('not valid YAML');
  });

  it('suggests the key meant for a near miss, and nothing for a key unlike any', () => {
    expect(fails(chat().replace('status: active', 'status: active\n    owned-by: acme').replace('    owned_by: acme\n', ''))).toContain(
      '"owned-by" (did you mean "owned_by"?)',
    );
    expect(fails(chat().replace('base_url:', 'base_ulr:'))).toContain('"base_ulr" (did you mean "base_url"?)');
    expect(fails(chat() + 'sever:\n  body_limit: 2mb\n')).toContain('unknown key "sever" (did you mean "server"?)');
    expect(fails(chat() + 'colour: blue\n')).toMatch(/unknown key "colour"$/);
    // Two letters swapped is one slip.
    expect(fails(chat() + 'sevrer:\n  body_limit: 2mb\n')).toContain('unknown key "sevrer" (did you mean "server"?)');
  });

  it("suggests only the section's own keys, and says where a key of another section goes", () => {
    // A tier under alerts: not "did you mean" itself, but where it belongs.
    const tier = fails(`${chat()}alerts:\n  startup: { monthly_fee: 5 }\n`);
    expect(tier).toContain('alerts: unknown key "startup" (it belongs under "tiers")');
    expect(tier).not.toContain('did you mean "startup"');
    // A near miss of a key of the section itself.
    expect(fails(`${chat()}alerts:\n  unusual_usge: { factor: 3 }\n`)).toContain(
      'alerts: unknown key "unusual_usge" (did you mean "unusual_usage"?)',
    );
    // A near miss of a key only another section has is no near miss here.
    expect(fails(`${chat()}server:\n  tiers: {}\n`)).toContain('server: unknown key "tiers" (it belongs at the top level)');
  });

  it('reports the problems of every model in one message, each once', () => {
    const second = chat().replace('models:\n', '').replace('chat-a', 'chat-b').replace('status: active', 'status: retired');
    const msg = fails(chat().replace('status: active', 'status: active\n    colour: blue') + second);
    expect(msg).toContain('2 problems');
    expect(msg).toContain('model "chat-a": unknown key "colour"');
    expect(msg).toContain('model "chat-b": status');
    expect(msg.split('model "chat-a"')).toHaveLength(2);
  });

  it("reports the file's own problems and every model's together, one per line, rather than the models' only once the rest is fixed", () => {
    const msg = fails(`${chat().replace('status: active', 'status: active\n    colour: blue')}sever:\n  body_limit: 2mb\ntiers: 7\n`);
    const lines = msg.split('\n');
    expect(lines[0]).toMatch(/: 3 problems:$/);
    expect(lines.slice(1).map((l) => l.trim())).toEqual([
      expect.stringMatching(/^tiers: .*expected object/),
      'unknown key "sever" (did you mean "server"?)',
      'model "chat-a": unknown key "colour"',
    ]);
  });
});
