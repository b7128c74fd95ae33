// Where the checkout's status page sends the customer back: the outcome of the top-up they come
// back from (`?top_up=` its id, which the status page's link carries), else of their latest one.
import { useQuery } from 'urql';
import { Link } from '../components/Link';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
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
  }
`);

const OUTCOME = {
  paid: 'Paid: the credits are in your wallet.',
  open: 'Waiting for the payment to be confirmed.',
  canceled: 'Canceled: nothing was charged.',
  expired: 'Expired: the checkout was not paid in time.',
  failed: 'Failed: nothing was credited.',
} as const;

export default function TopUpReturnPage() {
  const id = useRouter().search.get('top_up') ?? '';
  const [{ data, fetching, error }] = useQuery({
    query: TopUpResultDoc,
    variables: { id, byId: id !== '' },
    requestPolicy: 'network-only',
  });
  if (fetching && !data) return <Loading what="your top-up" />;
  if (error) return <ErrorMessage error={error} />;
  const t = id ? data?.viewer.topUp : data?.viewer.topUps?.nodes[0];
  return (
    <>
      <h1>Top-up result</h1>
      {!t ? (
        <Empty>{id ? 'No top-up of yours has this id.' : 'No top-up yet.'}</Empty>
      ) : (
        <section className="card narrow" aria-labelledby="outcome">
          <h2 id="outcome">{OUTCOME[t.status]}</h2>
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
            <dt>Balance now</dt>
            <dd>
              <Money value={data!.viewer.wallet.balance} currency={data!.viewer.wallet.currency} />
            </dd>
          </dl>
          {t.failureReason ? <p>{t.failureReason}</p> : null}
        </section>
      )}
      <p>
        <Link to="/">Back to the overview</Link> · <Link to="/top-up">Another top-up</Link>
      </p>
    </>
  );
}
