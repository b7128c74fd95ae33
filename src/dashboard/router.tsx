// A small router over the History API: pages by route under /dashboard, links that navigate
// without a reload, the current path for the navigation's aria-current, and a page's hold on
// navigation (a key not copied yet): leaving through a link, Back or Forward, or by closing or
// reloading the tab, asks first.
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useRef, useState } from 'react';

export const BASE = '/dashboard';

interface RouterState {
  path: string;
  search: URLSearchParams;
  navigate: (to: string, opts?: { replace?: boolean }) => void;
  /** Holds navigation until the returned release: each page change asks `message` first. */
  hold: (message: string) => () => void;
}

const RouterContext = createContext<RouterState | null>(null);

const current = () => {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return (p.replace(/\/+$/, '') || '/') as string;
};

/** Where an entry sits in the tab's history, kept in its state: Back or Forward refused is undone by as many steps. */
const indexOf = (state: unknown): number | undefined => {
  const idx = (state as { idx?: unknown } | null)?.idx;
  return typeof idx === 'number' ? idx : undefined;
};

export function RouterProvider({ children }: { children: ReactNode }) {
  const [path, setPath] = useState(current);
  const [search, setSearch] = useState(() => new URLSearchParams(location.search));
  // The history entry shown (its index, written into its state, and its address), so that a Back
  // or Forward refused can be undone.
  const shown = useRef({ index: indexOf(history.state) ?? 0, url: location.href });
  const holds = useRef(new Set<{ message: string }>());
  /** Whether the page may change: no hold, or the person said yes to the first hold's question. */
  const mayLeave = useCallback(() => {
    const [first] = holds.current;
    return !first || confirm(first.message);
  }, []);
  const show = useCallback(() => {
    shown.current = { index: indexOf(history.state) ?? shown.current.index, url: location.href };
    setPath(current());
    setSearch(new URLSearchParams(location.search));
  }, []);
  useEffect(() => {
    if (indexOf(history.state) === undefined) history.replaceState({ idx: 0 }, '');
    shown.current = { index: indexOf(history.state)!, url: location.href };
    // Set while a refused Back or Forward is undone: the popstate that brings the page back is ours.
    let restoring = false;
    const onPop = (e: PopStateEvent) => {
      if (restoring) {
        restoring = false;
        return;
      }
      if (!mayLeave()) {
        const to = indexOf(e.state);
        if (to !== undefined && to !== shown.current.index) {
          restoring = true;
          history.go(shown.current.index - to);
        } else {
          // An entry the router did not write: the page's address comes back as a new entry.
          history.pushState({ idx: ++shown.current.index }, '', shown.current.url);
        }
        return;
      }
      show();
    };
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, [mayLeave, show]);
  const navigate = useCallback(
    (to: string, opts: { replace?: boolean } = {}) => {
      if (!mayLeave()) return;
      const url = to.startsWith(BASE) ? to : `${BASE}${to === '/' ? '/' : to}`;
      if (opts.replace) history.replaceState({ idx: shown.current.index }, '', url);
      else history.pushState({ idx: shown.current.index + 1 }, '', url);
      show();
      scrollTo(0, 0);
    },
    [mayLeave, show],
  );
  const hold = useCallback((message: string) => {
    const entry = { message };
    holds.current.add(entry);
    return () => {
      holds.current.delete(entry);
    };
  }, []);
  const value = useMemo(() => ({ path, search, navigate, hold }), [path, search, navigate, hold]);
  return <RouterContext.Provider value={value}>{children}</RouterContext.Provider>;
}

export function useRouter(): RouterState {
  const r = useContext(RouterContext);
  if (!r) throw new Error('useRouter outside RouterProvider');
  return r;
}

/**
 * While `message` is set, leaving the page asks it first: a link or Back/Forward inside the
 * dashboard with `confirm(message)` (staying when the answer is no), closing or reloading the tab
 * with the browser's own question (browsers show their own words there).
 */
export function useHoldNavigation(message: string | null): void {
  const { hold } = useRouter();
  useEffect(() => {
    if (message === null) return;
    const release = hold(message);
    const onLeave = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    addEventListener('beforeunload', onLeave);
    return () => {
      release();
      removeEventListener('beforeunload', onLeave);
    };
  }, [hold, message]);
}
