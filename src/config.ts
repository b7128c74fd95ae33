// Env and the YAML config file, parsed once at start-up into one typed, validated object.
// A bad config stops start-up with a message that names the model (when there is one) and the key.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { parse as parseBytes } from 'bytes';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { refineAmount } from './domain/billing/money.js';
import { paymentsSchema, readPaymentsEnv, type PaymentsSettings, type StripeEnv } from './config-payments.js';
import { TIER_DEFAULTS, TIERS, type Tier, type TierConfig } from './domain/accounts/tiers.js';
import type { BillingSettings } from './domain/billing/settings.js';
import {
  MODEL_CATEGORIES,
  type ChatModelConfig,
  type EngineConfig,
  type ModelCategory,
  type ModelConfig,
  type OpenAIEngineConfig,
} from './domain/catalog/model.js';
import { ConfigError } from './domain/errors.js';
import { DEFAULT_MAX_DURATION_MS, STREAM_DEADLINE_GRACE_MS } from './domain/inference/engine.js';
import type { RateLimitSettings } from './domain/ratelimit/types.js';
import { accountsSchema, type AccountsSettings } from './config-accounts.js';
import { alertsSchema, MAX_TIMER_SECONDS, readMailEnv, TIMER_TOO_LONG, type AlertsSettings, type MailEnv } from './config-alerts.js';

const positiveInt = z.number().int().positive();
/** Milliseconds a timer is set to: past 2^31 - 1 node fires it at once (a TimeoutOverflowWarning), so refused. */
const MAX_TIMER_MS = 2_147_483_647;
const timerMs = positiveInt.max(MAX_TIMER_MS, `at most ${MAX_TIMER_MS} (about 24.8 days, the longest interval a timer keeps)`);
/** safety.window_chars when the config gives none (README, "Content filtering", says what it costs). */
export const DEFAULT_SAFETY_WINDOW_CHARS = 200;
// Prices and fees become integer nanos (src/domain/billing/money.ts): more than 9 decimal places would be rounded, so it is refused.
const price = z.number().nonnegative().finite().superRefine(refineAmount);
// Wallets, the ledger, fees, top-ups and every display are in US dollars (the domain's
// WALLET_CURRENCY); a model priced in another currency would be billed as if its prices were
// dollars, so any other code is refused here rather than ignored (README, "Currency").
const currency = z
  .string()
  .regex(/^[a-z]{3}$/, 'a lowercase three-letter currency code, e.g. usd')
  .refine((code) => code === 'usd', {
    message: 'only usd is supported: wallets, the ledger, fees and top-ups are kept in US dollars, and prices are charged as dollars',
  });

/** An upstream's address: http or https (undici refused any other scheme with a stack trace at start-up). */
const upstreamUrl = z
  .string()
  .url()
  .refine((u) => URL.canParse(u) && /^https?:$/i.test(new URL(u).protocol), {
    message: 'an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1',
  });

/** An ISO date (2027-01-31, or a full ISO time); another text was dropped without a word, and the Sunset header with it. */
const sunsetDate = z.union([
  z.string().refine((t) => /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(t.trim()) && !Number.isNaN(Date.parse(t)), {
    message: 'an ISO date such as 2027-01-31 (or 2027-01-31T00:00:00Z)',
  }),
  z.date(),
]);

const openaiEngine = z.strictObject({
  type: z.literal('openai'),
  base_url: upstreamUrl.optional(),
  base_urls: z.array(upstreamUrl).min(1).optional(),
  model: z.string().min(1),
  api_key_env: z.string().min(1).optional(),
  /** Idle timeout: the longest wait for the upstream's answer to start, and between two events of a stream (comments and keep-alives are not progress). */
  timeout_ms: timerMs.default(60_000),
  /** Total deadline of one call, failover included: a call still running then ends (a stream with an error event, billed for what was delivered). */
  max_duration_ms: timerMs.default(DEFAULT_MAX_DURATION_MS),
  /** How long a TCP (and TLS) connection to a base URL may take before the call moves to the next one. */
  connect_timeout_ms: timerMs.default(3_000),
  /** How long a base URL may take to send its response head; past it the call moves to the next base URL. Default: `timeout_ms`. */
  first_byte_timeout_ms: timerMs.optional(),
  /** Ejection of a failing base URL: after `failure_threshold` failures in a row it is skipped for `cooldown_ms`, then one call probes it (half-open). */
  circuit_breaker: z
    .strictObject({ failure_threshold: positiveInt.default(3), cooldown_ms: timerMs.default(30_000) })
    .default({ failure_threshold: 3, cooldown_ms: 30_000 }),
  /** Upstream rerank path, relative to the base URL (vLLM, llama.cpp's server, Infinity and TEI serve /rerank). */
  rerank_path: z.string().default('/rerank'),
  /**
   * What the upstream's rerank scores are: `logits` (llama.cpp's server: raw classifier outputs,
   * each put through a sigmoid), `probabilities` (TEI, vLLM, Cohere-style: passed as they are), or
   * `auto` (a request with any score outside [0, 1] is taken for logits; see README).
   */
  rerank_scores: z.enum(['auto', 'probabilities', 'logits']).default('auto'),
  /**
   * The name the output limit is sent under: `max_tokens` (what self-hosted servers read), or
   * `max_completion_tokens` (OpenAI's reasoning models refuse `max_tokens`).
   */
  max_tokens_param: z.enum(['max_tokens', 'max_completion_tokens']).default('max_tokens'),
});

