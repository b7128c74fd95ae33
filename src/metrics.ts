// Prometheus metrics (prom-client), one registry per server. What a call does is counted where it
// passes anyway: the HTTP access line (doors), the metering chain's settlement (tokens and spend)
// and a wrapper around forwarding engines (upstream latency and errors); the rest is read when
// scraped (open holds, the outbox, llama.cpp queues, the rate limiter's refusals). Labels never
// carry account ids, keys or end users.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ModelConfig } from './config.js';
import { pricesOf, split } from './domain/billing/hold-plan.js';
import type { Prices } from './domain/billing/money.js';
import type { Engine, Usage } from './domain/inference/engine.js';
import type {
  Caller,
  CallOutcome,
  EngineRegistry,
  MeterRequest,
  MeterTicket,
  Metering,
  Undelivered,
} from './domain/inference/inference-service.js';
import type { RateLimiter } from './domain/ratelimit/rate-limiter.js';

export interface MetricSources {
  /** Holds of calls in flight, on every instance. */
  holdsOpen(): Promise<number>;
  /** Notifications not delivered yet. */
  outboxPending(): Promise<number>;
  /** Notifications whose tries are used up (kept for an operator: `tollgate mail status|retry`). */
  outboxFailed?(): Promise<number>;
  /** Calls waiting for a slot, per in-process model. */
  queueDepths(): Record<string, number>;
  rateLimiter: RateLimiter | null;
}

const NANOS = 1e9;

