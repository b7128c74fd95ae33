// The overview: the balance (live over graphql-ws: a top-up, a charge or a credit shows without a
// reload), the monthly allocation used, spend against the spending limit, recent notifications
// (live too: a notification without a wallet change, such as a call refused by the spending limit,
// shows without a reload).
import { useState } from 'react';
import { useQuery, useSubscription } from 'urql';
import { AllocationBar } from '../components/AllocationBar';
import { Link } from '../components/Link';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import { formatMoney, toNumber } from '../lib/money';
import { spendingLimitNote } from '../lib/spending-limit';
import { formatUtcDateTime } from '../lib/utc-time';

const OverviewDoc = graphql(`
  query Overview {
    viewer {
      id
      tier
      wallet {
        balance
        held
        currency
      }
      allocation {
        used
        held
        monthlyTokens
        period
      }
      settings {
        monthlySpend
        spendingLimit {
          enabled
          monthlyLimit
          action
        }
      }
      notifications(first: 5) {
        unreadCount
        nodes {
          id
          subject
          createdAt
          read
        }
      }
    }
  }
`);

const WalletUpdatedDoc = graphql(`
  subscription WalletUpdated {
    walletUpdated {
      balance
      currency
      transaction {
        id
        type
        amount
      }
    }
  }
`);

const NotificationAddedDoc = graphql(`
  subscription OverviewNotificationAdded {
    notificationAdded {
      id
    }
  }
`);

export default function OverviewPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: OverviewDoc });
  const [live, setLive] = useState<string | null>(null);
  useSubscription({ query: WalletUpdatedDoc }, (_prev, event) => {
    setLive(event.walletUpdated.balance);
    // Spend and notifications follow the change.
    refetch({ requestPolicy: 'network-only' });
    return event;
  });
  useSubscription({ query: NotificationAddedDoc }, (_prev, event) => {
    refetch({ requestPolicy: 'network-only' });
    return event;
  });
  if (!data && fetching) return <Loading what="your overview" />;
  const retry = () => refetch({ requestPolicy: 'network-only' });
  if (!data) return error ? <ErrorMessage error={error} onRetry={retry} /> : <Loading what="your overview" />;
  const v = data.viewer;
  const limit = v.settings.spendingLimit;
  const balance = live ?? v.wallet.balance;
  return (
    <>
      <h1>Overview</h1>
      {error ? <ErrorMessage error={error} title="Could not refresh: showing the figures as last loaded" onRetry={retry} /> : null}
      <div className="grid">
        <section className="card" aria-labelledby="balance-title">
          <h2 id="balance-title">Balance</h2>
          <p className="big" aria-live="polite">
            <Money value={balance} currency={v.wallet.currency} />
          </p>
          {toNumber(v.wallet.held) > 0 ? <p className="muted">{formatMoney(v.wallet.held)} held by calls in flight</p> : null}
          <Link to="/top-up" className="button">
            Add credits
          </Link>
        </section>
        <section className="card" aria-labelledby="alloc-title">
          <h2 id="alloc-title">Monthly allocation ({v.allocation.period})</h2>
          <AllocationBar used={v.allocation.used + v.allocation.held} monthlyTokens={v.allocation.monthlyTokens} />
          <p className="muted">
            Tier: {v.tier}. <Link to="/plan">Change plan</Link>
          </p>
        </section>
        <section className="card" aria-labelledby="spend-title">
          <h2 id="spend-title">Spend this month</h2>
          {limit.enabled && limit.monthlyLimit ? (
            <>
              <progress
                aria-label="Spend against the spending limit"
                max={toNumber(limit.monthlyLimit)}
                value={Math.min(toNumber(v.settings.monthlySpend), toNumber(limit.monthlyLimit))}
              />
              <p>
                <Money value={v.settings.monthlySpend} currency={v.wallet.currency} /> of{' '}
                <Money value={limit.monthlyLimit} currency={v.wallet.currency} /> (
                {spendingLimitNote(limit.action, v.settings.monthlySpend, limit.monthlyLimit)})
              </p>
            </>
          ) : (
            <p>
              <Money value={v.settings.monthlySpend} currency={v.wallet.currency} /> spent; no spending limit.{' '}
              <Link to="/settings">Set one</Link>
            </p>
          )}
        </section>
      </div>
      <section className="card" aria-labelledby="recent-title">
        <h2 id="recent-title">Recent notifications {v.notifications.unreadCount > 0 ? `(${v.notifications.unreadCount} unread)` : ''}</h2>
        {v.notifications.nodes.length === 0 ? (
          <Empty>No notifications yet.</Empty>
        ) : (
          <ul className="plain">
            {v.notifications.nodes.map((n) => (
              <li key={n.id}>
                {n.read ? '' : <strong>New: </strong>}
                {n.subject} <span className="muted">{formatUtcDateTime(n.createdAt)}</span>
              </li>
            ))}
          </ul>
        )}
        <Link to="/notifications">All notifications</Link>
      </section>
    </>
  );
}