/** In-process inference with llama.cpp on a GGUF file (src/domain/inference/llamacpp/). */
const llamacppEngine = z.strictObject({
  type: z.literal('llamacpp'),
  /** The GGUF file; a relative path is taken from the working directory (`npx tollgate models pull` saves into MODELS_DIR, ./models). */
  file: z.string().min(1),
  /** Where the file comes from, for `models pull --defaults` and start-up messages: hf:owner/repo/file.gguf or an http(s) URL. */
  source: z
    .string()
    .regex(/^(hf:[^/\s]+\/[^/\s]+\/\S+|https?:\/\/\S+)$/, 'hf:owner/repo/file.gguf or an http(s) URL')
    .optional(),
  /** Threads per context; default: the machine's cores. */
  threads: positiveInt.optional(),
  /** Calls served at once (sequences or contexts). */
  parallel: positiveInt.default(1),
  /** Tokens per context (per sequence); default: what the catalog entry needs. */
  context_size: positiveInt.optional(),
  batch_size: positiveInt.optional(),
  /** The FIFO queue in front of the slots; beyond it, 503 model_overloaded with Retry-After. */
  queue: z
    .strictObject({ max_depth: z.number().int().nonnegative().default(16), max_wait_ms: timerMs.default(30_000) })
    .default({ max_depth: 16, max_wait_ms: 30_000 }),
  /** The whole call (its wait in the queue included): past it, 504 upstream_timeout, or a stream's error event. */
  max_duration_ms: timerMs.default(DEFAULT_MAX_DURATION_MS),
  /** eager: loaded at start-up (/readyz waits for it); lazy: on its first call. */
  load: z.enum(['eager', 'lazy']).default('eager'),
  /** Layers offloaded to the GPU when llama.cpp runs a GPU build: auto (all that fit; default), max, or a count (0: none). */
  gpu_layers: z.union([z.enum(['auto', 'max']), z.number().int().nonnegative()]).optional(),
});

const engine = z.discriminatedUnion('type', [openaiEngine, llamacppEngine]);

const common = {
  id: z
    .string()
    .min(1)
    .regex(/^[A-Za-z0-9._:\-/]+$/, 'letters, digits and . _ : - / only'),
  owned_by: z.string().min(1),
  created: z.number().int().nonnegative(),
  version: z.string().min(1),
  status: z.enum(['active', 'beta', 'deprecated']),
  /** ISO date after which a deprecated model is removed; adds Deprecation and Sunset headers. */
  sunset: sunsetDate.optional(),
  engine,
};

const chatModel = z.strictObject({
  ...common,
  category: z.literal('chat'),
  capabilities: z.strictObject({ chat_completion: z.boolean(), streaming: z.boolean(), function_calling: z.boolean() }),
  pricing: z.strictObject({ input_price_per_million: price, output_price_per_million: price, currency }),
  specifications: z.strictObject({
    context_window: positiveInt,
    max_output_tokens: positiveInt,
    training_cutoff: z.string().regex(/^\d{4}-\d{2}$/, 'year-month, e.g. 2024-10'),
  }),
  /** Content filtering by a moderation model of the catalog (README, "Content filtering"). */
  safety: z
    .strictObject({
      moderation_model: z.string().min(1),
      /** The messages are checked before generation; flagged: 400 content_filter, nothing generated. */
      input: z.boolean().default(true),
      /** The answer is checked in windows before it is sent; flagged: it ends with finish_reason content_filter. */
      output: z.boolean().default(true),
      /** Characters of answer per output check (the first text of a stream waits for one window). */
      window_chars: z.number().int().min(16).max(8192).default(DEFAULT_SAFETY_WINDOW_CHARS),
    })
    .optional(),
});

const embeddingModel = z.strictObject({
  ...common,
  category: z.literal('embedding'),
  capabilities: z.strictObject({ embeddings: z.boolean() }),
  pricing: z.strictObject({ price_per_million_tokens: price, currency }),
  specifications: z
    .strictObject({
      max_tokens: positiveInt,
      output_dimensions: positiveInt,
      /** Shorter vector sizes a request may ask for with `dimensions` (a Matryoshka-trained model's): cut and L2-renormalised. */
      supported_dimensions: z
        .array(positiveInt)
        .min(1)
        .refine((d) => new Set(d).size === d.length, 'each size once')
        .optional(),
    })
    .refine((s) => (s.supported_dimensions ?? []).every((d) => d < s.output_dimensions), {
      message: 'every size must be below output_dimensions (the full size is always supported)',
      path: ['supported_dimensions'],
    }),
});

