// The loading, error and empty states every page shows.
import type { CombinedError } from 'urql';
import { errorText } from '../lib/error-text';

export function Loading({ what }: { what: string }) {
  return (
    <p className="state" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function ErrorMessage({ error, title = 'Something went wrong' }: { error: CombinedError | Error | string; title?: string }) {
  const message =
    typeof error === 'string'
      ? error
      : 'graphQLErrors' in error && error.graphQLErrors.length > 0
        ? error.graphQLErrors.map((e) => errorText(e.message)).join(' ')
        : 'networkError' in error && error.networkError
          ? 'The server could not be reached. Check your connection and try again.'
          : error.message;
  return (
    <div className="error" role="alert">
      <strong>{title}.</strong> {message}
    </div>
  );
}

export function Empty({ children }: { children: React.ReactNode }) {
  return <p className="empty">{children}</p>;
}
