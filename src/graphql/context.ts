// The per-request (or per-subscription) context of GraphQL operations, built the same way for
// Yoga over HTTP, graphql-ws over WebSocket and compat's in-process execution.
import type { Services } from '../container.js';
import type { AccountView, RateLimitOverride } from '../domain/accounts/accounts-service.js';
import type { SessionView } from '../domain/auth/auth-service.js';
import { DomainError } from '../domain/errors.js';
import type { Caller } from '../domain/inference/inference-service.js';
import type { Usage } from '../domain/inference/engine.js';
import type { LimiterState } from '../domain/ratelimit/types.js';
import { timingSafeEqual } from 'node:crypto';

export interface Principal {
  account: AccountView;
  /** The API key of the call; null when a person signed in to the dashboard makes it (a session). */
  keyId: string | null;
  rateLimitOverride: RateLimitOverride;
}

/** What sets and clears the session cookie on the HTTP response (absent over WebSocket and in compat). */
export interface SessionCookies {
  set(token: string, expiresAt: Date): void;
  clear(): void;
  /** The client's address and user agent, for login throttling and the list of sessions. */
  clientAddress: string | null;
  userAgent: string | null;
}

export interface GraphQLContext {
  services: Services;
  requestId: string;
  /** Where the operation came in, for logs: /graphql, /graphql (WebSocket) or a /v1 path. */
  path: string;
  /** Aborted when the client goes away (HTTP) or the operation ends. */
  signal: AbortSignal;
  /** The caller's account; throws `invalid_api_key` when the Authorization header does not hold a valid key. */
  principal(): Promise<Principal>;
  /** Who makes a metered call, for the inference service: the principal and where its rate-limit headers go. */
  caller(): Promise<Caller>;
  /** Throws unless the Authorization header holds the operator's ADMIN_TOKEN, or an operator is signed in. */
  requireAdmin(): void;
  /** The dashboard session of the request's cookie (null without one, or when an API key is sent). */
  session: SessionView | null;
  /** The session of a person signed in to an account; throws session_required otherwise (API keys cannot manage keys, passwords, sessions, or the settings that charge the card, lift limits or silence alerts). */
  requireSession(): SessionView & { accountId: string };
  /** Sets and clears the session cookie (HTTP only). */
  cookies: SessionCookies | null;
}

export function createContext(
  services: Services,
  opts: {
    authorization: string | null | undefined;
    requestId: string;
    path: string;
    signal: AbortSignal;
    /** Hears the rate-limit state, for X-RateLimit-* headers on the HTTP response (none over WebSocket). */
    onRateLimit?: (state: LimiterState) => void;
    /** Hears that a metered call was admitted, and what it was settled at, for the HTTP access line. */
    onAdmitted?: () => void;
    onSettled?: (model: string, usage: Usage) => void;
    /** The signed-in session of the cookie, already checked (the Authorization header wins over it). */
    session?: SessionView | null;
    cookies?: SessionCookies | null;
    /** The Origin of a page of another site whose session cookie was not believed (src/web/session-cookie.ts). */
    refusedCookieFrom?: string | null;
    /** A session cookie was sent and believed, but names no live session (expired, signed out, revoked or made up). */
    endedSessionCookie?: boolean;
  },
): GraphQLContext {
  let authenticated: Promise<Principal> | undefined;
  let calling: Promise<Caller> | undefined;
  // An API key in the Authorization header decides; without one, a signed-in person's session.
  const session = opts.authorization ? null : (opts.session ?? null);
  // Methods rather than closures held in constants: a context is made for every request.
  const ctx: GraphQLContext = {
    services,
    requestId: opts.requestId,
    path: opts.path,
    signal: opts.signal,
    principal() {
      authenticated ??= session?.accountId
        ? principalOfSession(services, session.accountId)
        : session?.operator
          ? Promise.reject(
              new DomainError(
                'invalid_api_key',
                "You are signed in as the operator, which belongs to no account: send an account's API key, or sign in as the account's owner (the operator reads accounts with Query.accounts).",
              ),
            )
          : isAdminToken(services, opts.authorization)
            ? Promise.reject(
                new DomainError(
                  'invalid_api_key',
                  "This is the operator token (ADMIN_TOKEN): it belongs to no account. Send an account's API key, or sign in to the dashboard.",
                ),
              )
            : !opts.authorization && opts.refusedCookieFrom
              ? Promise.reject(crossSiteCookie(opts.refusedCookieFrom))
              : !opts.authorization && opts.endedSessionCookie
                ? Promise.reject(new DomainError('invalid_api_key', SESSION_ENDED))
                : services.accounts.authenticate(opts.authorization);
      return authenticated;
    },
    // The same caller for every metered call of the request (a door may ask before the operation does).
    caller() {
      calling ??= callerOf(ctx.principal(), opts);
      return calling;
    },
    session,
    cookies: opts.cookies ?? null,
    requireSession() {
      if (!session?.accountId) {
        if (!opts.authorization && opts.refusedCookieFrom) throw crossSiteCookie(opts.refusedCookieFrom);
        throw new DomainError('session_required', whyNoSession(services, session, opts));
      }
      return session as SessionView & { accountId: string };
    },
    requireAdmin() {
      if (session?.operator) return;
      const token = services.config.adminToken;
      if (!isAdminToken(services, opts.authorization)) {
        throw new DomainError(
          'admin_required',
          token
            ? 'This operation needs the operator token (Authorization: Bearer $ADMIN_TOKEN).'
            : 'Admin operations are disabled: set ADMIN_TOKEN to enable them.',
        );
      }
    },
  };
  return ctx;
}