const rerankModel = z.strictObject({
  ...common,
  category: z.literal('reranking'),
  capabilities: z.strictObject({ rerank: z.boolean() }),
  pricing: z.strictObject({ price_per_million_tokens: price, currency }),
  specifications: z.strictObject({ max_tokens: positiveInt, max_documents: positiveInt.max(100).default(100) }),
});

const moderationModel = z.strictObject({
  ...common,
  category: z.literal('moderation'),
  capabilities: z.strictObject({ moderation: z.boolean() }),
  // Moderation is free unless the catalog gives it a price.
  pricing: z.strictObject({ price_per_million_tokens: price.default(0), currency }),
  specifications: z.strictObject({ max_tokens: positiveInt }),
});

const modelSchema = z.discriminatedUnion('category', [chatModel, embeddingModel, rerankModel, moderationModel]);

/** One tier as the operator may write it: any key left out keeps the default of TIER_DEFAULTS. */
const tierOverride = z.strictObject({
  /** Tokens per calendar month (UTC); null = unlimited and not billed. */
  monthly_tokens: z.number().int().nonnegative().nullable().optional(),
  /** Whether usage beyond the allocation is paid from the wallet (false: refused with 402). */
  overage: z.boolean().optional(),
  /** A subscription fee in currency units, charged from the wallet when the tier is taken and at each period start. */
  monthly_fee: price.optional(),
  /** Whether customers may move themselves to this tier from the dashboard (default: all but enterprise). */
  self_service: z.boolean().optional(),
  /** Requests per minute per account (rate limits, issue 5). */
  rpm: positiveInt.optional(),
  /** Tokens per minute per account: prompt + maximum output at admission, corrected to the real usage. */
  tpm: positiveInt.optional(),
});

export { TIER_DEFAULTS, type TierConfig, type TierPolicy, type TierRateLimits } from './domain/accounts/tiers.js';
/** The tier names, defined by the domain (src/domain/accounts/tiers.ts). */
export const TIER_NAMES = TIERS;
export type TierName = Tier;

const billingSchema = z.strictObject({
  /** A hold older than this is released (charging nothing) by the sweeper and at start-up. */
  hold_expiry_seconds: z.number().positive().default(900),
  /** How often the sweeper releases expired holds, heartbeats and charges period fees. */
  sweep_interval_seconds: z.number().positive().max(MAX_TIMER_SECONDS, TIMER_TOO_LONG).default(30),
  /** A server whose heartbeat is older than this is taken as dead, and its holds are released. */
  instance_timeout_seconds: z.number().positive().default(90),
});
/** `billing:` when the config leaves it out (its keys' own defaults). */
export const BILLING_DEFAULTS: BillingSettings = billingSchema.parse({});
export type { BillingSettings };
const billingAgrees: (parsed: z.infer<typeof billingSchema>) => BillingSettings = (parsed) => parsed;

const rateLimitsSchema = z.strictObject({
  /**
   * Where the per-account windows live: `memory` (one instance), `redis` (shared by every instance;
   * needs REDIS_URL) or `none` (no rate limits). Default: `redis` when REDIS_URL is set, else `memory`.
   */
  backend: z.enum(['memory', 'redis', 'none']).optional(),
  /** While Redis cannot be reached: false serves calls without limits (fail-open), true refuses them with 503. */
  fail_closed: z.boolean().default(false),
  /** The "frequent rate-limit hits" alert fires when an account gets more than this many 429s in 10 minutes. */
  alert_threshold: positiveInt.default(100),
  /** Prepended to every Redis key (several deployments may share one Redis). */
  key_prefix: z.string().default('tollgate:'),
});

export type { RateLimitSettings };

/** The proxies' names express's `trust proxy` knows (proxy-addr's), besides addresses and subnets. */
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * Why a `trust proxy` list cannot be used (an entry that is neither a name of PROXY_NAMES, an IP
 * address, nor a subnet as address/prefix or address/netmask), or null.
 */
function untrustworthyProxies(value: string | string[]): string | null {
  const entries = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
  if (entries.length === 0) return 'no proxy given';
  if (entries.some((e) => e === '')) return 'an empty entry';
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const [address, range, ...rest] = entry.split('/');
    const family = isIP(address!);
    const ok =
      family !== 0 &&
      rest.length === 0 &&
      (range === undefined ||
        (/^\d{1,3}$/.test(range) && Number(range) <= (family === 4 ? 32 : 128)) ||
        (family === 4 && isIP(range) === 4));
    if (!ok) return `"${entry}" is not ${PROXY_NAMES.join(', ')}, an IP address or a subnet such as 10.0.0.0/8`;
  }
  return null;
}

