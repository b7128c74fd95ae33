// Notifications: the feed, unread first, mark as read.
import { useMutation, useQuery } from 'urql';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';

const NotificationsDoc = graphql(`
  query Notifications {
    viewer {
      id
      notifications(first: 100) {
        unreadCount
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

export default function NotificationsPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: NotificationsDoc });
  const [marking, mark] = useMutation(MarkReadDoc);
  if (fetching && !data) return <Loading what="notifications" />;
  if (!data)
    return error ? (
      <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />
    ) : (
      <Loading what="notifications" />
    );
  const nodes = [...data.viewer.notifications.nodes].sort((a, b) => Number(a.read) - Number(b.read));
  const unread = nodes.filter((n) => !n.read).map((n) => n.id);
  const markRead = async (ids: string[]) => {
    await mark({ ids });
    refetch({ requestPolicy: 'network-only' });
  };
  return (
    <>
      <h1>Notifications</h1>
      {marking.error ? <ErrorMessage error={marking.error} /> : null}
      {unread.length > 0 ? (
        <button type="button" onClick={() => markRead(unread)}>
          Mark all as read
        </button>
      ) : null}
      {nodes.length === 0 ? <Empty>No notifications yet: alerts and receipts appear here.</Empty> : null}
      <ul className="plain feed">
        {nodes.map((n) => (
          <li key={n.id} className={n.read ? 'read' : 'unread'}>
            <article aria-label={n.subject}>
              <h2>
                {n.read ? '' : <span className="badge">Unread</span>} {n.subject}
              </h2>
              <p className="muted">{new Date(n.createdAt).toLocaleString()}</p>
              <pre className="text">{n.text}</pre>
              {n.read ? null : (
                <button type="button" onClick={() => markRead([n.id])} aria-label={`Mark as read: ${n.subject}`}>
                  Mark as read
                </button>
              )}
            </article>
          </li>
        ))}
      </ul>
    </>
  );
}
