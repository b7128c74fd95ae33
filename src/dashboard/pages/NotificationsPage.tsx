// Notifications: the feed, a page at a time (unread first on each page), mark as read.
import { useRef, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import { useRefocus } from '../lib/use-refocus';
import { formatUtcDateTime } from '../lib/utc-time';

const NotificationsDoc = graphql(`
  query Notifications($first: Int!, $after: String) {
    viewer {
      id
      notifications(first: $first, after: $after) {
        unreadCount
        pageInfo {
          hasNextPage
          endCursor
        }
        nodes {
          id
          subject
          text
          createdAt
          read
        }
      }
    }
  }
`);

const MarkReadDoc = graphql(`
  mutation MarkNotificationsRead($ids: [ID!]!) {
    markNotificationsRead(ids: $ids) {
      id
      read
    }
  }
`);

const MarkAllReadDoc = graphql(`
  mutation MarkAllNotificationsRead($upTo: ID) {
    markAllNotificationsRead(upTo: $upTo)
  }
`);

const PAGE = 50;

export default function NotificationsPage() {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: NotificationsDoc,
    variables: { first: PAGE, after: cursors.at(-1) ?? null },
  });
  const [marking, mark] = useMutation(MarkReadDoc);
  const [markingAll, markAll] = useMutation(MarkAllReadDoc);
  const markButtons = useRef(new Map<string, HTMLButtonElement>());
  // After a page change or "Mark all as read" (whose button goes), focus and the view go back to
  // the heading, once the new page is on screen, rather than being lost to the document's body.
  const { heading, refocus } = useRefocus(!fetching);
  const goTo = (next: (string | null)[]) => {
    refocus();
    setCursors(next);
  };
  // The newest notification seen on the first page: "Mark all as read" stops there, so one written
  // since the page was read stays unread.
  const [newest, setNewest] = useState<string | null>(null);
  const firstNode = cursors.length === 1 ? (data?.viewer.notifications.nodes[0]?.id ?? null) : null;
  if (firstNode !== null && firstNode !== newest) setNewest(firstNode);
  if (fetching && !data) return <Loading what="notifications" />;
  if (!data)
    return error ? (
      <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />
    ) : (
      <Loading what="notifications" />
    );
  const feed = data.viewer.notifications;
  const nodes = [...feed.nodes].sort((a, b) => Number(a.read) - Number(b.read));
  // The marked item's button goes: the focus goes on to the next unread item's, or to the heading
  // when no unread item follows.
  const markRead = async (id: string) => {
    const after = nodes.slice(nodes.findIndex((n) => n.id === id) + 1).find((n) => !n.read);
    // Refused, the button stays, and the focus with it.
    if ((await mark({ ids: [id] })).error) return;
    const next = after ? markButtons.current.get(after.id) : undefined;
    if (next) next.focus();
    else refocus();
    refetch({ requestPolicy: 'network-only' });
  };
  const markAllRead = async () => {
    await markAll({ upTo: newest ?? feed.nodes[0]?.id ?? null });
    refocus();
    refetch({ requestPolicy: 'network-only' });
  };
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Notifications{cursors.length > 1 ? `, page ${cursors.length}` : ''}
      </h1>
      {marking.error ? <ErrorMessage error={marking.error} /> : null}
      {markingAll.error ? <ErrorMessage error={markingAll.error} /> : null}
      {feed.unreadCount > 0 ? (
        <p>
          {feed.unreadCount === 1 ? '1 unread' : `${feed.unreadCount} unread`}{' '}
          <button type="button" disabled={markingAll.fetching} onClick={markAllRead}>
            Mark all as read
          </button>
        </p>
      ) : null}
      {nodes.length === 0 ? <Empty>No notifications yet: alerts and receipts appear here.</Empty> : null}
      <ul className="plain feed">
        {nodes.map((n) => (
          <li key={n.id} className={n.read ? 'read' : 'unread'}>
            <article aria-label={n.subject}>
              <h2>
                {n.read ? '' : <span className="badge">Unread</span>} {n.subject}
              </h2>
              <p className="muted">{formatUtcDateTime(n.createdAt)}</p>
              <pre className="text">{n.text}</pre>
              {n.read ? null : (
                <button
                  type="button"
                  ref={(el) => {
                    if (el) markButtons.current.set(n.id, el);
                    else markButtons.current.delete(n.id);
                  }}
                  onClick={() => markRead(n.id)}
                  aria-label={`Mark as read: ${n.subject}`}
                >
                  Mark as read
                </button>
              )}
            </article>
          </li>
        ))}
      </ul>
      {cursors.length > 1 || feed.pageInfo.hasNextPage ? (
        <nav className="toolbar" aria-label="Pages of notifications">
          <button type="button" disabled={cursors.length <= 1} onClick={() => goTo(cursors.slice(0, -1))}>
            Newer
          </button>{' '}
          <span>Page {cursors.length}</span>{' '}
          <button type="button" disabled={!feed.pageInfo.hasNextPage} onClick={() => goTo([...cursors, feed.pageInfo.endCursor ?? null])}>
            Older
          </button>
        </nav>
      ) : null}
    </>
  );
}