/**
 * `server.trust_proxy`: whose X-Forwarded-For tells the client's address (express's `trust
 * proxy`). false: nobody's, the connection's own address is the client's; a number: that many
 * proxies in front; addresses, subnets or names of the proxies. `true` (anyone's) is refused: any
 * client could then name any address, and be counted as another.
 */
const trustProxySchema = z
  .union([z.boolean(), positiveInt, z.string(), z.array(z.string())])
  .superRefine((value, ctx) => {
    if (value === true)
      ctx.addIssue({
        code: 'custom',
        message: "true would believe any client's X-Forwarded-For: give the number of proxies in front (1) or their addresses",
      });
    if (typeof value === 'boolean' || typeof value === 'number') return;
    const why = untrustworthyProxies(value);
    if (why) ctx.addIssue({ code: 'custom', message: `${why} (or false, or the number of proxies in front)` });
  })
  // A list entry written "10.0.0.1, 10.0.0.2" is two entries (express takes each array item whole).
  .transform((value) => (Array.isArray(value) ? value.flatMap((v) => v.split(',')).map((v) => v.trim()) : value));
export type TrustProxy = false | number | string | string[];

/** TRUST_PROXY from the environment: false, a number of proxies, or a comma-separated list of them. */
function trustProxyEnv(value: string): TrustProxy {
  const v = value.trim();
  if (v === 'false') return false;
  if (/^\d+$/.test(v) && Number(v) > 0) return Number(v);
  const why = untrustworthyProxies(v);
  if (why) throw new ConfigError(`TRUST_PROXY=${value}: ${why} (or false, or the number of proxies in front)`);
  return v;
}

const fileSchema = z.strictObject({
  server: z
    .strictObject({
      /** The largest request body on every door (/v1, /graphql, WebSocket frames), e.g. 1mb, 512kb. */
      body_limit: z
        // A plain number is bytes, as YAML reads 100000 unquoted.
        .union([z.string(), z.number().int().positive().transform(String)])
        .refine((v) => (parseBytes(v) ?? 0) > 0, 'a size such as 1mb, 512kb or 100000 (bytes)')
        .default('1mb'),
      shutdown_timeout_ms: timerMs.default(10_000),
      /**
       * How long a client has to send a whole request, headers and body (node:http's
       * requestTimeout; 408 request_timeout past it). Bounds receiving only: a long answer, a
       * stream or a WebSocket is not cut by it.
       */
      request_timeout_ms: timerMs.default(30_000),
      /** How long a client has to send a request's headers (node:http's headersTimeout); at most request_timeout_ms. */
      headers_timeout_ms: timerMs.default(20_000),
      /**
       * Origins whose pages may call the API from a browser (CORS), e.g. https://app.example.com;
       * "*" allows any origin, without credentials. Empty: no cross-origin access.
       */
      cors_origins: z
        .array(z.union([z.literal('*'), z.string().regex(/^https?:\/\/[^/\s]+$/, 'an origin such as https://app.example.com (no path)')]))
        .default([]),
      /**
       * Which proxies in front are believed when they name the client in X-Forwarded-For (express's
       * `trust proxy`): the address sign-in is throttled by. false (default): none.
       */
      trust_proxy: trustProxySchema.default(false).transform((v): TrustProxy => (v === true ? false : v)),
      /**
       * WebSockets (GraphQL subscriptions) one client address may hold open at once (the address
       * `trust_proxy` names); past it the upgrade is refused with 429 too_many_connections.
       */
      max_websockets_per_client: positiveInt.default(64),
      /**
       * A /v1 stream's client that takes none of what was written for this long is disconnected:
       * its call ends, billed for what was delivered. A client that stops reading would otherwise
       * hold the call (an in-process model's slot) and outlive its hold.
       */
      stalled_client_ms: timerMs.default(60_000),
    })
    .default({
      body_limit: '1mb',
      shutdown_timeout_ms: 10_000,
      request_timeout_ms: 30_000,
      headers_timeout_ms: 20_000,
      cors_origins: [],
      trust_proxy: false,
      max_websockets_per_client: 64,
      stalled_client_ms: 60_000,
    }),
  graphql: z
    .strictObject({
      introspection: z.boolean().default(true),
      max_depth: positiveInt.default(10),
      max_aliases: positiveInt.default(15),
      max_cost: positiveInt.default(100_000),
      max_tokens: positiveInt.default(2000),
      max_directives: positiveInt.default(50),
      /**
       * Standing subscriptions (walletUpdated, notificationAdded) one account may hold open on one
       * server process, over WebSocket and SSE together; chat streams are metered calls, not counted.
       */
      max_subscriptions_per_account: positiveInt.default(32),
    })
    .default({
      introspection: true,
      max_depth: 10,
      max_aliases: 15,
      max_cost: 100_000,
      max_tokens: 2000,
      max_directives: 50,
      max_subscriptions_per_account: 32,
    }),
  // Chat requests (issue 16): the most choices (`n`) one request may ask for; each is generated in full.
  chat: z.strictObject({ max_choices: positiveInt.max(128).default(4) }).default({ max_choices: 4 }),
  tiers: z
    .strictObject({
      free: tierOverride.optional(),
      developer: tierOverride.optional(),
      startup: tierOverride.optional(),
      enterprise: tierOverride.optional(),
    })
    .default({}),
  billing: billingSchema.default(BILLING_DEFAULTS),
  payments: paymentsSchema,
  rate_limits: rateLimitsSchema.default({ fail_closed: false, alert_threshold: 100, key_prefix: 'tollgate:' }),
  // Alerts (issue 14): unusual-usage detection and e-mail delivery (src/config-alerts.ts).
  alerts: alertsSchema,
  // Sign-up and sign-in for the dashboard (issue 15; src/config-accounts.ts).
  accounts: accountsSchema,
  /** The in-process engine's runtime: which prebuilt build of llama.cpp (README, "GPU offload"). */
  llamacpp: z
    .strictObject({ gpu: z.union([z.enum(['auto', 'cuda', 'vulkan']), z.literal(false)]).default('auto') })
    .default({ gpu: 'auto' }),
  models: z.array(z.unknown()).default([]),
});