export class Metrics {
  readonly registry = new Registry();
  // Each series' handle, looked up once: prom-client hashes a label object on every call otherwise.
  private readonly httpSeries = new Map<string, { requests: Counter.Internal; duration: Histogram.Internal<'door' | 'route'> }>();
  private readonly settledSeries = new Map<
    string,
    { prompt: Counter.Internal; completion: Counter.Internal; spend: Counter.Internal; prices: Prices }
  >();
  private readonly upstreamSeries = new Map<string, { duration: Histogram.Internal<'model'>; errors: Counter.Internal | null }>();
  private readonly httpRequests: Counter<'door' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'door' | 'route'>;
  private readonly tokens: Counter<'model' | 'kind'>;
  private readonly spend: Counter<'model' | 'currency'>;
  private readonly upstreamErrors: Counter<'model'>;
  private readonly upstreamDuration: Histogram<'model'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'tollgate_http_requests_total',
      help: 'HTTP requests answered, by door (v1, graphql, web, ops), route and status.',
      labelNames: ['door', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'tollgate_http_request_duration_seconds',
      help: 'Time from a request to the end of its response (a stream: its last byte), by door and route.',
      labelNames: ['door', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.tokens = new Counter({
      name: 'tollgate_tokens_total',
      help: 'Tokens of settled calls, by model and kind (prompt, completion).',
      labelNames: ['model', 'kind'],
      registers,
    });
    this.spend = new Counter({
      name: 'tollgate_spend_total',
      help: "Value of settled calls' tokens at the model's list prices, in currency units (usage covered by monthly allocations included).",
      labelNames: ['model', 'currency'],
      registers,
    });
    this.upstreamErrors = new Counter({
      name: 'tollgate_upstream_errors_total',
      help: 'Calls to a forwarding model that failed (its upstream, not the client).',
      labelNames: ['model'],
      registers,
    });
    this.upstreamDuration = new Histogram({
      name: 'tollgate_upstream_duration_seconds',
      help: 'Duration of calls to a forwarding model, a stream until its end.',
      labelNames: ['model'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    new Gauge({
      name: 'tollgate_holds_open',
      help: 'Holds of calls in flight (all instances).',
      registers,
      async collect() {
        this.set(await sources.holdsOpen());
      },
    });
    new Gauge({
      name: 'tollgate_outbox_pending',
      help: 'Notifications written and not delivered yet.',
      registers,
      async collect() {
        this.set(await sources.outboxPending());
      },
    });
    // Apart from pending: a message that fails for good leaves pending, so that gauge alone falls
    // back to 0 just when someone should look.
    new Gauge({
      name: 'tollgate_outbox_failed',
      help: 'Notifications whose e-mail failed for good (tries used up), until an operator retries them.',
      registers,
      async collect() {
        this.set((await sources.outboxFailed?.()) ?? 0);
      },
    });
    new Gauge({
      name: 'tollgate_llamacpp_queue_depth',
      help: 'Calls waiting for a slot of an in-process model.',
      labelNames: ['model'],
      registers,
      collect() {
        for (const [model, depth] of Object.entries(sources.queueDepths())) this.set({ model }, depth);
      },
    });
    // The limiter counts its refusals; this counter follows its totals at each scrape.
    const seen = { rpm: 0, tpm: 0 };
    new Counter({
      name: 'tollgate_rate_limit_refusals_total',
      help: 'Calls refused 429 by a rate limit, by the limit (rpm, tpm) that refused them.',
      labelNames: ['limit'],
      registers,
      collect() {
        const by = sources.rateLimiter?.stats.refusedBy;
        for (const limit of ['rpm', 'tpm'] as const) {
          this.inc({ limit }, by ? by[limit] - seen[limit] : 0);
          if (by) seen[limit] = by[limit];
        }
      },
    });
  }

  observeHttp(door: string, route: string, status: number, seconds: number): void {
    const key = `${status} ${door} ${route}`;
    let series = this.httpSeries.get(key);
    if (!series) {
      series = {
        requests: this.httpRequests.labels({ door, route, status: String(status) }),
        duration: this.httpDuration.labels({ door, route }),
      };
      // Routes are patterns and statuses few: the series stay few (a bound all the same).
      if (this.httpSeries.size < SERIES_CACHED) this.httpSeries.set(key, series);
    }
    series.requests.inc();
    series.duration.observe(seconds);
  }

  observeSettled(model: ModelConfig, usage: Usage): void {
    const m = this.modelSeries(model);
    m.prompt.inc(usage.promptTokens);
    if (usage.completionTokens > 0) m.completion.inc(usage.completionTokens);
    const { walletNanos } = split(usage.promptTokens, usage.completionTokens, 0, m.prices);
    m.spend.inc(Number(walletNanos) / NANOS);
  }

  observeUpstream(modelId: string, seconds: number, failed: boolean): void {
    let m = this.upstreamSeries.get(modelId);
    if (!m) this.upstreamSeries.set(modelId, (m = { duration: this.upstreamDuration.labels({ model: modelId }), errors: null }));
    m.duration.observe(seconds);
    if (failed) (m.errors ??= this.upstreamErrors.labels({ model: modelId })).inc();
  }

  /** A model's series of settled calls and its prices in nanos, made once (settlement is a hot path). */
  private modelSeries(model: ModelConfig) {
    let m = this.settledSeries.get(model.id);
    if (!m) {
      m = {
        prompt: this.tokens.labels({ model: model.id, kind: 'prompt' }),
        completion: this.tokens.labels({ model: model.id, kind: 'completion' }),
        spend: this.spend.labels({ model: model.id, currency: model.pricing.currency.toUpperCase() }),
        prices: pricesOf(model),
      };
      this.settledSeries.set(model.id, m);
    }
    return m;
  }
}

/** How many HTTP series observeHttp keeps its handles for (prom-client keeps every series anyway). */
const SERIES_CACHED = 1000;

/**
 * The outermost metering: counts each settled call's tokens and spend, and tells the caller what
 * was settled (for the access line), around the rate limiter and billing.
 */
export class MetricsMetering implements Metering {
  constructor(
    private readonly inner: Metering,
    private readonly metrics: Metrics,
  ) {}

  precheck(caller: Caller): void | Promise<void> {
    return this.inner.precheck?.(caller);
  }

  async countRefused(caller: Caller): Promise<void> {
    await this.inner.countRefused?.(caller);
  }

  async admit(req: MeterRequest): Promise<MeterTicket> {
    const ticket = await this.inner.admit(req);
    req.caller.onAdmitted?.();
    const { metrics } = this;
    return {
      maxOutputTokens: ticket.maxOutputTokens,
      async settle(usage: Usage, outcome: CallOutcome, undelivered?: Undelivered) {
        await ticket.settle(usage, outcome, undelivered);
        metrics.observeSettled(req.model, usage);
        req.caller.onSettled?.(req.model.id, usage);
      },
    };
  }
}

/** Forwarding models' engines, timed and their failures counted (a client's abort is not one). */
export class TimedEngines implements EngineRegistry {
  private readonly timed = new Map<string, Engine>();

  constructor(
    private readonly inner: EngineRegistry,
    private readonly metrics: Metrics,
    private readonly forwarding: ReadonlySet<string>,
  ) {}

  get(modelId: string): Engine {
    const engine = this.inner.get(modelId);
    if (!this.forwarding.has(modelId)) return engine;
    let timed = this.timed.get(modelId);
    if (!timed) this.timed.set(modelId, (timed = timeEngine(engine, modelId, this.metrics)));
    return timed;
  }
}

function timeEngine(engine: Engine, modelId: string, metrics: Metrics): Engine {
  const timeCall = async <T>(signal: AbortSignal, call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      const result = await call();
      metrics.observeUpstream(modelId, (performance.now() - started) / 1000, false);
      return result;
    } catch (err) {
      metrics.observeUpstream(modelId, (performance.now() - started) / 1000, !signal.aborted);
      throw err;
    }
  };
  return {
    chat: (req, signal) => timeCall(signal, () => engine.chat(req, signal)),
    async *chatStream(req, signal) {
      const started = performance.now();
      let failed = false;
      try {
        yield* engine.chatStream(req, signal);
      } catch (err) {
        failed = !signal.aborted;
        throw err;
      } finally {
        metrics.observeUpstream(modelId, (performance.now() - started) / 1000, failed);
      }
    },
    embed: (input, signal) => timeCall(signal, () => engine.embed(input, signal)),
    rerank: (query, documents, signal) => timeCall(signal, () => engine.rerank(query, documents, signal)),
    moderate: (inputs, signal) => timeCall(signal, () => engine.moderate(inputs, signal)),
    countChatTokens: (messages, tools) => engine.countChatTokens(messages, tools),
    countTokens: (text) => engine.countTokens(text),
    unsupported: engine.unsupported ? (req) => engine.unsupported!(req) : undefined,
    close: engine.close ? () => engine.close!() : undefined,
  };
}
