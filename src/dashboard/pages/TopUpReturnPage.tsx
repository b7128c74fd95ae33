// Where the checkout's status page sends the customer back: the outcome of the top-up they come
// back from (`?top_up=` its id, which the status page's link carries), else of their latest one.
// While the payment is still being confirmed it is read again every few seconds (as the server's
// own status page refreshes), with a link back to the checkout; a top-up whose payment was later
// refunded or disputed says so.
import { useEffect } from 'react';
import { useQuery } from 'urql';
import { Link } from '../components/Link';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import { toNumber } from '../lib/money';
import { disputeText, shownFailureReason } from '../lib/top-up-outcome';
import { useRouter } from '../router';

const TopUpResultDoc = graphql(`
  query TopUpResult($id: ID!, $byId: Boolean!) {
    viewer {
      id
      wallet {
        balance
        currency
      }
      topUp(id: $id) @include(if: $byId) {
        ...TopUpOutcome
      }
      topUps(first: 1) @skip(if: $byId) {
        nodes {
          ...TopUpOutcome
        }
      }
    }
  }

  fragment TopUpOutcome on TopUp {
    id
    status
    amount
    bonus
    credits
    currency
    failureReason
    checkoutUrl
    refunded
    dispute
  }
`);

const OUTCOME = {
  paid: 'Paid: the credits are in your wallet.',
  open: 'Waiting for the payment to be confirmed.',
  canceled: 'Canceled: nothing was charged.',
  expired: 'Expired: the checkout was not paid in time.',
  failed: 'Failed: nothing was credited.',
} as const;

/** As the server's checkout status page refreshes while a payment is being confirmed. */
const POLL_MS = 3000;

export default function TopUpReturnPage() {
  const id = useRouter().search.get('top_up') ?? '';
  const [{ data, fetching, error }, refetch] = useQuery({
    query: TopUpResultDoc,
    variables: { id, byId: id !== '' },
    requestPolicy: 'network-only',
  });
  const t = id ? data?.viewer.topUp : data?.viewer.topUps?.nodes[0];
  const waiting = t?.status === 'open';
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), POLL_MS);
    return () => clearInterval(timer);
  }, [waiting, refetch]);
  if (fetching && !data) return <Loading what="your top-up" />;
  if (!data) return error ? <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} /> : null;
  const refunded = t ? toNumber(t.refunded) > 0 : false;
  const heading = !t
    ? ''
    : t.status === 'paid' && t.dispute === 'withdrawn'
      ? 'Disputed: the payment is disputed and its credits were taken back.'
      : t.status === 'paid' && refunded
        ? 'Refunded: the credits of the refunded payment were taken back.'
        : OUTCOME[t.status];
  return (
    <>
      <h1>Top-up result</h1>
      {/* A failed refresh keeps what was shown; the next one (or Try again) may do better. */}
      {error ? <ErrorMessage error={error} title="Could not refresh" onRetry={() => refetch({ requestPolicy: 'network-only' })} /> : null}
      {!t ? (
        <Empty>{id ? 'No top-up of yours has this id.' : 'No top-up yet.'}</Empty>
      ) : (
        <section className="card narrow" aria-labelledby="outcome">
          {/* Live: "Waiting for the payment…" turning into "Paid: …" as the page reads it again is said. */}
          <h2 id="outcome" aria-live="polite" aria-atomic="true">
            {heading}
          </h2>
          <dl className="preview">
            <dt>{t.status === 'paid' ? 'Paid' : 'Amount'}</dt>
            <dd>
              <Money value={t.amount} currency={t.currency} />
            </dd>
            {/* A canceled, expired or failed top-up credits nothing: no credits to list. */}
            {t.status === 'paid' || t.status === 'open' ? (
              <>
                <dt>{t.status === 'paid' ? 'Credits added' : 'Credits'}</dt>
                <dd>
                  <Money value={t.credits} currency={t.currency} />
                </dd>
              </>
            ) : null}
            {refunded ? (
              <>
                <dt>Refunded</dt>
                <dd>
                  <Money value={t.refunded} currency={t.currency} />
                </dd>
              </>
            ) : null}
            {t.dispute ? (
              <>
                <dt>Dispute</dt>
                <dd>{disputeText(t.dispute)}</dd>
              </>
            ) : null}
            <dt>Balance now</dt>
            <dd>
              <Money value={data.viewer.wallet.balance} currency={data.viewer.wallet.currency} />
            </dd>
          </dl>
          {shownFailureReason(t) ? <p>{shownFailureReason(t)}</p> : null}
          {waiting ? (
            <p className="muted">
              This page updates by itself.{' '}
              {t.checkoutUrl ? (
                <>
                  Not paid yet? <a href={t.checkoutUrl}>Go back to the checkout</a>.
                </>
              ) : null}
            </p>
          ) : null}
        </section>
      )}
      <p>
        <Link to="/">Back to the overview</Link> · <Link to="/top-up">Another top-up</Link>
      </p>
    </>
  );
}
