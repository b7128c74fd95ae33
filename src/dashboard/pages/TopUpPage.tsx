// Top up: the amount, the bonus and credits previewed as you type (topUpQuote), and the "Top up"
// button that goes to the processor's checkout. 500 and more point to the operator's sales contact.
// The hint and the contact come from Query.topUpTerms (the operator's bonus table and settings).
import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { BonusPreview } from '../components/BonusPreview';
import { Field } from '../components/Field';
import { Link } from '../components/Link';
import { Money } from '../components/Money';
import { ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import { formatMoney, toNumber } from '../lib/money';
import { checkTopUpAmount, termsHint } from '../lib/top-up-amount';
import { formatUtcDateTime } from '../lib/utc-time';

const QuoteDoc = graphql(`
  query TopUpQuote($amount: Decimal!) {
    topUpQuote(amount: $amount) {
      amount
      bonus
      bonusPercent
      credits
      currency
    }
  }
`);

const TermsDoc = graphql(`
  query TopUpTerms {
    topUpTerms {
      minimumAmount
      salesThreshold
      currency
      bonusTable {
        minAmount
        percent
      }
      salesContact
    }
  }
`);

// Whether the account's plan pays from the wallet at all: on one that does not (free), credits wait.
const PlanDoc = graphql(`
  query TopUpPlan {
    viewer {
      id
      tier
    }
    plans {
      tier
      monthlyTokens
      overage
      monthlyFee
    }
  }
`);

// Checkouts started and not paid yet (the server expires those past their time as it lists them):
// a checkout left before paying can be found again here.
const OpenCheckoutsDoc = graphql(`
  query OpenCheckouts($first: Int!) {
    viewer {
      id
      topUps(first: $first, status: open) {
        nodes {
          id
          amount
          credits
          currency
          checkoutUrl
          createdAt
          expiresAt
        }
      }
    }
  }
`);

/** Open checkouts listed, newest first. */
const OPEN_SHOWN = 3;

const TopUpDoc = graphql(`
  mutation TopUp($amount: Decimal!, $idempotencyKey: String) {
    topUp(amount: $amount, idempotencyKey: $idempotencyKey) {
      id
      checkoutUrl
    }
  }
`);

function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

export default function TopUpPage() {
  const [text, setText] = useState('');
  const check = useMemo(() => checkTopUpAmount(text), [text]);
  const amount = useDebounced(check.kind === 'ok' ? check.amount : null, 200);
  const [quote] = useQuery({ query: QuoteDoc, variables: { amount: amount ?? '0' }, pause: amount === null });
  const [topUp, start] = useMutation(TopUpDoc);
  const [terms] = useQuery({ query: TermsDoc });
  const [plan] = useQuery({ query: PlanDoc });
  const [open] = useQuery({ query: OpenCheckoutsDoc, variables: { first: OPEN_SHOWN }, requestPolicy: 'cache-and-network' });
  const openCheckouts = (open.data?.viewer.topUps.nodes ?? []).filter((t) => t.checkoutUrl);
  const myPlan = plan.data?.plans.find((p) => p.tier === plan.data?.viewer.tier);
  // No overage and no fee: nothing on this plan is ever paid from the wallet.
  const walletUnused =
    myPlan !== undefined &&
    myPlan.monthlyTokens !== null &&
    myPlan.monthlyTokens !== undefined &&
    !myPlan.overage &&
    toNumber(myPlan.monthlyFee) === 0;
  const salesContact = terms.data?.topUpTerms.salesContact ?? null;
  // One idempotency key per amount: a double click opens one checkout.
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new key whenever the amount's text changes, on purpose.
  const idempotencyKey = useMemo(() => `dash-${crypto.randomUUID()}`, [text]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (check.kind !== 'ok') return;
    const r = await start({ amount: check.amount, idempotencyKey });
    const url = r.data?.topUp.checkoutUrl;
    if (url) location.assign(url);
  };
  const shown = check.kind === 'ok' && quote.data && quote.data.topUpQuote.amount && amount === check.amount ? quote.data.topUpQuote : null;
  return (
    <>
      <h1>Top up</h1>
      <section className="card narrow" aria-labelledby="topup-title">
        <h2 id="topup-title">Add credits to your wallet</h2>
        {walletUnused ? (
          <p role="note" className="notice">
            Your plan ({myPlan.tier}) does not pay from the wallet: past its monthly allocation calls are refused, whatever the wallet
            holds. Credits are used once you move to a plan that pays from the wallet (see <Link to="/plan">Plan</Link>); they are not
            refunded.
          </p>
        ) : null}
        <form onSubmit={submit}>
          <Field
            label="Amount"
            inputMode="decimal"
            autoComplete="off"
            placeholder="50.00"
            hint={terms.data ? termsHint(terms.data.topUpTerms) : undefined}
            error={check.kind === 'invalid' || check.kind === 'too_small' ? check.message : null}
            value={text}
            onChange={(e) => setText(e.target.value)}
          />
          {check.kind === 'sales' ? (
            <p role="status" className="notice">
              {check.message} {salesContact ? <a href={salesContact}>Contact sales</a> : 'Ask the operator of this service.'}
            </p>
          ) : null}
          {shown ? <BonusPreview quote={shown} /> : check.kind === 'ok' && quote.fetching ? <Loading what="the bonus" /> : null}
          {quote.error && check.kind === 'ok' ? <ErrorMessage error={quote.error} title="Could not quote" /> : null}
          {topUp.error ? <ErrorMessage error={topUp.error} title="Could not start the checkout" /> : null}
          <button type="submit" className="primary" disabled={check.kind !== 'ok' || topUp.fetching}>
            Top up
          </button>
        </form>
        <p className="muted">You pay at the payment processor's checkout page and come back here.</p>
      </section>
      {openCheckouts.length > 0 ? (
        <section className="card narrow" aria-labelledby="open-title">
          <h2 id="open-title">Checkouts not paid yet</h2>
          <ul className="plain">
            {openCheckouts.map((t) => (
              <li key={t.id}>
                <Money value={t.amount} currency={t.currency} /> (<Money value={t.credits} currency={t.currency} /> in credits), started{' '}
                {formatUtcDateTime(t.createdAt)}
                {t.expiresAt ? `, payable until ${formatUtcDateTime(t.expiresAt)}` : ''}.{' '}
                <a
                  href={t.checkoutUrl!}
                  aria-label={`Continue to payment: ${formatMoney(t.amount, { currency: t.currency })}, started ${formatUtcDateTime(t.createdAt)}`}
                >
                  Continue to payment
                </a>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </>
  );
}