// The domain's types (src/domain/catalog/model.ts) are what the YAML is read onto; these
// functions only compile while the schemas produce values of those types.
export { MODEL_CATEGORIES, type ChatModelConfig, type EngineConfig, type ModelCategory, type ModelConfig, type OpenAIEngineConfig };
const modelAgrees: (parsed: z.infer<typeof modelSchema>) => ModelConfig = (parsed) => parsed;
void modelAgrees;
void billingAgrees;

export interface AppConfig {
  configPath: string;
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl: string;
  adminToken: string | null;
  /** Bearer token for GET /metrics; null: served to loopback clients only. */
  metricsToken: string | null;
  logLevel: string;
  nodeEnv: string;
  server: z.infer<typeof fileSchema>['server'];
  graphql: z.infer<typeof fileSchema>['graphql'];
  /** `chat:`: the most choices per chat request. */
  chat: z.infer<typeof fileSchema>['chat'];
  tiers: Record<TierName, TierConfig>;
  billing: BillingSettings;
  payments: PaymentsSettings;
  /** STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE; null unless payments.processor is stripe. */
  stripe: StripeEnv | null;
  rateLimits: RateLimitSettings;
  /** REDIS_URL: the Redis that rate limits share across instances; null when unset. */
  redisUrl: string | null;
  /** Unusual-usage detection and e-mail delivery (`alerts:`). */
  alerts: AlertsSettings;
  /** Dashboard sign-up policy and sessions (`accounts:`). */
  accounts: AccountsSettings;
  /** SMTP_URL, MAIL_FROM, MAIL_DIR. */
  mail: MailEnv;
  /** `llamacpp:` the in-process engine's runtime (its GPU build). */
  llamacpp: z.infer<typeof fileSchema>['llamacpp'];
  models: ModelConfig[];
}

export { ConfigError };

/**
 * The sandbox refused on a HOST that is not loopback. `npm start` first tries the address: one
 * this machine does not have, or a name it cannot resolve, is said as that (a typo), not as this.
 */
export class SandboxHostError extends ConfigError {
  constructor(
    message: string,
    readonly host: string,
    readonly port: number,
  ) {
    super(message);
  }
}

/** The shortest ADMIN_TOKEN start-up takes. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

type ZodDef = Record<string, unknown> & { type: string };
const defOf = (schema: unknown): ZodDef => (schema as { _zod: { def: ZodDef } })._zod.def;
const isSchema = (s: unknown): s is z.ZodType => Boolean(s && typeof s === 'object' && '_zod' in s);

/** The schemas a value is checked against, through defaults, optionals, pipes and unions. */
function unwrap(schema: unknown, depth = 0): z.ZodType[] {
  if (!isSchema(schema) || depth > 20) return [];
  const def = defOf(schema);
  if (Array.isArray(def.options)) return def.options.flatMap((o) => unwrap(o, depth + 1));
  for (const k of ['innerType', 'in']) if (isSchema(def[k])) return unwrap(def[k], depth + 1);
  return [schema];
}

/** The keys the section at `path` takes (an unknown key's neighbours: "did you mean" picks among them only). */
function sectionKeys(schema: z.ZodType, path: readonly PropertyKey[]): Set<string> {
  let here = unwrap(schema);
  for (const step of path) {
    here = here.flatMap((s) => {
      const def = defOf(s);
      if (def.type === 'object') return unwrap((def.shape as Record<string, unknown>)[String(step)]);
      if (def.type === 'array') return unwrap(def.element);
      if (def.type === 'record') return unwrap(def.valueType);
      return [];
    });
  }
  const keys = new Set<string>();
  for (const s of here) {
    const def = defOf(s);
    if (def.type === 'object') for (const key of Object.keys(def.shape as object)) keys.add(key);
  }
  return keys;
}

