// Operators: accounts (search, tier, balance), change a tier, credit a wallet; models' availability.
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import type { Tier } from '../gql/graphql';
import { formatMoney, normalizeAmount } from '../lib/money';
import { useRefocus } from '../lib/use-refocus';
import ModelsPage from './ModelsPage';

const AccountsDoc = graphql(`
  query OperatorAccounts($search: String, $first: Int!, $after: ID) {
    accounts(search: $search, first: $first, after: $after) {
      id
      email
      tier
      wallet {
        balance
        currency
      }
    }
  }
`);

const SetTierDoc = graphql(`
  mutation OperatorSetTier($accountId: ID!, $tier: Tier!) {
    setAccountTier(accountId: $accountId, tier: $tier) {
      id
      tier
    }
  }
`);

const CreditDoc = graphql(`
  mutation OperatorCredit($input: CreditWalletInput!) {
    creditWallet(input: $input) {
      id
      balanceAfter
    }
  }
`);

const TIERS: Tier[] = ['free', 'developer', 'startup', 'enterprise'];
/** Accounts per page; one more is asked for, to know whether there is a next page. */
const PAGE = 50;

/** A credit's amount as the server takes it: digits, with a point for decimals. */
const CREDIT_AMOUNT = /^\d+(\.\d+)?$/;

