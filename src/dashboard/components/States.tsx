// The loading, error and empty states every page shows. An error says whether the server could
// not be reached or failed, and offers to try again when the page can.
import type { CombinedError } from 'urql';
import { type FieldNames, failureText } from '../lib/error-text';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorMessage({
  error,
  title = 'Something went wrong',
  onRetry,
  retryLabel = 'Try again',
  names,
  children,
}: {
  error: CombinedError | Error | string;
  title?: string;
  /** Shown as a button: asks the server again (a refetch, or a reload for the whole app). */
  onRetry?: () => void;
  retryLabel?: string;
  /** How the form names its fields in the server's messages. */
  names?: FieldNames;
  /** The way on, after the message (links to sign in, to ask for a new link). */
  children?: React.ReactNode;
}) {
  return (
    <div className="error" role="alert">
      <strong>{title}.</strong> {failureText(error, names)}
      {children ? <> {children}</> : null}
      {onRetry ? (
        <>
          {' '}
          <button type="button" onClick={onRetry}>
            {retryLabel}
          </button>
        </>
      ) : null}
    </div>
  );
}

export function Empty({ children }: { children: React.ReactNode }) {
  return <p className="empty">{children}</p>;
}