/** Every key a schema accepts, at any depth, with the sections that take it ("" for the top level). */
function keyPlaces(schema: z.ZodType, at = '', into = new Map<string, Set<string>>(), seen = new Set<unknown>()): Map<string, Set<string>> {
  for (const s of unwrap(schema)) {
    if (seen.has(s)) continue;
    seen.add(s);
    const def = defOf(s);
    if (def.type === 'object') {
      for (const [key, child] of Object.entries(def.shape as Record<string, unknown>)) {
        if (!into.has(key)) into.set(key, new Set());
        into.get(key)!.add(at);
        if (isSchema(child)) keyPlaces(child, at ? `${at}.${key}` : key, into, seen);
      }
    } else if (def.type === 'array' && isSchema(def.element)) keyPlaces(def.element, at, into, seen);
    else if (def.type === 'record' && isSchema(def.valueType)) keyPlaces(def.valueType, at ? `${at}.<name>` : '<name>', into, seen);
  }
  return into;
}

/** Edits from `a` to `b`: a character inserted, removed, changed, or two neighbours swapped (thraeds → threads: 1). */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/** The known key closest to an unknown one, when it is a near miss (a typo, another case, - for _). */
export function nearestKey(unknown: string, known: Iterable<string>): string | null {
  let best: { key: string; distance: number } | null = null;
  const normal = (k: string) => k.toLowerCase().replace(/-/g, '_');
  for (const key of known) {
    const distance = normal(key) === normal(unknown) ? 0 : editDistance(normal(unknown), normal(key));
    if (!best || distance < best.distance) best = { key, distance };
  }
  return best && best.distance <= Math.max(1, Math.floor(unknown.length / 4)) ? best.key : null;
}

let filePlaces: Map<string, Set<string>> | undefined;
let modelPlaces: Map<string, Set<string>> | undefined;

/**
 * An unknown key's hint: the section's own key it is a near miss of, or, when the key belongs to
 * another section, where it goes (a tier written under `alerts:` belongs under `tiers:`).
 */
function unknownKeyHint(key: string, path: readonly PropertyKey[], schema: z.ZodType, places: Map<string, Set<string>>): string {
  const near = nearestKey(key, sectionKeys(schema, path));
  if (near) return ` (did you mean "${near}"?)`;
  const here = path.filter((p) => typeof p !== 'number').join('.');
  const elsewhere = [...(places.get(key) ?? [])].filter((place) => place !== here);
  if (elsewhere.length === 0) return '';
  const named = elsewhere.slice(0, 3).map((place) => (place ? `under "${place}"` : 'at the top level'));
  return ` (it belongs ${named.join(' or ')})`;
}

