// The HTTP server: express with the two doors (/graphql through graphql-yoga and graphql-ws,
// /v1 through compat), health probes, request ids, and graceful shutdown.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, maxHeaderSize, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type AddressInfo, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { parse as parseBytes } from 'bytes';
import cors from 'cors';
import express from 'express';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { useDisableIntrospection } from '@graphql-yoga/plugin-disable-introspection';
import { createYoga, type GraphiQLOptions, isAsyncIterable, type Plugin, processRegularResult, useErrorHandler } from 'graphql-yoga';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import {
  type DocumentNode,
  type ExecutionArgs,
  getOperationAST,
  GraphQLError,
  type GraphQLFormattedError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  validate as validateGraphQL,
  valueFromASTUntyped,
  visit,
} from 'graphql';
import { createCompatRouter } from '../compat/router.js';
import type { CompatDoor } from '../compat/door.js';
import { buildOpenApiDocument } from '../compat/openapi.js';
import { sunsetOf } from './domain/catalog/catalog.js';
import { rateLimitHeadersOn, sendRateLimitHeaders } from './web/rate-limit-headers.js';
import { admittedOn, settledOn, whenSettled } from './web/settled-usage.js';
import { sendError } from '../compat/errors.js';
import type { Services } from './container.js';
import { ClientDisconnected, DomainError, requestTooLarge } from './domain/errors.js';
import { jsonNestsWithin, TOO_DEEP_MESSAGE } from './json-depth.js';
import { createContext, type GraphQLContext } from './graphql/context.js';
import { useDocumentRules } from './graphql/document-rules.js';
import { httpError, isUnexpectedError, publicErrorBody, toPublicGraphQLError, withoutSuggestions } from './graphql/errors.js';
import { schema } from './graphql/schema.js';
import { createPaymentsRouter } from './web/payments-router.js';
import { createDashboardRouter } from './web/dashboard-router.js';
import { serverClassesFor } from './web/express-classes.js';
import { clearedSessionCookie, isSecure, refusedCookieOrigin, sessionCookie, sessionTokenOf } from './web/session-cookie.js';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export interface RunningServer {
  server: Server;
  url: string;
  /** Stops accepting, lets in-flight requests and streams finish (up to the configured timeout), closes services' sockets. */
  shutdown(): Promise<void>;
}

