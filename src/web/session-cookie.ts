// The dashboard's session cookie on the wire: httpOnly, SameSite=Lax, Path=/, Secure when clients
// reach the server over https (PUBLIC_URL https://…, or the request came over TLS). A cookie is
// believed only from the server's own pages: a request (or a WebSocket upgrade) whose Origin is
// another site is treated as having no session, which, with Yoga's CSRF check on HTTP, keeps
// cross-site requests and cross-site WebSocket hijacking from using a signed-in person's session.
import type { IncomingHttpHeaders } from 'node:http';
import { parse as parseCookies, serialize } from 'cookie';
import type { AppConfig } from '../config.js';
import { SESSION_COOKIE } from '../domain/auth/auth-service.js';

/** The session cookie's value, when the request comes from one of the server's own origins. */
export function sessionTokenOf(
  headers: IncomingHttpHeaders,
  config: Pick<AppConfig, 'publicUrl' | 'server'>,
  fromTrustedProxy = false,
): string | null {
  const raw = headers.cookie;
  if (!raw) return null;
  const token = parseCookies(raw)[SESSION_COOKIE];
  if (!token) return null;
  return sameSite(headers, config, fromTrustedProxy) ? token : null;
}

/**
 * The Origin of a request whose session cookie was not believed (a page of another site sent it),
 * so that its refusal can say why; null when there was no session cookie or it was believed.
 */
export function refusedCookieOrigin(
  headers: IncomingHttpHeaders,
  config: Pick<AppConfig, 'publicUrl' | 'server'>,
  fromTrustedProxy = false,
): string | null {
  const raw = headers.cookie;
  if (!raw || !parseCookies(raw)[SESSION_COOKIE] || sameSite(headers, config, fromTrustedProxy)) return null;
  return String(headers.origin).slice(0, 200);
}

/**
 * Whether a request's Origin (when a browser sent one) is this server: its Host, PUBLIC_URL, or a
 * configured CORS origin with credentials. `fromTrustedProxy`: the connection comes from a proxy
 * server.trust_proxy names, whose X-Forwarded-Host is then believed (anyone else may send one).
 */
export function sameSite(headers: IncomingHttpHeaders, config: Pick<AppConfig, 'publicUrl' | 'server'>, fromTrustedProxy = false): boolean {
  const origin = headers.origin;
  if (origin === undefined) return true; // not a browser's cross-origin request (curl, same-origin GET)
  if (origin === 'null') return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  if (headers.host && host === headers.host) return true;
  // X-Forwarded-Host only from a proxy server.trust_proxy trusts (none when it is false): anyone else may send it.
  const forwarded =
    fromTrustedProxy && typeof headers['x-forwarded-host'] === 'string' ? headers['x-forwarded-host'].split(',')[0]!.trim() : null;
  if (forwarded && host === forwarded) return true;
  try {
    if (origin === new URL(config.publicUrl).origin) return true;
  } catch {
    // an unparsable PUBLIC_URL matches nothing
  }
  return config.server.cors_origins.includes(origin);
}

export function isSecure(config: Pick<AppConfig, 'publicUrl'>, viaTls: boolean): boolean {
  return viaTls || config.publicUrl.startsWith('https:');
}

export function sessionCookie(token: string, expiresAt: Date, secure: boolean): string {
  return serialize(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure, path: '/', expires: expiresAt });
}

export function clearedSessionCookie(secure: boolean): string {
  return serialize(SESSION_COOKIE, '', { httpOnly: true, sameSite: 'lax', secure, path: '/', expires: new Date(0) });
}
