// A settings form's values, seeded from what the server has and kept in step with it: the settings
// page reads them again when its tab comes back into view (another tab or browser may have changed
// them), and a form nobody has touched takes the new values; one being edited keeps the person's
// edits and says the values changed elsewhere, so saving never silently overwrites newer settings.
// "Saved." lasts until the next edit.
import { useEffect, useRef, useState } from 'react';

export interface SeededForm<T> {
  values: T;
  /** Changes some values (an edit: the form is no longer what the server has). */
  edit: (patch: Partial<T>) => void;
  /** Edited since it was seeded or saved. */
  dirty: boolean;
  /** The server's values changed (elsewhere) while this form was being edited. */
  changedElsewhere: boolean;
  /** Drops the edits and shows what the server has now. */
  discard: () => void;
  /** Saved, and not edited since. */
  saved: boolean;
  /** The last save failed, and the form was not edited since (its error is worth showing). */
  failed: boolean;
  /** Runs `send` with the values; on success the form is clean (and takes the server's next values). */
  save: (send: (values: T) => Promise<boolean>) => Promise<void>;
}

interface State<T> {
  values: T;
  /** The server's values the form last took in (as JSON). */
  seen: string;
  dirty: boolean;
  changedElsewhere: boolean;
  outcome: 'none' | 'saved' | 'failed';
}

export function useSeededForm<T extends object>(server: T): SeededForm<T> {
  const key = JSON.stringify(server);
  const latest = useRef(server);
  latest.current = server;
  const saving = useRef(false);
  const [state, setState] = useState<State<T>>(() => ({
    values: server,
    seen: key,
    dirty: false,
    changedElsewhere: false,
    outcome: 'none',
  }));
  useEffect(() => {
    setState((s) => {
      if (s.seen === key) return s;
      // An answer to this form's own save is no news.
      if (saving.current) return { ...s, seen: key };
      if (!s.dirty) return { ...s, values: latest.current, seen: key, changedElsewhere: false };
      return { ...s, seen: key, changedElsewhere: true };
    });
  }, [key]);
  return {
    values: state.values,
    dirty: state.dirty,
    changedElsewhere: state.changedElsewhere,
    saved: state.outcome === 'saved',
    failed: state.outcome === 'failed',
    edit: (patch) => setState((s) => ({ ...s, values: { ...s.values, ...patch }, dirty: true, outcome: 'none' })),
    discard: () =>
      setState((s) => ({
        ...s,
        values: latest.current,
        seen: JSON.stringify(latest.current),
        dirty: false,
        changedElsewhere: false,
        outcome: 'none',
      })),
    save: async (send) => {
      saving.current = true;
      try {
        const ok = await send(state.values);
        setState((s) => (ok ? { ...s, dirty: false, changedElsewhere: false, outcome: 'saved' } : { ...s, outcome: 'failed' }));
      } finally {
        saving.current = false;
      }
    },
  };
}

/** Reads the settings again when the tab comes back into view (focus, or visible again). */
export function useRefetchOnReturn(refetch: () => void): void {
  const again = useRef(refetch);
  again.current = refetch;
  useEffect(() => {
    const onReturn = () => {
      if (document.visibilityState === 'visible') again.current();
    };
    addEventListener('focus', onReturn);
    document.addEventListener('visibilitychange', onReturn);
    return () => {
      removeEventListener('focus', onReturn);
      document.removeEventListener('visibilitychange', onReturn);
    };
  }, []);
}