/** What a sign-in cookie that names no live session is told. */
const SESSION_ENDED = 'Your sign-in session has ended (it expired, or was signed out or revoked): sign in to the dashboard again.';

/** Why an operation only an account's owner, signed in, may run was refused: said as who the caller is. */
function whyNoSession(
  services: Services,
  session: SessionView | null,
  opts: { authorization: string | null | undefined; endedSessionCookie?: boolean },
): string {
  const owner = "This needs the account's owner signed in to the dashboard";
  if (session?.operator) return `${owner}: the operator's session belongs to no account.`;
  if (isAdminToken(services, opts.authorization)) return `${owner}: the operator token (ADMIN_TOKEN) belongs to no account.`;
  if (!opts.authorization && opts.endedSessionCookie) return SESSION_ENDED;
  return 'Sign in to the dashboard for this: API keys cannot manage keys, passwords, sessions, automatic top-up, spending limits or alerts.';
}

/** A session cookie a page of another site sent: not believed (it could be a forged request), and said so. */
function crossSiteCookie(origin: string): DomainError {
  return new DomainError(
    'session_required',
    `The session cookie came from a page of another site (Origin: ${origin}), which this server does not accept: use the dashboard on this server's own address (PUBLIC_URL), or add that origin to server.cors_origins.`,
  );
}

async function principalOfSession(services: Services, accountId: string): Promise<Principal> {
  const [account, profile] = await Promise.all([services.accounts.getAccount(accountId), services.rateLimitOverrides.profile(accountId)]);
  return { account, keyId: null, rateLimitOverride: { rpm: profile.rpm, tpm: profile.tpm } };
}

async function callerOf(
  principal: Promise<Principal>,
  opts: {
    requestId: string;
    onRateLimit?: (state: LimiterState) => void;
    onAdmitted?: () => void;
    onSettled?: (model: string, usage: Usage) => void;
  },
): Promise<Caller> {
  const { account, keyId, rateLimitOverride } = await principal;
  return {
    accountId: account.id,
    keyId,
    requestId: opts.requestId,
    rateLimitProfile: { tier: account.tier, rpm: rateLimitOverride.rpm, tpm: rateLimitOverride.tpm },
    onRateLimit: opts.onRateLimit,
    onAdmitted: opts.onAdmitted,
    onSettled: opts.onSettled,
  };
}

/** Whether an Authorization header holds the operator's ADMIN_TOKEN (compared in constant time). */
function isAdminToken(services: Services, authorization: string | null | undefined): boolean {
  const token = services.config.adminToken;
  // A header too short to hold the token is not it (an API key on every /v1 call): no parsing.
  if (!token || !authorization || authorization.length < token.length + 7) return false;
  const given = /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim();
  return Boolean(given && safeEqual(given, token));
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
