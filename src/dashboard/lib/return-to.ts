// Where sign-in sends a person back to: the dashboard page they were on when their session ended
// (or that they opened signed out), carried in the sign-in page's `?next=`. Only a path of this
// dashboard is taken, never another site's address (an open redirect: a link to our sign-in page
// that lands on a look-alike after the password was typed).

/** The sign-in pages themselves: coming back to one after signing in would be a loop. */
const AUTH_PAGES = new Set(['/login', '/signup', '/forgot-password', '/reset-password', '/operator-login']);

/** A path (and query) under /dashboard, as the router names pages: "/settings", "/top-up/return?top_up=…". */
const SAFE = /^\/(?:[A-Za-z0-9-]+(?:\/[A-Za-z0-9-]+)*)?(?:\?[A-Za-z0-9_.~%=&+-]*)?$/;

/** `raw` when it is a page of this dashboard other than a sign-in page, else null. */
export function safeReturnPath(raw: string | null | undefined): string | null {
  if (!raw || raw.length > 512 || !SAFE.test(raw)) return null;
  const path = raw.split('?')[0]!;
  return AUTH_PAGES.has(path) ? null : raw;
}

/** The sign-in page's address that comes back to `path` (with its query) once signed in. */
export function loginPathFor(path: string, search: string, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams(extra);
  const next = safeReturnPath(`${path}${search}`);
  if (next && next !== '/') params.set('next', next);
  const query = params.toString();
  return `/login${query ? `?${query}` : ''}`;
}