function AccountRow({
  a,
  focusCredit,
  onChanged,
  onCredited,
}: {
  a: { id: string; email: string; tier: Tier; wallet: { balance: string; currency: string } };
  /** The row rebuilt after this account was credited: its amount field takes the focus again. */
  focusCredit: boolean;
  onChanged: () => void;
  onCredited: (message: string) => void;
}) {
  const [tier, setTier] = useState<Tier>(a.tier);
  const [credit, setCredit] = useState('');
  // The amount asked about ("Credit 1,250.50 USD to …?"), until Confirm or Cancel.
  const [asking, setAsking] = useState<string | null>(null);
  const [invalid, setInvalid] = useState<string | null>(null);
  const [tierState, setAccountTier] = useMutation(SetTierDoc);
  const [creditState, creditWallet] = useMutation(CreditDoc);
  const creditInput = useRef<HTMLInputElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: on the rebuilt row's first render only.
  useEffect(() => {
    if (focusCredit) creditInput.current?.focus();
  }, []);
  const shown = (amount: string) => formatMoney(amount, { currency: a.wallet.currency });
  const ask = (e: FormEvent) => {
    e.preventDefault();
    const amount = normalizeAmount(credit);
    if (!CREDIT_AMOUNT.test(amount)) {
      setInvalid('Enter an amount such as 25 or 1,250.50, with a point for decimals.');
      return;
    }
    setInvalid(null);
    setAsking(amount);
  };
  const cancel = () => {
    setAsking(null);
    creditInput.current?.focus();
  };
  const confirmCredit = async (amount: string) => {
    const r = await creditWallet({
      input: { accountId: a.id, amount, type: 'bonus', description: 'Credit from the operator dashboard' },
    });
    setAsking(null);
    // The confirmation's buttons are gone: the keyboard goes on from the amount field (this row's
    // until the list is read again, then the rebuilt row's).
    creditInput.current?.focus();
    if (r.data) {
      setCredit('');
      onCredited(`Credited ${shown(amount)} to ${a.email}; the balance is now ${shown(r.data.creditWallet.balanceAfter)}.`);
      onChanged();
    }
  };
  const errorId = `credit-${a.id}-error`;
  return (
    <tr>
      <th scope="row">{a.email}</th>
      <td>
        <label className="sr-only" htmlFor={`tier-${a.id}`}>{`Tier for ${a.email}`}</label>
        <select id={`tier-${a.id}`} value={tier} onChange={(e) => setTier(e.target.value as Tier)}>
          {TIERS.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>{' '}
        <button
          type="button"
          disabled={tier === a.tier || tierState.fetching}
          onClick={async () => (await setAccountTier({ accountId: a.id, tier })).data && onChanged()}
        >
          Change tier
        </button>
        {tierState.error ? <ErrorMessage error={tierState.error} /> : null}
      </td>
      <td>
        <Money value={a.wallet.balance} currency={a.wallet.currency} />
      </td>
      <td>
        {/* A form, so that Enter in the amount asks as the Credit button does. */}
        <form onSubmit={ask} aria-label={`Credit ${a.email}`}>
          <label className="sr-only" htmlFor={`credit-${a.id}`}>{`Credit amount for ${a.email}`}</label>
          <input
            id={`credit-${a.id}`}
            ref={creditInput}
            inputMode="decimal"
            size={8}
            value={credit}
            aria-invalid={invalid ? true : undefined}
            aria-describedby={invalid ? errorId : undefined}
            onChange={(e) => {
              setCredit(e.target.value);
              setAsking(null);
              setInvalid(null);
            }}
          />{' '}
          <button type="submit" disabled={!credit || creditState.fetching || asking !== null}>
            Credit
          </button>
          {invalid ? (
            <small id={errorId} className="field-error">
              {invalid}
            </small>
          ) : null}
        </form>
        {asking !== null ? (
          // biome-ignore lint/a11y/useSemanticElements: an inline group of two buttons, not a form fieldset.
          <div role="group" aria-label={`Confirm crediting ${a.email}`}>
            <p>{`Credit ${shown(asking)} to ${a.email}?`}</p>
            <button type="button" className="primary" disabled={creditState.fetching} onClick={() => confirmCredit(asking)}>
              Confirm
            </button>{' '}
            {/* biome-ignore lint/a11y/noAutofocus: the question replaces the Credit button's turn; the safe choice takes the focus. */}
            <button type="button" onClick={cancel} autoFocus>
              Cancel
            </button>
          </div>
        ) : null}
        {creditState.error ? <ErrorMessage error={creditState.error} title="Could not credit" /> : null}
      </td>
    </tr>
  );
}

export default function OperatorPage() {
  const [search, setSearch] = useState('');
  // The last account of each page before this one (a new search starts from the first page).
  const [cursors, setCursors] = useState<string[]>([]);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: AccountsDoc,
    variables: { search: search || null, first: PAGE + 1, after: cursors.at(-1) ?? null },
  });
  const accounts = data?.accounts.slice(0, PAGE);
  const hasNextPage = (data?.accounts.length ?? 0) > PAGE;
  // After a page change, focus and the view go to the list's heading once the page is on screen.
  const { heading, refocus } = useRefocus(!fetching);
  // The last credit, said in a live region outside the rows (a credited row is rebuilt).
  const [credited, setCredited] = useState<{ accountId: string; message: string } | null>(null);
  const goTo = (next: string[]) => {
    refocus();
    setCredited(null);
    setCursors(next);
  };
  return (
    <>
      <h1>Operator</h1>
      <section aria-labelledby="acc-title">
        <h2 id="acc-title" ref={heading} tabIndex={-1}>
          Accounts{cursors.length > 0 ? `, page ${cursors.length + 1}` : ''}
        </h2>
        <div className="field inline">
          <label htmlFor="acc-search">Search accounts</label>
          <input
            id="acc-search"
            type="search"
            value={search}
            onChange={(e) => {
              setSearch(e.target.value);
              setCredited(null);
              setCursors([]);
            }}
            placeholder="e-mail contains…"
          />
        </div>
        <p role="status">{credited?.message ?? ''}</p>
        {fetching && !data ? <Loading what="accounts" /> : null}
        {error ? <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} /> : null}
        {accounts && accounts.length === 0 ? <Empty>No account matches.</Empty> : null}
        {accounts && accounts.length > 0 ? (
          <div className="table-wrap">
            <table>
              <caption>Newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Account</th>
                  <th scope="col">Tier</th>
                  <th scope="col">Balance</th>
                  <th scope="col">Credit (bonus)</th>
                </tr>
              </thead>
              <tbody>
                {accounts.map((a) => (
                  <AccountRow
                    key={`${a.id}-${a.tier}-${a.wallet.balance}`}
                    a={a}
                    focusCredit={credited?.accountId === a.id}
                    onChanged={() => refetch({ requestPolicy: 'network-only' })}
                    onCredited={(message) => setCredited({ accountId: a.id, message })}
                  />
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        {cursors.length > 0 || hasNextPage ? (
          <nav className="toolbar" aria-label="Pages of accounts">
            <button type="button" disabled={cursors.length === 0} onClick={() => goTo(cursors.slice(0, -1))}>
              Previous page
            </button>{' '}
            <span>Page {cursors.length + 1}</span>{' '}
            <button type="button" disabled={!hasNextPage} onClick={() => goTo([...cursors, accounts!.at(-1)!.id])}>
              Next page
            </button>
          </nav>
        ) : null}
      </section>
      <section aria-labelledby="models-title">
        <h2 id="models-title">Model availability</h2>
        <ModelsPage headingLevel={3} />
      </section>
    </>
  );
}
