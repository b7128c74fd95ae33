// A small router over the History API: pages by route under /dashboard, links that navigate
// without a reload, and the current path for the navigation's aria-current.
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';

export const BASE = '/dashboard';

interface RouterState {
  path: string;
  search: URLSearchParams;
  navigate: (to: string, opts?: { replace?: boolean }) => void;
}

const RouterContext = createContext<RouterState | null>(null);

const current = () => {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return (p.replace(/\/+$/, '') || '/') as string;
};

export function RouterProvider({ children }: { children: ReactNode }) {
  const [path, setPath] = useState(current);
  const [search, setSearch] = useState(() => new URLSearchParams(location.search));
  useEffect(() => {
    const onPop = () => {
      setPath(current());
      setSearch(new URLSearchParams(location.search));
    };
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const navigate = useCallback((to: string, opts: { replace?: boolean } = {}) => {
    const url = to.startsWith(BASE) ? to : `${BASE}${to === '/' ? '/' : to}`;
    if (opts.replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
    setPath(current());
    setSearch(new URLSearchParams(location.search));
    scrollTo(0, 0);
  }, []);
  const value = useMemo(() => ({ path, search, navigate }), [path, search, navigate]);
  return <RouterContext.Provider value={value}>{children}</RouterContext.Provider>;
}

export function useRouter(): RouterState {
  const r = useContext(RouterContext);
  if (!r) throw new Error('useRouter outside RouterProvider');
  return r;
}
