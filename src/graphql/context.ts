// The per-request (or per-subscription) context of GraphQL operations, built the same way for
// Yoga over HTTP, graphql-ws over WebSocket and compat's in-process execution.
import type { Services } from '../container.js';
import type { AccountView, RateLimitOverride } from '../domain/accounts/accounts-service.js';
import { DomainError } from '../domain/errors.js';
import type { Caller } from '../domain/inference/inference-service.js';
import type { Usage } from '../domain/inference/engine.js';
import type { LimiterState } from '../domain/ratelimit/types.js';
import { timingSafeEqual } from 'node:crypto';

export interface Principal {
  account: AccountView;
  keyId: string;
  rateLimitOverride: RateLimitOverride;
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
  /** Throws unless the Authorization header holds the operator's ADMIN_TOKEN. */
  requireAdmin(): void;
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
    /** Hears what each metered call was settled at, for the HTTP access line. */
    onSettled?: (model: string, usage: Usage) => void;
  },
): GraphQLContext {
  let authenticated: Promise<Principal> | undefined;
  const principal = () => (authenticated ??= services.accounts.authenticate(opts.authorization));
  return {
    services,
    requestId: opts.requestId,
    path: opts.path,
    signal: opts.signal,
    principal,
    async caller() {
      const { account, keyId, rateLimitOverride } = await principal();
      return {
        accountId: account.id,
        keyId,
        requestId: opts.requestId,
        rateLimitProfile: { tier: account.tier, ...rateLimitOverride },
        onRateLimit: opts.onRateLimit,
        onSettled: opts.onSettled,
      };
    },
    requireAdmin() {
      const token = services.config.adminToken;
      const given = /^Bearer\s+(.+)$/i.exec(opts.authorization ?? '')?.[1]?.trim();
      if (!token || !given || !safeEqual(given, token)) {
        throw new DomainError('admin_required', token ? 'This operation needs the operator token (Authorization: Bearer $ADMIN_TOKEN).' : 'Admin operations are disabled: set ADMIN_TOKEN to enable them.');
      }
    },
  };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
