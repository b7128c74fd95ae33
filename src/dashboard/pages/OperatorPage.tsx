// Operators: accounts (search, tier, balance), change a tier, credit a wallet; models' availability.
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import type { Tier } from '../gql/graphql';
import { normalizeAmount } from '../lib/money';
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

function AccountRow({
  a,
  onChanged,
}: {
  a: { id: string; email: string; tier: Tier; wallet: { balance: string; currency: string } };
  onChanged: () => void;
}) {
  const [tier, setTier] = useState<Tier>(a.tier);
  const [credit, setCredit] = useState('');
  const [tierState, setAccountTier] = useMutation(SetTierDoc);
  const [creditState, creditWallet] = useMutation(CreditDoc);
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
        <label className="sr-only" htmlFor={`credit-${a.id}`}>{`Credit amount for ${a.email}`}</label>
        <input id={`credit-${a.id}`} inputMode="decimal" size={8} value={credit} onChange={(e) => setCredit(e.target.value)} />{' '}
        <button
          type="button"
          disabled={!credit || creditState.fetching}
          onClick={async () => {
            const r = await creditWallet({
              input: { accountId: a.id, amount: normalizeAmount(credit), type: 'bonus', description: 'Credit from the operator dashboard' },
            });
            if (r.data) {
              setCredit('');
              onChanged();
            }
          }}
        >
          Credit
        </button>
        {creditState.error ? <ErrorMessage error={creditState.error} /> : null}
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
  const goTo = (next: string[]) => {
    refocus();
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
              setCursors([]);
            }}
            placeholder="e-mail contains…"
          />
        </div>
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
                    onChanged={() => refetch({ requestPolicy: 'network-only' })}
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
      <section aria-label="Model availability">
        <ModelsPage />
      </section>
    </>
  );
}