function describeIssue(
  issue: z.core.$ZodIssue,
  prefix: string,
  schema?: { root: z.ZodType; places: () => Map<string, Set<string>> },
): string {
  const where = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `"${k}"${schema ? unknownKeyHint(k, issue.path, schema.root, schema.places()) : ''}`);
    return `${where ? `${where}: ` : ''}unknown key${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
  }
  if (issue.code === 'invalid_type' && issue.input === undefined) return `${where}: required field is missing`;
  return `${where}: ${issue.message}`;
}

/** Parses the config file's text; throws ConfigError naming the model and key at fault. */
export function parseConfigText(
  text: string,
  source: string,
  env: { REDIS_URL?: string } = {},
): Pick<
  AppConfig,
  | 'server'
  | 'graphql'
  | 'chat'
  | 'tiers'
  | 'billing'
  | 'payments'
  | 'rateLimits'
  | 'redisUrl'
  | 'alerts'
  | 'accounts'
  | 'llamacpp'
  | 'models'
> {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError(`${source}: not valid YAML: ${(e as Error).message}`);
  }
  const top = fileSchema.safeParse(raw, { reportInput: true });
  const fileKnown = { root: fileSchema as z.ZodType, places: () => (filePlaces ??= keyPlaces(fileSchema)) };
  const modelKnown = { root: modelSchema as z.ZodType, places: () => (modelPlaces ??= keyPlaces(modelSchema)) };
  // Every problem is gathered, the file's own keys' and each model's, so that one start-up shows
  // them all (each once, one per line).
  const problems: string[] = top.success ? [] : [...new Set(top.error.issues.map((i) => describeIssue(i, '', fileKnown)))];
  const models: ModelConfig[] = [];
  const seen = new Set<string>();
  const entries: unknown[] = top.success
    ? top.data.models
    : Array.isArray((raw as { models?: unknown } | null)?.models)
      ? (raw as { models: unknown[] }).models
      : [];
  entries.forEach((entry, index) => {
    const id = entry && typeof entry === 'object' && 'id' in entry ? String((entry as { id: unknown }).id) : `#${index + 1}`;
    const parsed = modelSchema.safeParse(entry, { reportInput: true });
    if (!parsed.success) {
      const lines = [...new Set(parsed.error.issues.map((i) => describeIssue(i, '', modelKnown)))];
      problems.push(`model "${id}": ${lines.join('; ')}`);
      return;
    }
    const m = parsed.data;
    if (m.engine.type === 'openai' && !m.engine.base_url && !m.engine.base_urls) {
      problems.push(`model "${id}": engine.base_url or engine.base_urls is required`);
      return;
    }
    if (m.engine.type === 'openai' && m.engine.base_url && m.engine.base_urls) {
      problems.push(`model "${id}": give engine.base_url or engine.base_urls, not both`);
      return;
    }
    if (seen.has(m.id)) {
      problems.push(`model "${id}": duplicate id`);
      return;
    }
    seen.add(m.id);
    models.push(m);
  });
  if (problems.length === 1) throw new ConfigError(`${source}: ${problems[0]}`);
  if (problems.length > 1) throw new ConfigError(`${source}: ${problems.length} problems:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  if (!top.success) throw new ConfigError(`${source}: not valid`); // unreachable: its issues are problems
  // node:http refuses a headers timeout longer than the request's, which includes the headers.
  const { request_timeout_ms, headers_timeout_ms } = top.data.server;
  if (headers_timeout_ms > request_timeout_ms)
    throw new ConfigError(
      `${source}: server.headers_timeout_ms (${headers_timeout_ms}) must be at most server.request_timeout_ms (${request_timeout_ms}): the headers are part of the request`,
    );
  // A chat model's safety names a moderation model of this catalog.
  for (const m of models) {
    if (m.category !== 'chat' || !m.safety) continue;
    const moderator = models.find((x) => x.id === m.safety!.moderation_model);
    const why = !moderator
      ? 'no model of the catalog has this id'
      : moderator.category !== 'moderation'
        ? `"${moderator.id}" is a ${moderator.category} model, not a moderation model`
        : null;
    if (why) throw new ConfigError(`${source}: model "${m.id}": safety.moderation_model "${m.safety.moderation_model}": ${why}`);
    if (!m.safety.input && !m.safety.output)
      throw new ConfigError(`${source}: model "${m.id}": safety.input and safety.output are both false: nothing would be checked`);
  }
  // A call that outlives its hold is released by the sweeper and billed nothing: refuse the config.
  const holdMs = top.data.billing.hold_expiry_seconds * 1000;
  if (top.data.server.stalled_client_ms >= holdMs)
    throw new ConfigError(
      `${source}: server.stalled_client_ms (${top.data.server.stalled_client_ms} ms) must be below billing.hold_expiry_seconds (${top.data.billing.hold_expiry_seconds} s): a stream whose client stopped reading could outlive its hold and go unbilled`,
    );
  for (const m of models) {
    // A stream whose consumer stopped pulling is settled STREAM_DEADLINE_GRACE_MS after the deadline.
    if (m.engine.max_duration_ms + STREAM_DEADLINE_GRACE_MS >= holdMs) {
      throw new ConfigError(
        `${source}: model "${m.id}": engine.max_duration_ms (${m.engine.max_duration_ms} ms) must be below billing.hold_expiry_seconds (${top.data.billing.hold_expiry_seconds} s) by more than ${STREAM_DEADLINE_GRACE_MS / 1000} s: a call could outlive its hold and go unbilled`,
      );
    }
  }
  const tiers = {} as Record<TierName, TierConfig>;
  for (const name of TIER_NAMES) {
    const given = top.data.tiers[name] ?? {};
    tiers[name] = {
      monthly_tokens: given.monthly_tokens === undefined ? TIER_DEFAULTS[name].monthly_tokens : given.monthly_tokens,
      overage: given.overage ?? TIER_DEFAULTS[name].overage,
      monthly_fee: given.monthly_fee ?? TIER_DEFAULTS[name].monthly_fee,
      self_service: given.self_service ?? TIER_DEFAULTS[name].self_service,
      rpm: given.rpm ?? TIER_DEFAULTS[name].rpm,
      tpm: given.tpm ?? TIER_DEFAULTS[name].tpm,
    };
  }
  const redisUrl = env.REDIS_URL || null;
  // A URL that can never connect would serve with rate limits silently off (fail-open, as for a
  // Redis that is down): refused at start-up instead, as a wrong DATABASE_URL is.
  if (redisUrl && !isRedisUrl(redisUrl))
    throw new ConfigError(
      `REDIS_URL ${redisUrl.replace(/\/\/[^@/]*@/, '//***@').slice(0, 120)}: not a Redis URL (use redis://host:6379, rediss://host:6380 for TLS, or a socket's path such as /run/redis/redis.sock)`,
    );
  const limits = top.data.rate_limits;
  const backend = limits.backend ?? (redisUrl ? 'redis' : 'memory');
  if (backend === 'redis' && !redisUrl)
    throw new ConfigError(`${source}: rate_limits.backend: "redis" needs the REDIS_URL environment variable`);
  const rateLimits: RateLimitSettings = { ...limits, backend };
  // Free is where an account falls back when it cannot pay a fee: it cannot have one itself.
  if (tiers.free.monthly_fee > 0)
    throw new ConfigError(
      `${source}: tiers.free.monthly_fee: the free tier cannot have a fee (accounts fall back to it when a fee is unpaid)`,
    );
  return {
    server: top.data.server,
    graphql: top.data.graphql,
    chat: top.data.chat,
    tiers,
    billing: top.data.billing,
    payments: top.data.payments,
    rateLimits,
    redisUrl,
    alerts: top.data.alerts,
    accounts: top.data.accounts,
    llamacpp: top.data.llamacpp,
    models,
  };
}

