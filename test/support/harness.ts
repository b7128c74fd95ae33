// Starts tollgate in-process on a loopback port, against a fake upstream and a fresh SQLite file,
// the way a user runs it; tests then talk to it over HTTP and WebSocket like any client.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { closeServices, createServices, type Services } from '../../src/container.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { startServer } from '../../src/server.js';
import { tollgateOrigins } from './tollgate-origins.js';
import { startFakeUpstream, type FakeUpstream, type FakeUpstreamOptions } from './fake-upstream.js';

export const ADMIN_TOKEN = 'admin-test-token-0123456789';

/** One chat model forwarding to the fake upstream, as an entry of the catalog's `models:` list. */
export function chatModelYaml(
  upstreamUrl: string,
  m: { id: string; inputPrice: string; outputPrice: string; maxOutputTokens: number; timeoutMs: number; functionCalling?: boolean },
): string {
  return forwardedChatModelYaml(m.id, `base_url: "${upstreamUrl}", timeout_ms: ${m.timeoutMs}`, m);
}

/**
 * A chat model of the catalog forwarded by the openai engine to `upstream-chat`, `engine` the rest of
 * its engine's keys (base_url or base_urls, timeouts, retries…); priced 1 and 2 per million and 256
 * output tokens unless told.
 */
export function forwardedChatModelYaml(
  id: string,
  engine: string,
  m: { inputPrice?: string; outputPrice?: string; maxOutputTokens?: number; functionCalling?: boolean } = {},
): string {
  return `  - id: ${id}
    category: chat
    owned_by: tests
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: ${m.functionCalling ?? false} }
    pricing: { input_price_per_million: ${m.inputPrice ?? '1.0'}, output_price_per_million: ${m.outputPrice ?? '2.0'}, currency: usd }
    specifications: { context_window: 4096, max_output_tokens: ${m.maxOutputTokens ?? 256}, training_cutoff: "2024-10" }
    engine: { type: openai, model: upstream-chat, ${engine} }
`;
}

/** The catalog with `chat-tools` added: a chat model that takes tools, for the tool-calling suites. */
export function toolsCatalogYaml(upstreamUrl: string, extra = ''): string {
  return catalogYaml(
    upstreamUrl,
    chatModelYaml(upstreamUrl, {
      id: 'chat-tools',
      inputPrice: '1.0',
      outputPrice: '2.0',
      maxOutputTokens: 256,
      timeoutMs: 5000,
      functionCalling: true,
    }) + extra,
  );
}

/** An embedding model, as an entry of the catalog's `models:` list. */
export function embeddingModelYaml(id: string, specifications: string, engine: string): string {
  return `  - id: ${id}
    category: embedding
    owned_by: tests
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { embeddings: true }
    pricing: { price_per_million_tokens: 0.1, currency: usd }
    specifications: ${specifications}
    engine: ${engine}
`;
}

/** A moderation model, as an entry of the catalog's `models:` list; free unless `price` (e.g. "price_per_million_tokens: 1, "). */
export function moderationModelYaml(id: string, engine: string, o: { price?: string; maxTokens?: number } = {}): string {
  return `  - id: ${id}
    category: moderation
    owned_by: tests
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { moderation: true }
    pricing: { ${o.price ?? ''}currency: usd }
    specifications: { max_tokens: ${o.maxTokens ?? 512} }
    engine: ${engine}
`;
}

