// A fake of the part of Stripe's API that tollgate uses, on plain node:http on loopback, for the
// stripe SDK pointed at it through STRIPE_API_BASE: customers, Checkout Sessions, a customer's
// payment methods and off-session PaymentIntents (with cards that succeed, decline or stay
// processing on demand). It honours Idempotency-Key as Stripe does (same key and parameters: the
// first response again; same key, other parameters: 400 idempotency_error), records every request,
// and builds the events Stripe would send (`events.*`), which `deliverStripeEvent` signs and posts.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeStripeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: Record<string, unknown>;
  idempotencyKey: string | null;
  authorization: string | null;
  /** When it arrived, by Stripe's clock. */
  at: Date;
}

export type FaultStep = 500 | 503 | 'lose';

export type CardBehaviour = 'succeed' | 'decline' | 'processing' | 'authentication_required';

export interface FakeSession {
  id: string;
  object: 'checkout.session';
  mode: string;
  status: 'open' | 'complete' | 'expired';
  payment_status: 'unpaid' | 'paid' | 'no_payment_required';
  amount_total: number;
  currency: string;
  customer: string | null;
  customer_email: string | null;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  payment_intent: string | null;
  success_url: string | null;
  cancel_url: string | null;
  expires_at: number;
  created: number;
  url: string | null;
  livemode: false;
  /** What the create call asked for the intent (setup_future_usage, metadata, description). */
  payment_intent_data: Record<string, unknown>;
}

export interface FakePaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_received: number;
  currency: string;
  customer: string | null;
  payment_method: string | null;
  status: 'succeeded' | 'processing' | 'requires_payment_method' | 'requires_action';
  metadata: Record<string, string>;
  description: string | null;
  off_session: boolean;
  last_payment_error: { type: string; code: string; decline_code?: string; message: string } | null;
  created: number;
  livemode: false;
}

export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  type: string;
  livemode: false;
  pending_webhooks: number;
  request: { id: null; idempotency_key: null };
  data: { object: Record<string, unknown> };
}

export interface FakeStripeOptions {
  /** Runs after a session is stored and before the create call is answered (an event may be delivered meanwhile). */
  beforeSessionResponse?: (session: FakeSession) => Promise<void>;
  /** Stripe's clock (what expires_at is checked against); default: the real one. */
  clock?: () => Date;
}

export interface FakeStripe {
  /** Base URL for STRIPE_API_BASE, e.g. http://127.0.0.1:PORT */
  url: string;
  requests: FakeStripeRequest[];
  customers: Map<string, { id: string; email: string | null; metadata: Record<string, string>; payment_methods: string[] }>;
  sessions: Map<string, FakeSession>;
  paymentIntents: Map<string, FakePaymentIntent>;
  /** How the next off-session charges behave (all of them when `count` is omitted). */
  setCardBehaviour(behaviour: CardBehaviour, count?: number): void;
  /**
   * What the next requests to a route ('POST /v1/payment_intents') meet, one step each, in order:
   * 500 or 503 before any work (nothing happens), or 'lose': the work is done (and its result kept
   * for its idempotency key) but the connection is dropped before the answer.
   */
  script(route: string, steps: FaultStep[]): void;
  setBeforeSessionResponse(hook: FakeStripeOptions['beforeSessionResponse'] | undefined): void;
  /** The customer pays at the hosted page: the session completes (paid, or unpaid for an async method), the card is saved. */
  pay(sessionId: string, opts?: { async?: boolean }): FakeSession;
  /** Builds the events Stripe sends for a session / intent in its current state. */
  events: {
    completed(sessionId: string): StripeEvent;
    asyncSucceeded(sessionId: string): StripeEvent;
    asyncFailed(sessionId: string): StripeEvent;
    expired(sessionId: string): StripeEvent;
    paymentIntentSucceeded(intentId: string): StripeEvent;
    paymentIntentFailed(intentId: string): StripeEvent;
    /**
     * charge.refunded for the intent's charge, its refunded total now `amountRefunded` cents
     * (cumulative, as Stripe's charge carries it).
     */
    refunded(intentId: string, amountRefunded: number): StripeEvent;
    /** charge.dispute.funds_withdrawn / funds_reinstated for the intent's (one) dispute. */
    disputeFunds(intentId: string, funds: 'withdrawn' | 'reinstated', amount?: number): StripeEvent;
    /** Any event around any object (an unknown session, a forged one). */
    custom(type: string, object: Record<string, unknown>): StripeEvent;
  };
  /** Requests to a path (method and path, e.g. 'POST /v1/payment_intents'). */
  count(route: string): number;
  reset(): void;
  close(): Promise<void>;
}