/**
 * `payments: false`: the payment processor's secrets are neither read nor required (the operator
 * CLI's commands, which take no payments, run without STRIPE_SECRET_KEY in their environment).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: { payments?: boolean } = {}): AppConfig {
  const configPath = path.resolve(env.CONFIG ?? 'config/default.yaml');
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read config file ${configPath} (env CONFIG): ${(e as Error).message}`);
  }
  const file = parseConfigText(text, configPath, env);
  // Digits only: Number() would take 1e4, 0x1F90 or " 80".
  const port = env.PORT === undefined || env.PORT === '' ? 8080 : /^\d{1,5}$/.test(env.PORT) ? Number(env.PORT) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT: not a port number: ${env.PORT}`);
  // It unlocks every account's money: a short one could be guessed (each wrong Bearer try is only a 403).
  if (env.ADMIN_TOKEN && env.ADMIN_TOKEN.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new ConfigError(
      `ADMIN_TOKEN is ${env.ADMIN_TOKEN.length} characters long: use at least ${MIN_ADMIN_TOKEN_LENGTH} (a random one: openssl rand -hex 24)`,
    );
  }
  // Loopback by default: the sandbox processor mints credits for anyone who can reach it.
  const host = env.HOST || '127.0.0.1';
  if (file.payments.processor === 'sandbox' && !file.payments.allow_sandbox && !isLoopback(host)) {
    throw new SandboxHostError(
      `HOST=${host}: the sandbox payment processor (top-ups credit wallets without charging anyone) only serves on a loopback address; ` +
        'configure payments.processor: stripe, or set payments.allow_sandbox: true to serve it on other interfaces anyway',
      host,
      port,
    );
  }
  if (env.PUBLIC_URL) checkPublicUrl(env.PUBLIC_URL);
  // The deployment's proxies, set beside it (compose.yaml) rather than in the config file.
  if (env.TRUST_PROXY) file.server = { ...file.server, trust_proxy: trustProxyEnv(env.TRUST_PROXY) };
  const publicUrl = (
    env.PUBLIC_URL || `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, '');
  return {
    configPath,
    port,
    host,
    publicUrl,
    databaseUrl: env.DATABASE_URL || 'sqlite:./data/tollgate.db',
    mail: mailEnv(env),
    adminToken: env.ADMIN_TOKEN || null,
    metricsToken: env.METRICS_TOKEN || null,
    logLevel: env.LOG_LEVEL || 'info',
    nodeEnv: env.NODE_ENV || 'development',
    ...file,
    stripe: opts.payments === false ? null : paymentsEnv(env, file.payments),
  };
}

/** 127.0.0.0/8, ::1 and localhost: addresses no other machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

function mailEnv(env: NodeJS.ProcessEnv): MailEnv {
  try {
    return readMailEnv(env, env.DATABASE_URL || 'sqlite:./data/tollgate.db');
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

function paymentsEnv(env: NodeJS.ProcessEnv, payments: PaymentsSettings): StripeEnv | null {
  try {
    return readPaymentsEnv(env, payments);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

/** PUBLIC_URL goes into checkout and e-mail links: an address a browser can open, or start-up stops. */
function checkPublicUrl(value: string): void {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username || url.password)
    throw new ConfigError(
      `PUBLIC_URL=${value}: the address clients reach this server at, with its scheme and without query or credentials, e.g. https://api.example.com or http://127.0.0.1:8080`,
    );
}

/** redis://, rediss:// (TLS) or a socket's absolute path: what ioredis reads. */
function isRedisUrl(value: string): boolean {
  if (value.startsWith('/')) return value.length > 1;
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname.length > 0;
  } catch {
    return false;
  }
}