export function catalogYaml(upstreamUrl: string, extra = ''): string {
  return `
models:
${chatModelYaml(upstreamUrl, { id: 'chat-test', inputPrice: '1.0', outputPrice: '2.0', maxOutputTokens: 256, timeoutMs: 5000 })}  - id: chat-old
    category: chat
    owned_by: tests
    created: 1704067200
    version: "2024-01-01"
    status: deprecated
    sunset: "2027-03-01"
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 0.5, output_price_per_million: 1.0, currency: usd }
    specifications: { context_window: 2048, max_output_tokens: 128, training_cutoff: "2023-10" }
    engine: { type: openai, base_url: "${upstreamUrl}", model: upstream-chat }
${embeddingModelYaml('embed-test', '{ max_tokens: 512, output_dimensions: 768 }', `{ type: openai, base_url: "${upstreamUrl}", model: upstream-embed }`)}  - id: rerank-test
    category: reranking
    owned_by: tests
    created: 1735689600
    version: "2025-01-01"
    status: beta
    capabilities: { rerank: true }
    pricing: { price_per_million_tokens: 0.1, currency: usd }
    specifications: { max_tokens: 512 }
    engine: { type: openai, base_url: "${upstreamUrl}", model: upstream-rerank }
${moderationModelYaml('guard-test', `{ type: openai, base_url: "${upstreamUrl}", model: upstream-guard }`, { maxTokens: 1024 })}${extra}`;
}

export interface TestServer {
  url: string;
  v1: string;
  services: Services;
  upstream: FakeUpstream;
  dir: string;
  /** Creates an account (through the admin GraphQL mutation) and returns its id and key. */
  account(tier?: 'free' | 'developer' | 'startup' | 'enterprise'): Promise<{ id: string; apiKey: string; keyId: string }>;
  graphql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    auth?: string | null,
  ): Promise<{ status: number; body: { data?: T; errors: any[] }; headers: Headers }>;
  close(): Promise<void>;
}

export async function startTestServer(
  opts: {
    upstream?: FakeUpstreamOptions;
    env?: Record<string, string>;
    yaml?: (upstreamUrl: string) => string;
    /** Another database than a fresh SQLite file (e.g. one from support/databases.ts); the caller drops it. */
    databaseUrl?: string;
    /** The server's logger (default: silent, or TEST_LOG_LEVEL). */
    logger?: Logger;
    /** Billing's clock (default: the real one); see `clockFrom`. */
    now?: () => Date;
  } = {},
): Promise<TestServer> {
  const upstream = await startFakeUpstream(opts.upstream);
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-test-'));
  const configPath = path.join(dir, 'config.yaml');
  writeFileSync(configPath, (opts.yaml ?? catalogYaml)(upstream.url));
  const config = loadConfig({
    CONFIG: configPath,
    DATABASE_URL: opts.databaseUrl ?? `sqlite:${path.join(dir, 'tollgate.db')}`,
    ADMIN_TOKEN,
    PORT: '0',
    HOST: '127.0.0.1',
    // Mail without SMTP_URL goes to .eml files here, never into the working directory.
    MAIL_DIR: path.join(dir, 'mail'),
    ...opts.env,
  });
  const services = await createServices(config, opts.logger ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'), { now: opts.now });
  const running = await startServer(services, { port: 0, host: '127.0.0.1' });
  const url = running.url;
  tollgateOrigins.add(url);
  // Checkout links point at the server as clients reach it: the port is only known now.
  if (!opts.env?.PUBLIC_URL) services.config.publicUrl = url;

  const graphql: TestServer['graphql'] = async (query, variables, auth) => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, body: await res.json(), headers: res.headers };
  };

  return {
    url,
    v1: `${url}/v1`,
    services,
    upstream,
    dir,
    graphql,
    async account(tier = 'developer') {
      const email = `user-${Math.random().toString(36).slice(2)}@example.com`;
      const r = await graphql(
        'mutation($email: String!, $tier: Tier!) { createAccount(email: $email, tier: $tier) { account { id } apiKey keyId } }',
        { email, tier },
        ADMIN_TOKEN,
      );
      if (!r.body.data) throw new Error(`createAccount failed: ${JSON.stringify(r.body)}`);
      const p = r.body.data.createAccount;
      return { id: p.account.id, apiKey: p.apiKey, keyId: p.keyId };
    },
    async close() {
      await running.shutdown();
      await closeServices(services);
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A clock that starts at `start` and runs at the real pace: tests that name the billing period
 * or the day get a known one, and cannot fail by running across a month boundary.
 */
export function clockFrom(start: string): () => Date {
  const offset = Date.parse(start) - Date.now();
  return () => new Date(Date.now() + offset);
}
