import type { CombinedError } from 'urql';
import { ErrorMessage } from '../../components/States';
import type { FieldNames } from '../../lib/error-text';

/** "Saved." (until the next edit) or the error, after a form's mutation. */
export function SaveStatus({ error, saved, names }: { error?: CombinedError | string | null; saved: boolean; names?: FieldNames }) {
  if (error) return <ErrorMessage error={error} title="Not saved" names={names} />;
  return <p role="status">{saved ? 'Saved.' : ''}</p>;
}
