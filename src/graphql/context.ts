// The per-request (or per-subscription) context of GraphQL operations, built the same way for
// Yoga over HTTP, graphql-ws over WebSocket and compat's in-process execution.
import type { Services } from '../container.js';
import type { AccountView } from '../domain/accounts/accounts-service.js';
import { DomainError } from '../domain/errors.js';
import { timingSafeEqual } from 'node:crypto';

export interface Principal {
  account: AccountView;
  keyId: string;
}

export interface GraphQLContext {
  services: Services;
  requestId: string;
  /** Aborted when the client goes away (HTTP) or the operation ends. */
  signal: AbortSignal;
  /** The caller's account; throws `invalid_api_key` when the Authorization header does not hold a valid key. */
  principal(): Promise<Principal>;
  /** Throws unless the Authorization header holds the operator's ADMIN_TOKEN. */
  requireAdmin(): void;
}

export function createContext(
  services: Services,
  opts: { authorization: string | null | undefined; requestId: string; signal: AbortSignal },
): GraphQLContext {
  let principal: Promise<Principal> | undefined;
  return {
    services,
    requestId: opts.requestId,
    signal: opts.signal,
    principal() {
      principal ??= services.accounts.authenticate(opts.authorization);
      return principal;
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
