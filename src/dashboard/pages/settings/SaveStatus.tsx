import type { CombinedError } from 'urql';
import { ErrorMessage } from '../../components/States';

/** "Saved." or the error, after a form's mutation. */
export function SaveStatus({ error, saved }: { error?: CombinedError; saved: boolean }) {
  if (error) return <ErrorMessage error={error} title="Not saved" />;
  return <p role="status">{saved ? 'Saved.' : ''}</p>;
}