const swaggerUiAssets = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tollgate /v1 reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, tryItOutEnabled: false });
</script>
</body>
</html>
`;

/**
 * The headers of a page the server renders itself (GraphiQL, the /v1 reference): never framed by
 * another site (GraphiQL runs mutations as whoever is signed in), never sniffed as another type.
 * Their scripts are inline, so no script-src here; the dashboard's own CSP is stricter.
 */
function pageHeaders(res: express.Response): express.Response {
  res.setHeader('Content-Security-Policy', "frame-ancestors 'none'; base-uri 'self'; form-action 'self'");
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
  return res;
}

/** Which door a path came in through, a label of the access line and the metrics. */
function doorOf(path: string): 'v1' | 'graphql' | 'ops' | 'web' {
  if (path.startsWith('/v1/') || path === '/v1') return 'v1';
  if (path === '/graphql') return 'graphql';
  if (path === '/healthz' || path === '/readyz' || path === '/metrics' || path === '/openapi.json' || path === '/docs') return 'ops';
  return 'web';
}

const isLoopbackAddress = (address: string | undefined) =>
  address === '::1' || address === '::ffff:127.0.0.1' || /^(::ffff:)?127\./.test(address ?? '');

/** A Host header naming this machine (localhost, or an IP address), with or without a port; none (HTTP/1.0) too. */
function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return true;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === 'localhost' || name.endsWith('.localhost') || isIP(name.replace(/^\[|\]$/g, '')) !== 0;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The path of a request with its mount (/v1/…, /graphql), without the query string. */
const fullPath = (req: express.Request) => req.originalUrl.split('?', 1)[0]!;

/**
 * CORS for the API doors: only the origins of `server.cors_origins` (none by default) get the
 * headers and their preflights answered; "*" allows any origin, never with credentials.
 */
function corsFor(origins: string[]) {
  const any = origins.includes('*');
  const listed = new Set(origins);
  const middleware = cors({
    // A function: an origin not listed gets no CORS header at all, its preflight included (a
    // list would still answer the preflight with the credentials and methods headers).
    origin: any ? '*' : (origin, allow) => allow(null, origin !== undefined && listed.has(origin) ? origin : false),
    credentials: !any && origins.length > 0,
    methods: ['GET', 'POST', 'OPTIONS'],
    // No list of allowed request headers: a preflight's requested headers are allowed, as the
    // origin is. The official OpenAI SDKs send their own on every call (X-Stainless-*,
    // OpenAI-Organization, OpenAI-Project), and a fixed list refused those calls in the browser.
    exposedHeaders: [
      'X-Request-Id',
      'Retry-After',
      'Deprecation',
      'Sunset',
      'X-RateLimit-Limit-RPM',
      'X-RateLimit-Limit-TPM',
      'X-RateLimit-Remaining-RPM',
      'X-RateLimit-Remaining-TPM',
      'X-RateLimit-Reset-RPM',
      'X-RateLimit-Reset-TPM',
    ],
    maxAge: 600,
  });
  if (any || origins.length === 0) return middleware;
  // The answer depends on the Origin whether or not it is listed: a cache must not give one's to another.
  return (req: express.Request, res: express.Response, next: (err?: unknown) => void) => {
    res.vary('Origin');
    middleware(req, res, next);
  };
}

/** What the /v1 door gets from the server: contexts, the early RPM check, the body limit, model notices. */
function compatDoor(services: Services, inFlight: Set<AbortController>): CompatDoor {
  return {
    context(req, res) {
      // Aborted when the client goes away before the response is finished, or by a shutdown that
      // ran out of time (`inFlight`).
      const controller = new AbortController();
      inFlight.add(controller);
      res.on('close', () => {
        inFlight.delete(controller);
        if (!res.writableFinished) controller.abort(new ClientDisconnected());
      });
      return createContext(services, {
        authorization: req.headers.authorization ?? null,
        requestId: req.requestId,
        path: fullPath(req),
        signal: controller.signal,
        onRateLimit: rateLimitHeadersOn(res),
        onAdmitted: admittedOn(res),
        onSettled: settledOn(res),
      });
    },
    precheck: async (ctx) => services.inference.precheck(await ctx.caller()),
    bodyLimit: services.config.server.body_limit,
    stalledClientMs: services.config.server.stalled_client_ms,
    stalled(req) {
      services.logger.warn(
        { reqId: req.requestId, path: fullPath(req), stalledMs: services.config.server.stalled_client_ms },
        'stream client took nothing of the stream for server.stalled_client_ms; disconnected',
      );
    },
    model(id) {
      const m = services.catalog.find(id);
      if (!m) return undefined;
      return {
        deprecated: m.status === 'deprecated',
        sunset: sunsetOf(m),
        functionCalling: m.category === 'chat' ? m.capabilities.function_calling : null,
      };
    },
  };
}

/**
 * A request's signal, aborted with ClientDisconnected when the request's is (its client went
 * away): the reason says it was the client, so it is no server error to log.
 */
function leftWith(signal: AbortSignal): AbortSignal {
  const left = new AbortController();
  if (signal.aborted) left.abort(new ClientDisconnected());
  else signal.addEventListener('abort', () => left.abort(new ClientDisconnected()), { once: true });
  return left.signal;
}

/** The access line's status of a request whose client left before its answer was complete. */
const CLIENT_CLOSED = 499;

export function createApp(services: Services) {
  const { config, logger } = services;
  const bodyLimit = parseBytes(config.server.body_limit)!;
  const state = { ready: false, shuttingDown: false };
  // The /v1 calls in progress, each by its abort: a shutdown out of time ends them with an answer.
  const inFlight = new Set<AbortController>();
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Whose X-Forwarded-For names the client (server.trust_proxy; none by default): req.ip is the
  // client's address sign-in is throttled by, and /metrics' loopback check. Behind a proxy every
  // client would otherwise be the proxy, and one client's failed sign-ins would lock out all.
  app.set('trust proxy', config.server.trust_proxy);
  // Whether a request's connection comes from a proxy server.trust_proxy names (its X-Forwarded-*
  // headers are that proxy's word, not the client's): express's own test of the address.
  const trustsProxy = app.get('trust proxy fn') as (address: string, hop: number) => boolean;
  const fromTrustedProxy = (req: IncomingMessage) => {
    const address = req.socket?.remoteAddress;
    return address !== undefined && trustsProxy(address, 0);
  };
  sendRateLimitHeaders(app);

  // The access line's fields are fixed and hold no key or token (the request id is checked against
  // REQUEST_ID, the path carries no credentials): logged without the redaction pass, which
  // otherwise clones each line's object and doubles what logging a request costs.
  const accessLog = logger.child({}, { redact: { paths: [] } });
  const logged = (req: express.Request, res: express.Response) => {
    if (state.shuttingDown) res.setHeader('Connection', 'close');
    const given = req.headers['x-request-id'];
    req.requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('x-request-id', req.requestId);
    const started = process.hrtime.bigint();
    // The access line and the request metrics: door, route (the pattern, so labels stay few),
    // status, duration, and the model and tokens of a metered call; never keys or bodies. A client
    // that closed the connection before the answer was complete: status 499 (as nginx logs it).
    res.on('close', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const path = fullPath(req);
      const door = doorOf(path);
      const route = req.route ? `${req.baseUrl}${req.route.path as string}` : req.baseUrl || 'unmatched';
      const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED;
      services.metrics.observeHttp(door, route, status, ms / 1000);
      // A client that left before its call was settled (a 499): the line waits for the settlement,
      // so that it carries what the call was billed at.
      whenSettled(res, (settled) => {
        const line: Record<string, unknown> = { reqId: req.requestId, method: req.method, door, route, path, status, ms };
        if (settled) {
          line.model = settled.model;
          line.prompt_tokens = settled.promptTokens;
          line.completion_tokens = settled.completionTokens;
        }
        accessLog.info(line, 'request');
      });
    });
  };
  app.use((req, res, next) => {
    logged(req, res);
    next();
  });

  // /v1, most of the traffic, is served by `handle` below, before express's stack: CORS, the
  // declared-length check, then the compat router. A body the client declares over the limit is
  // refused before authentication and unread; one sent without a length is cut off at the limit
  // while it is read (in compat and below).
  const apiCors = corsFor(config.server.cors_origins);
  const tooLarge = () => requestTooLarge(config.server.body_limit);
  const onUnexpected = (req: express.Request, err: unknown) =>
    logger.error({ reqId: req.requestId, path: fullPath(req), err }, 'unexpected error');
  const compat = createCompatRouter(compatDoor(services, inFlight), { onUnexpected });
  const v1 = (req: express.Request, res: express.Response) =>
    apiCors(req, res, (err?: unknown) => {
      if (err) return sendError(res, err, (e) => onUnexpected(req, e));
      if (Number(req.headers['content-length'] ?? 0) > bodyLimit) return sendError(res.setHeader('Connection', 'close'), tooLarge());
      compat(req, res);
    });

  // The /v1 contract (OpenAPI 3.1, generated from the schemas compat validates with) and a
  // reference page rendered from local assets (swagger-ui-dist; nothing comes from a CDN).
  let openApi: string | undefined;
  app.get('/openapi.json', (_req, res) => {
    openApi ??= JSON.stringify(buildOpenApiDocument(config.publicUrl));
    res.type('application/json').setHeader('Cache-Control', 'public, max-age=300').send(openApi);
  });
  app.use('/docs/assets', express.static(swaggerUiAssets, { index: false, maxAge: '1d' }));
  app.get('/docs', (_req, res) => {
    pageHeaders(res).type('html').send(DOCS_PAGE);
  });

  // Metrics: with METRICS_TOKEN set, for its Bearer only; without, for loopback clients only.
  app.get('/metrics', async (req, res) => {
    const token = config.metricsToken;
    const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    // Without a token: this machine only, by the connection's own address (which no header can
    // forge) and, behind a trusted proxy, by the client's it names.
    // The Host too: a page of another site whose name resolves to 127.0.0.1 (DNS rebinding) would
    // reach a loopback-only /metrics from this machine's browser, under its own name.
    const allowed = token
      ? given !== undefined && safeEqual(given, token)
      : isLoopbackAddress(req.socket.remoteAddress) && isLoopbackAddress(req.ip) && isLoopbackHost(req.headers.host);
    if (!allowed) {
      res
        .status(token ? 401 : 403)
        .type('text/plain')
        .send(
          token
            ? 'metrics: send Authorization: Bearer $METRICS_TOKEN\n'
            : 'metrics: served to loopback clients only; set METRICS_TOKEN to scrape from elsewhere\n',
        );
      return;
    }
    res.type(services.metrics.registry.contentType).send(await services.metrics.registry.metrics());
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    // Ready once listening and every eager in-process model has loaded (or failed to, which is
    // logged), while the database answers (without it every metered or wallet call fails).
    // The rate limiter's store (Redis) out of reach: with rate_limits.fail_closed every metered
    // call is refused, so the instance is not ready; fail-open it serves without limits, which
    // the body says (a load balancer checking the status keeps it, an operator sees why).
    const limiter = (await services.rateLimiter?.health()) ?? null;
    const limiterRefuses = limiter !== null && !limiter.reachable && limiter.failClosed;
    const database = state.ready && !state.shuttingDown ? await databaseAnswers(services) : true;
    const ready = state.ready && !state.shuttingDown && services.engines.ready && database && !limiterRefuses;
    const status = ready
      ? 'ready'
      : state.shuttingDown
        ? 'shutting_down'
        : !database
          ? 'database_unavailable'
          : limiterRefuses
            ? 'rate_limiter_unavailable'
            : services.engines.ready
              ? 'starting'
              : 'loading_models';
    const rateLimits =
      limiter === null
        ? { backend: 'none' }
        : {
            backend: limiter.backend,
            reachable: limiter.reachable,
            ...(limiter.reachable
              ? {}
              : { calls: limiter.failClosed ? 'refused (fail_closed)' : 'served without rate limits (fail-open)' }),
          };
    // The upstreams' circuit breakers are shown, not judged: an ejected base URL is the upstream's trouble, not this instance's.
    // In-process models: where each runs (backend cpu, cuda or vulkan; layers on the GPU), once loaded.
    res
      .status(ready ? 200 : 503)
      .json({ status, rate_limits: rateLimits, upstreams: services.engines.upstreamHealth(), models: services.engines.placements() });
  });

  app.use('/graphql', apiCors);
  // Checkout pages and the processor's webhooks (the webhook reads its body raw, for the signature).
  app.use(createPaymentsRouter({ payments: services.payments, logger, bodyLimit: config.server.body_limit }));
  // The customer dashboard (issue 15): the web app, served from dist/dashboard.
  app.use(createDashboardRouter({ publicUrl: () => config.publicUrl }));

  // With introspection off, graphql-js's "Did you mean …?" would name the schema's fields, types
  // and enum values all the same: hidden from every error a client gets (the armor hides only some).
  const forClient = config.graphql.introspection ? (e: GraphQLError) => e : withoutSuggestions;
  const plugins: Plugin[] = [
    EnvelopArmorPlugin({
      maxDepth: { n: config.graphql.max_depth },
      costLimit: { maxCost: config.graphql.max_cost },
      maxAliases: { n: config.graphql.max_aliases },
      maxTokens: { n: config.graphql.max_tokens },
      maxDirectives: { n: config.graphql.max_directives },
      blockFieldSuggestion: { enabled: !config.graphql.introspection },
    }) as Plugin,
    useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf', 'apollo-require-preflight'] }),
    pageSizesCosted(config.graphql.max_cost, (e) => forClient(toPublicGraphQLError(armorLimit(e)))),
    // One mutation field per document; an operation that cannot be picked, said with the names the document has.
    useDocumentRules(),
    // Validation errors (and the armor's limits) in the public shape, with their 400.
    {
      onValidate:
        () =>
        ({ result, setResult }) => {
          if (result.length > 0) setResult(result.map((e) => forClient(toPublicGraphQLError(armorLimit(e)))));
        },
    } as Plugin,
    // A subscription asked for with an Accept no stream can be sent in (application/json, say):
    // Yoga's answer is a bare 406; this one says what to ask for, in the error body, and ends the
    // subscription it started. Last of the result processors' hooks: it acts only when none took it.
    {
      onResultProcess: ({ result, resultProcessor, setResult, setResultProcessor }) => {
        if (resultProcessor || !isAsyncIterable(result)) return;
        void result[Symbol.asyncIterator]().return?.();
        const refusal = new GraphQLError(
          'A subscription is a stream: ask for it with Accept: text/event-stream (GraphQL over SSE), or run it over a WebSocket (graphql-ws).',
          { extensions: { http: { status: 406 } } },
        );
        setResult({ errors: [toPublicGraphQLError(refusal)] });
        setResultProcessor(processRegularResult, 'application/json');
      },
    } as Plugin,
    // Unexpected errors are logged here, where the request's id and path are known (they are
    // masked for the client in maskError below); client mistakes are not logged.
    useErrorHandler(({ errors, context }) => {
      // Execution errors come with the execution's arguments, the others with the context itself.
      const ctx = ((context as { contextValue?: unknown }).contextValue ?? context) as Partial<GraphQLContext>;
      for (const err of errors) {
        if (isUnexpectedError(err))
          logger.error(
            { reqId: ctx.requestId, path: ctx.path, err: (err as GraphQLError).originalError ?? err },
            'unexpected GraphQL error',
          );
      }
    }) as Plugin,
  ];
  if (!config.graphql.introspection) plugins.push(useDisableIntrospection());

  // biome-ignore lint/complexity/noBannedTypes: yoga's server context is empty here; `{}` is what its Express typing accepts.
  const yoga = createYoga<{}, GraphQLContext>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    graphiql: GRAPHIQL_OPTIONS,
    // GraphiQL's scripts, styles and workers inlined from the package, not a CDN: it works offline.
    renderGraphiQL: localGraphiQL,
    batching: false,
    logging: false,
    plugins,
    // Cross-origin access is decided by `server.cors_origins` (above), not by Yoga.
    cors: false,
    maskedErrors: {
      maskError: (error) => namedForGraphQL(forClient(toPublicGraphQLError(armorLimit(error)))),
    },
    context: async (initial) => {
      // Over HTTP the initial context has the fetch Request and express's req; over WebSocket,
      // what onSubscribe passes below (the key in connectionParams.authorization).
      const extra = initial as unknown as { req?: express.Request; res?: express.Response; connectionParams?: Record<string, unknown> };
      const request = initial.request as Request | undefined;
      const req = extra.req;
      const res = extra.res;
      const connectionParams = extra.connectionParams;
      const authorization =
        (connectionParams ? authorizationParam(connectionParams) : null) ?? request?.headers.get('authorization') ?? null;
      // A signed-in person's session cookie, believed from the server's own pages only (Origin checked).
      const viaProxy = req ? fromTrustedProxy(req) : false;
      const token = req?.headers ? sessionTokenOf(req.headers, config, viaProxy) : null;
      const session = token && !authorization ? await services.auth.sessionOf(token) : null;
      const secure = isSecure(config, Boolean(req?.secure));
      return createContext(services, {
        authorization,
        session,
        refusedCookieFrom: req?.headers && !token ? refusedCookieOrigin(req.headers, config, viaProxy) : null,
        endedSessionCookie: Boolean(token) && !authorization && !session,
        cookies:
          res && !connectionParams
            ? {
                set: (value, expiresAt) => void res.append('Set-Cookie', sessionCookie(value, expiresAt, secure)),
                clear: () => void res.append('Set-Cookie', clearedSessionCookie(secure)),
                clientAddress: req?.ip ?? null,
                userAgent: typeof req?.headers['user-agent'] === 'string' ? req.headers['user-agent'] : null,
              }
            : null,
        requestId: req?.requestId ?? (extra as { requestId?: string }).requestId ?? randomUUID(),
        path: connectionParams ? '/graphql (WebSocket)' : '/graphql',
        // Over WebSocket, the operation's own (onSubscribe below): aborted when the client
        // completes the operation or the socket closes, as an HTTP request's is when its client goes.
        signal: request?.signal ? leftWith(request.signal) : ((extra as { signal?: AbortSignal }).signal ?? new AbortController().signal),
        // Over HTTP, on express's response: set when Yoga writes the head (a 429's too).
        onRateLimit: res && !connectionParams ? rateLimitHeadersOn(res) : undefined,
        onAdmitted: res && !connectionParams ? admittedOn(res) : undefined,
        onSettled: res && !connectionParams ? settledOn(res) : undefined,
      });
    },
  });
  // The body limit of every door, before authentication and before any parsing.
  const readBody = express.raw({ limit: bodyLimit, type: () => true });
  const refuseGraphQL = (res: express.Response, error: DomainError) =>
    res.status(error.status).json({ errors: [publicErrorBody(toPublicGraphQLError(error))] });
  app.use('/graphql', (req, res, next) => {
    if (req.method !== 'POST') return next();
    if (Number(req.headers['content-length'] ?? 0) > bodyLimit) return refuseGraphQL(res.setHeader('Connection', 'close'), tooLarge());
    readBody(req, res, (err?: unknown) => {
      if (!err) {
        // No body at all (neither a length nor chunked): nothing read, for Yoga to refuse.
        const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        if (!jsonNestsWithin(bytes)) return refuseGraphQL(res, new DomainError('invalid_request', TOO_DEEP_MESSAGE));
        req.body = asBody(bytes);
        return next();
      }
      const e = err as { type?: string };
      refuseGraphQL(
        res,
        e.type === 'entity.too.large'
          ? tooLarge()
          : new DomainError('invalid_request', 'The request body could not be read (check Content-Encoding and charset).'),
      );
    });
  });
  // GraphiQL (GET with Accept: text/html, as Yoga tells it): the same page, served compressed and
  // with a validator here, so that 9 MB inline are not sent whole to every browser (or flood).
  app.get('/graphql', (req, res, next) => {
    if (!req.headers.accept?.includes('text/html')) return next();
    graphiqlServed().then(({ text, gzip, etag }) => {
      pageHeaders(res);
      res.setHeader('Vary', 'Accept, Accept-Encoding');
      res.setHeader('Cache-Control', 'no-cache');
      res.setHeader('ETag', etag);
      if (req.headers['if-none-match'] === etag) return void res.status(304).end();
      res.type('html');
      if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) res.setHeader('Content-Encoding', 'gzip').send(gzip);
      else res.send(text);
    }, next);
  });
  app.use('/graphql', yoga);

  app.use((req, res) => {
    sendError(res, new DomainError('not_found', `No route for ${req.method} ${req.path}.`));
  });
  // What express's own middleware passes on (a static file missing or refused, a path that does
  // not decode) gets the error body as every other refusal does, never express's HTML page with a
  // stack trace and the server's paths; anything else is an internal error, logged here.
  app.use((err: unknown, req: express.Request, res: express.Response, next: express.NextFunction) => {
    if (res.headersSent) return next(err);
    const e = err as { status?: unknown; statusCode?: unknown; type?: unknown };
    const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
    // A body over the limit that a route read itself (the Stripe webhook's express.raw): the 413
    // every door gives; the rest of it is not read, so the connection closes.
    if (e?.type === 'entity.too.large' || status === 413) return sendError(res.setHeader('Connection', 'close'), tooLarge());
    if (status === 403 || status === 404) return sendError(res, new DomainError('not_found', `No such file: ${req.path.slice(0, 200)}.`));
    if (status >= 400 && status < 500)
      return sendError(res, new DomainError('invalid_request', 'The request could not be read (its path or headers).'));
    logger.error({ err, path: req.path }, 'unexpected error');
    sendError(res, new Error('internal'));
  });

  /**
   * The server's request listener. /v1, most of the traffic, goes straight to its door with what
   * express's stack would have given it (express's request and response, the access line, `/v1`
   * as the mount), without walking express's router to the one layer every /v1 request ends in
   * (about 4 KB of a call's heap, measured). Everything else goes through express.
   */
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    if (!isV1(url)) return void app(req, res);
    // Made by the server as instances of `serverOptions`' classes: express's request and response already.
    const r = req as express.Request;
    const s = res as express.Response;
    r.res = s;
    s.req = r;
    s.locals = Object.create(null);
    r.originalUrl = url;
    r.baseUrl = url.slice(0, 3);
    r.url = url.length === 3 || url[3] === '?' ? `/${url.slice(3)}` : url.slice(3);
    logged(r, s);
    v1(r, s);
  };

  // Requests and responses made with this app's express prototypes (./web/express-classes.ts).
  const serverOptions = serverClassesFor(app);

  return { app, handle, serverOptions, yoga, state, inFlight, forClient };
}

/** An error of an operation over WebSocket, as a response body over HTTP lists it. */
function publicError(error: GraphQLError): GraphQLFormattedError {
  const { message, extensions } = publicErrorBody(namedForGraphQL(error));
  return { ...error.toJSON(), message, extensions: { ...extensions } };
}

/**
 * A domain error's parameter as GraphQL names it: the domain speaks /v1's names (`max_tokens`,
 * `account_id`, a page's `limit`), GraphQL's arguments and input fields are camelCase (`maxTokens`,
 * `accountId`) and a page's size is `first`. The parameter and its name in the message change:
 * quoted, or a snake_case name as a word of its own (`expires_at must be…`, `max_tokens asks for…`),
 * which no prose reads as anything else; a one-word name (`limit`) only quoted. A variable's own
 * name (a coercion error) is left as the client wrote it.
 */
function namedForGraphQL(error: GraphQLError): GraphQLError {
  const param = error.extensions?.param;
  if (typeof param !== 'string' || error.message.startsWith('Variable "$')) return error;
  const named = param === 'limit' ? 'first' : param.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  if (named === param) return error;
  const message = param.includes('_')
    ? error.message.replace(new RegExp(`(?<![\\w$])${param.replace(/[^\w]/g, '\\$&')}(?!\\w)`, 'g'), named)
    : error.message.split(`'${param}'`).join(`'${named}'`);
  return new GraphQLError(message, {
    nodes: error.nodes,
    path: error.path,
    extensions: { ...error.extensions, param: named },
  });
}

/**
 * The API key of a WebSocket's connectionParams: `authorization` in any case, at the top or under
 * `headers` (as clients written for HTTP send it).
 */
function authorizationParam(params: Record<string, unknown>): string | null {
  const pick = (o: unknown): string | null => {
    if (!o || typeof o !== 'object') return null;
    for (const [name, value] of Object.entries(o)) if (name.toLowerCase() === 'authorization' && typeof value === 'string') return value;
    return null;
  };
  return pick(params) ?? pick(params.headers);
}

/**
 * graphql-armor words its limits as syntax errors ("Syntax Error: Query Cost limit of 5000
 * exceeded, found 8435."), and graphql-js its bound on checking overlapping fields ("Validation aborted."):
 * said as what they are, with what to change. Anything else passes as is.
 */
function armorLimit<E>(error: E): E | GraphQLError {
  if (!(error instanceof GraphQLError)) return error;
  // graphql-js's own bound on the work of checking that repeated fields agree, said as bare "Validation aborted.".
  if (error.message === 'Validation aborted.')
    return new GraphQLError(
      'The query is too large: it repeats or overlaps too many fields to check that they agree. Select each field once, or split the query.',
      { nodes: error.nodes, extensions: error.extensions },
    );
  const m = /^Syntax Error: (Query Cost limit|Query depth limit|Aliases limit|Directives limit|Token limit)(.*)$/.exec(error.message);
  if (!m) return error;
  // Splitting a query makes it shorter, not shallower: the depth limit is met by nesting less.
  const hint =
    m[1] === 'Query Cost limit'
      ? ' Ask for fewer items per list (a `first`/`last` multiplies the cost of what it selects) or split the query; the limit is `graphql.max_cost`.'
      : m[1] === 'Query depth limit'
        ? ' Nest fewer levels: ask for what lies deeper in a query of its own (by the id the first one returns); the limit is `graphql.max_depth`.'
        : ' Split the query; the limits are under `graphql:` in the config.';
  return new GraphQLError(`The query is too large: ${m[1].toLowerCase()}${m[2]}${hint}`, {
    nodes: error.nodes,
    extensions: error.extensions,
  });
}

/**
 * The bytes read, as Yoga's node adapter takes an express body: it counts the body's own keys
 * (`Object.keys`) before using it, one string per byte for a Buffer (a second of the event loop
 * for a 1 MB body, anyone's, before any check). An async iterable with one key is read as the
 * request's body stream instead, as the raw request would have been.
 */
function asBody(bytes: Buffer): { length: number; [Symbol.asyncIterator](): AsyncGenerator<Buffer> } {
  return {
    length: bytes.length,
    async *[Symbol.asyncIterator]() {
      yield bytes;
    },
  };
}

/**
 * The armor's cost limit counts a page size given as a variable (`first: $n`) once, not knowing
 * it when the document is checked: 15 aliased pages of 1 000 passed where the same query with
 * literal sizes is refused. Before it runs, an operation with such an argument is costed again
 * with each `first`/`last` variable replaced by its value (its default when the request leaves it out). At execution, not validation: Yoga
 * keeps a document's validation result for every later request of the same text.
 */
function pageSizesCosted(maxCost: number, refused: (error: GraphQLError) => GraphQLError): Plugin {
  // Whether a document sizes a page with a variable, known once per document (Yoga reuses a
  // query text's parsed document): most operations have none, and pay one map lookup.
  const sizedByVariable = new WeakMap<DocumentNode, boolean>();
  const check = (args: ExecutionArgs, stop: (result: { errors: GraphQLError[] }) => void) => {
    let sizes = sizedByVariable.get(args.document);
    if (sizes === undefined) sizedByVariable.set(args.document, (sizes = withPageSizes(args.document, null) !== null));
    if (!sizes) return;
    // A variable the client left out runs with its default (`$n: Int = 1000`): costed so too.
    const sized = withPageSizes(args.document, withDefaults(args.document, args.operationName, args.variableValues ?? {}));
    if (!sized) return;
    let refusal: GraphQLError | undefined;
    const rule = costLimitRule({ maxCost, propagateOnRejection: false, onReject: [(_c, err) => void (refusal ??= err)] });
    validateGraphQL(args.schema, sized, [rule]);
    if (refusal) stop({ errors: [refused(refusal)] });
  };
  return {
    onExecute: ({ args, setResultAndStopExecution }) => check(args, setResultAndStopExecution),
    onSubscribe: ({ args, setResultAndStopExecution }) => check(args, setResultAndStopExecution),
  };
}

/**
 * The values the operation runs with: the variables sent, and for each one left out, the default
 * its definition gives (graphql-js does the same when it coerces them).
 */
function withDefaults(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>>,
): Readonly<Record<string, unknown>> {
  const operation = getOperationAST(document, operationName);
  let values = variables;
  for (const definition of operation?.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    if (!definition.defaultValue || Object.hasOwn(variables, name)) continue;
    if (values === variables) values = { ...variables };
    (values as Record<string, unknown>)[name] = valueFromASTUntyped(definition.defaultValue);
  }
  return values;
}

/**
 * The document with every `first`/`last` given as an integer variable written as its value; null
 * when it has none. Without variables (null): whether it has any such argument (the document as
 * it is, or null).
 */
function withPageSizes(document: DocumentNode, variables: Readonly<Record<string, unknown>> | null): DocumentNode | null {
  let changed = false;
  const sized = visit(document, {
    Argument(node) {
      if ((node.name.value !== 'first' && node.name.value !== 'last') || node.value.kind !== Kind.VARIABLE) return undefined;
      if (variables === null) {
        changed = true;
        return undefined;
      }
      const value = variables[node.value.name.value];
      if (typeof value !== 'number' || !Number.isInteger(value)) return undefined;
      changed = true;
      return { ...node, value: { kind: Kind.INT, value: String(value) } };
    },
  });
  return changed ? sized : null;
}

/** The operations (subscriptions, queries, mutations) one WebSocket may have open at once. */
export const MAX_OPERATIONS_PER_SOCKET = 100;

/** How long /readyz waits for the database's answer to `select 1`. */
const READY_DB_TIMEOUT_MS = 2_000;

/** How long /readyz reuses its last answer about the database. */
const READY_DB_CACHE_MS = 1_000;
let databaseCheck: { services: Services; at: number; answer: Promise<boolean>; query: Promise<unknown> | null } | undefined;

/**
 * Whether the database answers a trivial query within READY_DB_TIMEOUT_MS. One query at a time
 * per process, its answer reused for READY_DB_CACHE_MS: probes of many load balancers (or anyone,
 * /readyz needs no key) never pile queries up behind a slow database.
 */
function databaseAnswers(services: Services): Promise<boolean> {
  const now = Date.now();
  const last = databaseCheck?.services === services ? databaseCheck : undefined;
  if (last && (now - last.at < READY_DB_CACHE_MS || last.query !== null)) return last.answer;
  const query = services.billing.db.rows('select 1 as ok');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), READY_DB_TIMEOUT_MS);
  });
  const check = { services, at: now, answer: Promise.resolve(false), query: query as Promise<unknown> | null };
  // The query still running after the timeout keeps later probes on the same (false) answer.
  void query.then(
    () => (check.query = null),
    () => (check.query = null),
  );
  check.answer = Promise.race([query.then(() => true), timeout])
    .catch(() => false)
    .finally(() => clearTimeout(timer));
  databaseCheck = check;
  return check.answer;
}

/**
 * A request's client address as express's `req.ip` reads it (server.trust_proxy decides whose
 * X-Forwarded-For is believed), for a request express does not handle: a WebSocket upgrade.
 */
function clientAddress(app: express.Express, req: IncomingMessage): string {
  const asExpress = Object.assign(Object.create(app.request) as express.Request, {
    headers: req.headers,
    socket: req.socket,
    connection: req.socket,
  });
  return asExpress.ip ?? req.socket.remoteAddress ?? 'unknown';
}

/** Whether a request target is under the /v1 mount as express matches it (case-insensitive, a whole segment). */
function isV1(url: string): boolean {
  return (
    url.length >= 3 &&
    url.charCodeAt(0) === 47 && // '/'
    (url.charCodeAt(1) | 32) === 118 && // 'v' or 'V'
    url.charCodeAt(2) === 49 && // '1'
    (url.length === 3 || url.charCodeAt(3) === 47 || url.charCodeAt(3) === 63) // end, '/' or '?'
  );
}

/**
 * A request node:http refuses before the app sees it (headers over its limit, too slow, a malformed
 * request line): the status Node would send, with the error body every other refusal has, then the
 * socket closed. A socket that broke (a reset) is let go.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A response already under way on this connection (keep-alive, pipelining): nothing can be
  // written in the middle of it, as Node's own handler knows.
  const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || current?.headersSent) return void socket.destroy();
  let refusal: DomainError;
  if (err.code === 'HPE_HEADER_OVERFLOW')
    refusal = new DomainError('request_headers_too_large', `The request headers are larger than the limit of ${maxHeaderSize / 1024} KB.`);
  else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    refusal = new DomainError('request_timeout', 'The request was not received in time (its headers or its body were too slow).');
  else if (err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW')
    refusal = new DomainError('request_too_large', "The request body's chunk extensions are too large.");
  else refusal = new DomainError('invalid_request', 'The request could not be read as HTTP.');
  const { status, body } = httpError(refusal);
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${text}`,
  );
}

