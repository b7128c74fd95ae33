// Focus that would be lost to the document's body (the button pressed is disabled or gone, the
// page replaced) goes to a heading instead, once the new content is on screen: `refocus()` asks
// for it, the heading takes it (and the view) at the next render where `ready` holds.
import { useEffect, useRef } from 'react';

export function useRefocus(ready: boolean) {
  const heading = useRef<HTMLHeadingElement>(null);
  const pending = useRef(false);
  useEffect(() => {
    if (pending.current && heading.current && ready) {
      pending.current = false;
      heading.current.focus();
      heading.current.scrollIntoView({ block: 'start' });
    }
  });
  return {
    heading,
    refocus: () => {
      pending.current = true;
    },
  };
}
