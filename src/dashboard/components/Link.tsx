import type { AnchorHTMLAttributes, MouseEvent } from 'react';
import { BASE, useRouter } from '../router';

/** A link inside the dashboard: navigates without a reload (a modified click opens a tab as usual). */
export function Link({ to, ...rest }: { to: string } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const { navigate, path } = useRouter();
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  const active = path === to || (to !== '/' && path.startsWith(`${to}/`));
  return <a href={`${BASE}${to}`} aria-current={active ? 'page' : undefined} onClick={onClick} {...rest} />;
}
