// Transactions: the ledger, newest first, paged, filtered by type, exportable as CSV (all of it, or
// nothing and an error). Amounts in the wallet's currency; on a phone each transaction's cells
// stack, labelled.
import { useState } from 'react';
import { type CombinedError, useClient, useQuery } from 'urql';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import type { TransactionsQuery, TransactionType } from '../gql/graphql';
import { toCsv } from '../lib/csv';
import { oneOfParam, withParam } from '../lib/search-params';
import { formatUtcDateTime } from '../lib/utc-time';
import { useRouter } from '../router';

const TransactionsDoc = graphql(`
  query Transactions($first: Int!, $after: String, $type: TransactionType) {
    viewer {
      id
      wallet {
        currency
        transactions(first: $first, after: $after, order: desc, type: $type) {
          nodes {
            id
            type
            amount
            balanceAfter
            createdAt
            description
            reference
          }
          pageInfo {
            hasNextPage
            endCursor
          }
        }
      }
    }
  }
`);

const PAGE = 25;
const TYPES: TransactionType[] = ['topup', 'usage', 'bonus', 'refund', 'subscription'];

export default function TransactionsPage() {
  // The type is kept in the address (?type=usage): a reload, Back or a shared link keeps it. It
  // replaces the history entry, as the usage page's month does, so Back leaves the page.
  const { path, search, navigate } = useRouter();
  const type: TransactionType | '' = oneOfParam(search.get('type'), TYPES) ?? '';
  // The pages walked through, for the type they were walked with (another type starts at the first).
  const [paging, setPaging] = useState<{ type: TransactionType | ''; cursors: (string | null)[] }>({ type, cursors: [null] });
  const cursors = paging.type === type ? paging.cursors : [null];
  const setCursors = (next: (string | null)[]) => setPaging({ type, cursors: next });
  const after = cursors.at(-1) ?? null;
  const [{ data, fetching, error }, refetch] = useQuery({
    query: TransactionsDoc,
    variables: { first: PAGE, after, type: type || null },
  });
  const client = useClient();
  const [exporting, setExporting] = useState(false);
  const conn = data?.viewer.wallet.transactions;
  const currency = data?.viewer.wallet.currency;
  // A request of the export that failed (or answered nothing) stops it: a file missing rows, or
  // with none, would look like the whole ledger. Nothing is downloaded then, and the page says why.
  const [exportError, setExportError] = useState<CombinedError | Error | null>(null);
  const exportCsv = async () => {
    setExporting(true);
    setExportError(null);
    try {
      const rows: string[][] = [];
      let cursor: string | null = null;
      do {
        const r: { data?: TransactionsQuery; error?: CombinedError } = await client
          .query(TransactionsDoc, { first: 1000, after: cursor, type: type || null }, { requestPolicy: 'network-only' })
          .toPromise();
        if (r.error) {
          setExportError(r.error);
          return;
        }
        const c: TransactionsQuery['viewer']['wallet']['transactions'] | undefined = r.data?.viewer.wallet.transactions;
        if (!c) {
          setExportError(new Error('The server sent no transactions.'));
          return;
        }
        for (const t of c.nodes) rows.push([t.createdAt, t.type, t.amount, t.balanceAfter, t.description, t.reference ?? '']);
        cursor = c.pageInfo.hasNextPage ? (c.pageInfo.endCursor ?? null) : null;
      } while (cursor);
      const blob = new Blob([toCsv(['created_at', 'type', 'amount', 'balance_after', 'description', 'reference'], rows)], {
        type: 'text/csv',
      });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = `transactions${type ? `-${type}` : ''}.csv`;
      a.click();
      URL.revokeObjectURL(a.href);
    } finally {
      setExporting(false);
    }
  };
  return (
    <>
      <h1>Transactions</h1>
      <div className="toolbar">
        <div className="field inline">
          <label htmlFor="tx-type">Type</label>
          <select
            id="tx-type"
            value={type}
            onChange={(e) => {
              navigate(withParam(path, search, 'type', e.target.value || null), { replace: true });
            }}
          >
            <option value="">All</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <button type="button" onClick={exportCsv} disabled={exporting}>
          Export CSV
        </button>
      </div>
      {exportError ? (
        <ErrorMessage error={exportError} title="Could not export the transactions: nothing was downloaded" onRetry={exportCsv} />
      ) : null}
      {fetching && !data ? <Loading what="transactions" /> : null}
      {error ? (
        <ErrorMessage
          error={error}
          title={data ? 'Could not refresh: showing the transactions as last loaded' : 'Could not load the transactions'}
          onRetry={() => refetch({ requestPolicy: 'network-only' })}
        />
      ) : null}
      {conn && conn.nodes.length === 0 ? <Empty>No transactions{type ? ` of type ${type}` : ''} yet.</Empty> : null}
      {conn && conn.nodes.length > 0 ? (
        <div className="table-wrap stack">
          <table>
            <caption>Ledger, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Date</th>
                <th scope="col">Type</th>
                <th scope="col">Description</th>
                <th scope="col">Amount</th>
                <th scope="col">Balance after</th>
              </tr>
            </thead>
            <tbody>
              {conn.nodes.map((t) => (
                <tr key={t.id}>
                  <td data-label="Date">{formatUtcDateTime(t.createdAt)}</td>
                  <td data-label="Type">{t.type}</td>
                  <td data-label="Description">{t.description}</td>
                  <td data-label="Amount">
                    <Money value={t.amount} currency={currency} sign />
                  </td>
                  <td data-label="Balance after">
                    <Money value={t.balanceAfter} currency={currency} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <div className="toolbar">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <button
          type="button"
          disabled={!conn?.pageInfo.hasNextPage}
          onClick={() => setCursors([...cursors, conn!.pageInfo.endCursor ?? null])}
        >
          Next page
        </button>
      </div>
    </>
  );
}