const API_VERSION = '2026-10-28.endive';

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** Parses Stripe's form encoding (`a[b][0][c]=x`) into nested objects; numeric keys make arrays. */
export function parseStripeForm(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const parts = rawKey.replace(/\]/g, '').split('[');
    let node: Record<string, unknown> = root;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) {
        node[part] = value;
        return;
      }
      const nextIsIndex = /^\d+$/.test(parts[i + 1]!);
      node[part] ??= nextIsIndex ? [] : {};
      node = node[part] as Record<string, unknown>;
    });
  }
  return root;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String((body.error as { message?: string })?.message ?? status));
  }
}

export async function startFakeStripe(opts: FakeStripeOptions = {}): Promise<FakeStripe> {
  const requests: FakeStripeRequest[] = [];
  const customers: FakeStripe['customers'] = new Map();
  const sessions = new Map<string, FakeSession>();
  const paymentIntents = new Map<string, FakePaymentIntent>();
  const idempotent = new Map<string, { fingerprint: string; status: number; body: unknown }>();
  const cardQueue: CardBehaviour[] = [];
  let cardDefault: CardBehaviour = 'succeed';
  const scripts = new Map<string, FaultStep[]>();
  let beforeSessionResponse = opts.beforeSessionResponse;
  const sockets = new Set<Socket>();
  let url = '';
  const now = () => Math.floor((opts.clock?.() ?? new Date()).getTime() / 1000);

  const routes: { method: string; pattern: RegExp; handle: (m: RegExpMatchArray, req: FakeStripeRequest) => Promise<unknown> | unknown }[] =
    [
      {
        method: 'POST',
        pattern: /^\/v1\/customers$/,
        handle: (_m, req) => {
          const metadata = (req.body.metadata ?? {}) as Record<string, string>;
          const customer = { id: newId('cus'), email: (req.body.email as string) ?? null, metadata, payment_methods: [] as string[] };
          customers.set(customer.id, customer);
          return customerJson(customer);
        },
      },
      {
        method: 'GET',
        pattern: /^\/v1\/customers$/,
        handle: (_m, req) => {
          const found = [...customers.values()].filter((c) => !req.query.email || c.email === req.query.email);
          return { object: 'list', url: '/v1/customers', has_more: false, data: found.map(customerJson) };
        },
      },
      {
        method: 'GET',
        pattern: /^\/v1\/customers\/([^/]+)$/,
        handle: (m) => customerJson(customerOf(m[1]!)),
      },
      {
        method: 'GET',
        pattern: /^\/v1\/customers\/([^/]+)\/payment_methods$/,
        handle: (m, req) => {
          const customer = customerOf(m[1]!);
          const limit = Number(req.query.limit ?? 10);
          // Newest first, as Stripe lists them.
          const data = [...customer.payment_methods]
            .reverse()
            .slice(0, limit)
            .map((id) => paymentMethodJson(id, customer.id));
          return { object: 'list', url: `/v1/customers/${customer.id}/payment_methods`, has_more: false, data };
        },
      },
      {
        method: 'POST',
        pattern: /^\/v1\/checkout\/sessions$/,
        handle: async (_m, req) => {
          const b = req.body;
          if (b.mode !== 'payment') throw invalid('mode must be payment for this fake', 'mode');
          if (!b.success_url) throw invalid('success_url is required in payment mode', 'success_url');
          const items = b.line_items as { quantity: string; price_data: { currency: string; unit_amount: string } }[] | undefined;
          const item = items?.[0];
          if (!item?.price_data) throw invalid('line_items[0][price_data] is required', 'line_items');
          const customer = (b.customer as string | undefined) ?? null;
          if (customer) customerOf(customer);
          const expiresAt = b.expires_at ? Number(b.expires_at) : now() + 86_400;
          if (expiresAt < now() + 1800 - 5 || expiresAt > now() + 86_400 + 5)
            throw invalid('expires_at must be 30 minutes to 24 hours from now', 'expires_at');
          const id = newId('cs_test');
          const session: FakeSession = {
            id,
            object: 'checkout.session',
            mode: 'payment',
            status: 'open',
            payment_status: 'unpaid',
            amount_total: Number(item.price_data.unit_amount) * Number(item.quantity ?? 1),
            currency: item.price_data.currency,
            customer,
            customer_email: (b.customer_email as string | undefined) ?? null,
            client_reference_id: (b.client_reference_id as string | undefined) ?? null,
            metadata: (b.metadata ?? {}) as Record<string, string>,
            payment_intent: null,
            success_url: b.success_url as string,
            cancel_url: (b.cancel_url as string | undefined) ?? null,
            expires_at: expiresAt,
            created: now(),
            url: `${url}/pay/${id}`,
            livemode: false,
            payment_intent_data: (b.payment_intent_data ?? {}) as Record<string, unknown>,
          };
          sessions.set(id, session);
          // The answer is the session as created, whatever happens to it before the answer leaves.
          const created = sessionJson(session);
          await beforeSessionResponse?.(session);
          return created;
        },
      },
      {
        method: 'GET',
        pattern: /^\/v1\/checkout\/sessions\/([^/]+)$/,
        handle: (m) => {
          const session = sessions.get(m[1]!);
          if (!session) throw notFound('checkout.session', m[1]!);
          return sessionJson(session);
        },
      },
      {
        method: 'POST',
        pattern: /^\/v1\/payment_intents$/,
        handle: (_m, req) => {
          const b = req.body;
          const customer = (b.customer as string | undefined) ?? null;
          if (customer) customerOf(customer);
          const paymentMethod = (b.payment_method as string | undefined) ?? null;
          if (b.confirm === 'true' && !paymentMethod) throw invalid('payment_method is required to confirm', 'payment_method');
          if (paymentMethod && customer && !customers.get(customer)!.payment_methods.includes(paymentMethod)) {
            throw invalid(`The payment method ${paymentMethod} is not attached to ${customer}`, 'payment_method');
          }
          const behaviour = cardQueue.shift() ?? cardDefault;
          const intent: FakePaymentIntent = {
            id: newId('pi'),
            object: 'payment_intent',
            amount: Number(b.amount),
            amount_received: 0,
            currency: String(b.currency),
            customer,
            payment_method: paymentMethod,
            status: 'requires_payment_method',
            metadata: (b.metadata ?? {}) as Record<string, string>,
            description: (b.description as string | undefined) ?? null,
            off_session: b.off_session === 'true',
            last_payment_error: null,
            created: now(),
            livemode: false,
          };
          paymentIntents.set(intent.id, intent);
          if (behaviour === 'succeed') {
            intent.status = 'succeeded';
            intent.amount_received = intent.amount;
            return intentJson(intent);
          }
          if (behaviour === 'processing') {
            intent.status = 'processing';
            return intentJson(intent);
          }
          const error =
            behaviour === 'decline'
              ? {
                  type: 'card_error',
                  code: 'card_declined',
                  decline_code: 'insufficient_funds',
                  message: 'Your card has insufficient funds.',
                }
              : {
                  type: 'card_error',
                  code: 'authentication_required',
                  decline_code: 'authentication_required',
                  message: 'Your card was declined. This transaction requires authentication.',
                };
          intent.last_payment_error = error;
          intent.status = behaviour === 'decline' ? 'requires_payment_method' : 'requires_action';
          throw new ApiError(402, {
            error: { ...error, payment_intent: intentJson(intent), doc_url: 'https://stripe.com/docs/error-codes/card-declined' },
          });
        },
      },
      {
        method: 'GET',
        pattern: /^\/v1\/payment_intents\/([^/]+)$/,
        handle: (m) => {
          const intent = paymentIntents.get(m[1]!);
          if (!intent) throw notFound('payment_intent', m[1]!);
          return intentJson(intent);
        },
      },
    ];

  function customerOf(id: string) {
    const customer = customers.get(id);
    if (!customer) throw notFound('customer', id);
    return customer;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const parsedUrl = new URL(req.url ?? '/', 'http://fake');
    const path = parsedUrl.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && path.startsWith('/pay/')) {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>Fake Stripe Checkout</title><p>Fake hosted checkout.</p>');
      return;
    }
    const recorded: FakeStripeRequest = {
      method,
      path,
      query: Object.fromEntries(parsedUrl.searchParams),
      body: method === 'POST' ? parseStripeForm(text) : {},
      idempotencyKey: (req.headers['idempotency-key'] as string | undefined) ?? null,
      authorization: (req.headers.authorization as string | undefined) ?? null,
      at: opts.clock?.() ?? new Date(),
    };
    requests.push(recorded);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': newId('req'), 'stripe-version': API_VERSION });
      res.end(JSON.stringify(body));
    };
    if (!recorded.authorization?.startsWith('Bearer sk_')) {
      send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' } });
      return;
    }
    const step = scripts.get(`${method} ${path}`)?.shift();
    if (step === 500 || step === 503) {
      send(step, { error: { type: 'api_error', message: 'An unexpected error occurred (fake).' } });
      return;
    }
    const fingerprint = `${method} ${path} ${text}`;
    const key = recorded.idempotencyKey ? `${method} ${path} ${recorded.idempotencyKey}` : null;
    if (key && method === 'POST') {
      const seen = idempotent.get(key);
      if (seen) {
        if (seen.fingerprint !== fingerprint) {
          send(400, {
            error: {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${recorded.idempotencyKey}' if you meant to execute a different request.`,
            },
          });
          return;
        }
        res.setHeader('idempotent-replayed', 'true');
        send(seen.status, seen.body);
        return;
      }
    }
    const route = routes.find((r) => r.method === method && r.pattern.test(path));
    let status = 200;
    let body: unknown;
    try {
      if (!route)
        throw new ApiError(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` } });
      body = await route.handle(path.match(route.pattern)!, recorded);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      status = e.status;
      body = e.body;
    }
    // Stripe saves the result of a request that began executing, errors included (5xx aside).
    if (key && method === 'POST' && status < 500) idempotent.set(key, { fingerprint, status, body });
    if (step === 'lose') {
      res.socket?.destroy();
      return;
    }
    send(status, body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent)
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { type: 'api_error', message: String(err) } }));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // One charge per payment intent, and at most one dispute per charge, as Stripe has.
  const charges = new Map<string, string>();
  const disputes = new Map<string, string>();
  const chargeOf = (intentId: string) => {
    let charge = charges.get(intentId);
    if (!charge) {
      charge = newId('ch');
      charges.set(intentId, charge);
    }
    return charge;
  };
  const event = (type: string, object: Record<string, unknown>): StripeEvent => ({
    id: newId('evt'),
    object: 'event',
    api_version: API_VERSION,
    created: now(),
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object: JSON.parse(JSON.stringify(object)) as Record<string, unknown> },
  });
  const sessionOf = (id: string) => {
    const session = sessions.get(id);
    if (!session) throw new Error(`fake stripe: no session ${id}`);
    return session;
  };

  return {
    url,
    requests,
    customers,
    sessions,
    paymentIntents,
    setCardBehaviour(behaviour, count) {
      if (count === undefined) {
        cardDefault = behaviour;
        cardQueue.length = 0;
      } else {
        for (let i = 0; i < count; i++) cardQueue.push(behaviour);
      }
    },
    script(route, steps) {
      scripts.set(route, [...steps]);
    },
    setBeforeSessionResponse(hook) {
      beforeSessionResponse = hook;
    },
    pay(sessionId, payOpts = {}) {
      const session = sessionOf(sessionId);
      if (session.status !== 'open') throw new Error(`fake stripe: session ${sessionId} is ${session.status}`);
      let customer = session.customer;
      if (!customer) {
        customer = newId('cus');
        customers.set(customer, { id: customer, email: session.customer_email, metadata: {}, payment_methods: [] });
        session.customer = customer;
      }
      const paymentMethod = newId('pm');
      // setup_future_usage: the card is attached to the customer for later off-session use.
      if (session.payment_intent_data.setup_future_usage === 'off_session') customers.get(customer)!.payment_methods.push(paymentMethod);
      const intent: FakePaymentIntent = {
        id: newId('pi'),
        object: 'payment_intent',
        amount: session.amount_total,
        amount_received: payOpts.async ? 0 : session.amount_total,
        currency: session.currency,
        customer,
        payment_method: paymentMethod,
        status: payOpts.async ? 'processing' : 'succeeded',
        metadata: (session.payment_intent_data.metadata ?? {}) as Record<string, string>,
        description: (session.payment_intent_data.description as string | undefined) ?? null,
        off_session: false,
        last_payment_error: null,
        created: now(),
        livemode: false,
      };
      paymentIntents.set(intent.id, intent);
      session.payment_intent = intent.id;
      session.status = 'complete';
      session.payment_status = payOpts.async ? 'unpaid' : 'paid';
      session.url = null;
      return session;
    },
    events: {
      completed: (id) => event('checkout.session.completed', sessionJson(sessionOf(id))),
      asyncSucceeded(id) {
        const session = sessionOf(id);
        session.payment_status = 'paid';
        const intent = session.payment_intent ? paymentIntents.get(session.payment_intent) : undefined;
        if (intent) Object.assign(intent, { status: 'succeeded', amount_received: intent.amount });
        return event('checkout.session.async_payment_succeeded', sessionJson(session));
      },
      asyncFailed(id) {
        const session = sessionOf(id);
        const intent = session.payment_intent ? paymentIntents.get(session.payment_intent) : undefined;
        if (intent) Object.assign(intent, { status: 'requires_payment_method' });
        return event('checkout.session.async_payment_failed', sessionJson(session));
      },
      expired(id) {
        const session = sessionOf(id);
        if (session.status === 'open') Object.assign(session, { status: 'expired', url: null });
        return event('checkout.session.expired', sessionJson(session));
      },
      paymentIntentSucceeded(id) {
        const intent = paymentIntents.get(id);
        if (!intent) throw new Error(`fake stripe: no payment intent ${id}`);
        return event('payment_intent.succeeded', intentJson(intent));
      },
      paymentIntentFailed(id) {
        const intent = paymentIntents.get(id);
        if (!intent) throw new Error(`fake stripe: no payment intent ${id}`);
        return event('payment_intent.payment_failed', intentJson(intent));
      },
      refunded(id, amountRefunded) {
        const intent = paymentIntents.get(id);
        if (!intent) throw new Error(`fake stripe: no payment intent ${id}`);
        return event('charge.refunded', {
          id: chargeOf(id),
          object: 'charge',
          amount: intent.amount_received,
          amount_captured: intent.amount_received,
          amount_refunded: amountRefunded,
          refunded: amountRefunded >= intent.amount_received,
          currency: intent.currency,
          customer: intent.customer,
          payment_intent: id,
          // A charge's metadata is its own, not the intent's: events find the top-up by the intent.
          metadata: {},
          status: 'succeeded',
          paid: true,
          livemode: false,
          created: now(),
        });
      },
      disputeFunds(id, funds, amount) {
        const intent = paymentIntents.get(id);
        if (!intent) throw new Error(`fake stripe: no payment intent ${id}`);
        let dispute = disputes.get(id);
        if (!dispute) {
          dispute = newId('dp');
          disputes.set(id, dispute);
        }
        return event(`charge.dispute.funds_${funds}`, {
          id: dispute,
          object: 'dispute',
          amount: amount ?? intent.amount_received,
          currency: intent.currency,
          charge: chargeOf(id),
          payment_intent: id,
          reason: 'fraudulent',
          status: funds === 'withdrawn' ? 'needs_response' : 'won',
          metadata: {},
          livemode: false,
          created: now(),
        });
      },
      custom: (type, object) => event(type, object),
    },
    count(route) {
      return requests.filter((r) => `${r.method} ${r.path}` === route).length;
    },
    reset() {
      requests.length = 0;
      cardQueue.length = 0;
      cardDefault = 'succeed';
      scripts.clear();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function customerJson(c: { id: string; email: string | null; metadata: Record<string, string> }) {
  return { id: c.id, object: 'customer', email: c.email, metadata: c.metadata, livemode: false, created: Math.floor(Date.now() / 1000) };
}

function paymentMethodJson(id: string, customer: string) {
  return {
    id,
    object: 'payment_method',
    type: 'card',
    customer,
    card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2034 },
    livemode: false,
  };
}

function sessionJson(s: FakeSession): Record<string, unknown> {
  const { payment_intent_data: _omit, ...rest } = s;
  return { ...rest };
}

function intentJson(i: FakePaymentIntent): Record<string, unknown> {
  return { ...i };
}

function invalid(message: string, param: string): ApiError {
  return new ApiError(400, { error: { type: 'invalid_request_error', message, param } });
}

function notFound(kind: string, id: string): ApiError {
  return new ApiError(404, {
    error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${kind}: '${id}'`, param: 'id' },
  });
}