const GRAPHIQL_OPTIONS: GraphiQLOptions = { subscriptionsProtocol: 'WS', title: 'tollgate GraphiQL' };
let graphiqlPage: string | undefined;
/** The GraphiQL page (about 9 MB, every asset inline), rendered once: its options never change. */
const localGraphiQL = (opts?: GraphiQLOptions) => (graphiqlPage ??= renderGraphiQL(opts));
let graphiqlBodies: Promise<{ text: string; gzip: Buffer; etag: string }> | undefined;
/** The page, its gzip (made once, off the event loop) and its ETag. */
const graphiqlServed = () =>
  (graphiqlBodies ??= (async () => {
    const text = localGraphiQL(GRAPHIQL_OPTIONS);
    const gzip = await promisify(gzipCallback)(text);
    return { text, gzip, etag: `"${createHash('sha256').update(text).digest('base64url').slice(0, 22)}"` };
  })());

export async function startServer(services: Services, opts: { port?: number; host?: string } = {}): Promise<RunningServer> {
  const { config, logger } = services;
  const { app, handle, serverOptions, yoga, state, inFlight, forClient } = createApp(services);
  const { request_timeout_ms: requestTimeout, headers_timeout_ms: headersTimeout } = config.server;
  const server = createServer(
    {
      ...serverOptions,
      // A client that sends its request slowly (a byte every few seconds) holds a connection this
      // long at most, then gets 408 request_timeout (answerClientError). Receiving only: the
      // answer, a stream, a WebSocket after its upgrade are not bounded by it.
      requestTimeout,
      headersTimeout,
      // node:http looks for requests past their time this often (its default, 30 s, would let a
      // 30 s timeout run to a minute).
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(headersTimeout / 4))),
    },
    handle,
  );
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);

  // The WebSockets each client address holds open: past server.max_websockets_per_client the
  // upgrade is refused (429), so one client cannot hold sockets until the process runs out of
  // memory or file descriptors (operations per socket and subscriptions per account have bounds
  // of their own). The address is the one sign-in is throttled by (server.trust_proxy).
  const socketsOf = new Map<string, number>();
  const maxPerClient = config.server.max_websockets_per_client;
  let warnedProxy = false;
  const addressOf = (req: IncomingMessage) => clientAddress(app, req);
  // Frames over the body limit close their socket with 1009 (message too big) before being parsed.
  const wss = new WebSocketServer({
    server,
    path: '/graphql',
    maxPayload: parseBytes(config.server.body_limit)!,
    verifyClient: ({ req }, done) => {
      const address = addressOf(req);
      if ((socketsOf.get(address) ?? 0) < maxPerClient) return done(true);
      // Behind a proxy that is not trusted every client is the proxy: say so, once.
      if (config.server.trust_proxy === false && req.headers['x-forwarded-for'] && !warnedProxy) {
        warnedProxy = true;
        logger.warn(
          { address, limit: maxPerClient },
          'WebSockets refused: their requests come through a proxy (X-Forwarded-For) that server.trust_proxy does not name, so every client counts as the proxy; set server.trust_proxy (TRUST_PROXY)',
        );
      }
      // In GraphQL's error body, as every other refusal on /graphql.
      const refusal = toPublicGraphQLError(
        new DomainError(
          'too_many_connections',
          `This client already has ${maxPerClient} WebSockets open to this server, the most one client may (server.max_websockets_per_client): run several operations on one connection, or close some.`,
        ),
      );
      const status = (refusal.extensions as { status: number }).status;
      done(false, status, JSON.stringify({ errors: [publicErrorBody(refusal)] }), { 'Content-Type': 'application/json' });
    },
  });
  // ws re-emits the HTTP server's errors (a port in use); the listen below reports them itself.
  wss.on('error', () => {});
  // Each operation's AbortController, per socket by operation id: a query or mutation (a chat
  // completion, say) has no iterator for graphql-ws to return when its client completes it or
  // goes, so its signal is what stops the engine and keeps an answer nobody receives unbilled.
  const operations = new WeakMap<object, Map<string, AbortController>>();
  // Each subscribe message's controller: a client may reuse an id once its operation is completed,
  // and the old run's end must not forget the new run's controller.
  const byMessage = new WeakMap<object, AbortController>();
  const forget = (socket: object, id: string, payload: object) => {
    const open = operations.get(socket);
    if (open && open.get(id) === byMessage.get(payload)) open.delete(id);
  };
  const abortOperation = (socket: object, id: string) => {
    const controller = operations.get(socket)?.get(id);
    operations.get(socket)?.delete(id);
    controller?.abort(new ClientDisconnected());
  };
  wss.on('connection', (socket, req) => {
    operations.set(socket, new Map());
    const address = addressOf(req);
    socketsOf.set(address, (socketsOf.get(address) ?? 0) + 1);
    socket.once('close', () => {
      const left = (socketsOf.get(address) ?? 1) - 1;
      if (left <= 0) socketsOf.delete(address);
      else socketsOf.set(address, left);
    });
    // Binary frames too: graphql-ws reads every frame as text.
    socket.on('message', (data) => {
      const text = String(data);
      // Any message that could be a complete: the word, or a JSON escape that could spell it.
      if (!text.includes('complete') && !text.includes('\\u')) return;
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        return; // graphql-ws closes the socket for it
      }
      const m = message as { type?: unknown; id?: unknown };
      if (m?.type === 'complete' && typeof m.id === 'string') abortOperation(socket, m.id);
    });
    socket.on('close', () => {
      for (const controller of operations.get(socket)?.values() ?? []) controller.abort(new ClientDisconnected());
      operations.delete(socket);
    });
  });
  useServer(
    {
      execute: (args) => (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args) as never,
      subscribe: (args) => (args.rootValue as { subscribe: (a: ExecutionArgs) => unknown }).subscribe(args) as never,
      // Whatever refuses an operation (a parse error, a limit of the armor, validation, a context
      // that cannot be built) answers that operation with an error; the socket and its other
      // operations go on.
      onSubscribe: async (ctx, id, payload) => {
        const socket = ctx.extra.socket;
        const open = operations.get(socket);
        // A bound on what one socket may keep open (each subscription holds memory until it ends).
        if (open && open.size >= MAX_OPERATIONS_PER_SOCKET) {
          return [
            toPublicGraphQLError(
              new DomainError(
                'invalid_request',
                `This connection already has ${MAX_OPERATIONS_PER_SOCKET} operations open, the most one WebSocket may: complete some, or open another connection.`,
              ),
            ),
          ];
        }
        const controller = new AbortController();
        open?.set(id, controller);
        byMessage.set(payload, controller);
        const refused = (errors: GraphQLError[]) => {
          forget(socket, id, payload);
          return errors;
        };
        try {
          const {
            schema: s,
            execute,
            subscribe,
            contextFactory,
            parse,
            validate,
          } = yoga.getEnveloped({
            ...ctx,
            req: ctx.extra.request,
            socket: ctx.extra.socket,
            params: payload,
            connectionParams: ctx.connectionParams,
            requestId: randomUUID(),
            signal: controller.signal,
          });
          const document = parse(payload.query);
          const errors = validate(s, document);
          // useDisableIntrospection hooks Yoga's HTTP request parsing, which a socket skips.
          if (!config.graphql.introspection) errors.push(...validateGraphQL(s, document, [NoSchemaIntrospectionCustomRule]));
          if (errors.length) return refused(errors.map((e: GraphQLError) => toPublicGraphQLError(e)));
          // graphql-ws answers a document whose operation cannot be picked (several, none named by
          // operationName) itself, without onComplete: refused here, so nothing is left open.
          if (!getOperationAST(document, payload.operationName)) {
            return refused([
              toPublicGraphQLError(
                new DomainError(
                  'invalid_request',
                  payload.operationName
                    ? `The document has no operation named '${payload.operationName}'.`
                    : 'The document has several operations: name the one to run in operationName.',
                ),
              ),
            ]);
          }
          const args = {
            schema: s,
            operationName: payload.operationName,
            document,
            variableValues: payload.variables,
            contextValue: await contextFactory(),
            rootValue: { execute, subscribe },
          };
          return args as ExecutionArgs;
        } catch (err) {
          if (isUnexpectedError(err)) logger.error({ path: '/graphql (WebSocket)', err }, 'unexpected GraphQL error');
          return refused([toPublicGraphQLError(armorLimit(err))]);
        }
      },
      // Errors as HTTP's bodies list them (publicErrorBody): `extensions.http` is Yoga's, not the client's.
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors?.length ? { ...result, errors: result.errors.map((e) => publicError(forClient(e))) } : undefined,
      onError: (ctx, id, payload, errors) => {
        forget(ctx.extra.socket, id, payload);
        return errors.map((e) => publicError(forClient(e)));
      },
      // Ended (answered, failed or completed by the client): its signal is no longer needed.
      onComplete: (ctx, id, payload) => forget(ctx.extra.socket, id, payload),
    },
    wss,
  );

  // Requests in flight per connection, to tell idle connections at shutdown (Node's own
  // closeIdleConnections misses sockets a client opened but never sent a request on).
  const sockets = new Map<Socket, number>();
  server.on('connection', (socket) => {
    sockets.set(socket, 0);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
    res.once('close', () => sockets.has(socket) && sockets.set(socket, sockets.get(socket)! - 1));
  });
  server.on('upgrade', (req) => sockets.delete(req.socket)); // WebSockets close on their own below
  const closeIdle = () => {
    for (const [socket, inFlight] of sockets) if (inFlight === 0) socket.destroy();
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? config.port, opts.host ?? config.host, () => resolve());
  });
  // The address actually bound (0.0.0.0 says: every interface).
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  state.ready = true;

  let closing: Promise<void> | undefined;
  const shutdown = () => {
    closing ??= (async () => {
      state.shuttingDown = true;
      logger.info({ timeoutMs: config.server.shutdown_timeout_ms }, 'shutting down: finishing in-flight requests');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections become idle as their last response ends: close them as they do.
      const sweeper = setInterval(closeIdle, 50);
      closeIdle();
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), config.server.shutdown_timeout_ms).unref());
      if ((await Promise.race([closed, timeout])) === 'timeout') {
        // /v1 calls still running are ended with an answer (a stream with its error event, billed
        // for what it delivered) before the connections close; a second at most.
        logger.warn(
          { open: sockets.size, calls: inFlight.size },
          'shutdown timeout: ending the calls in progress, then closing connections',
        );
        for (const c of inFlight)
          c.abort(new DomainError('shutting_down', 'The server is shutting down: this call ran past its shutdown time and was ended.'));
        await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
        for (const s of sockets.keys()) s.destroy();
        await closed;
      }
      clearInterval(sweeper);
      wss.close();
    })();
    return closing;
  };
  return { server, url, shutdown };
}
