// Usage: tokens and cost by day and by model for a chosen month, as a chart with tables beside it.
// Days and months are UTC, as the server counts them (the allocation and the spending limit are
// per UTC calendar month), and labelled so; costs in the wallet's currency. On a phone the tables'
// rows stack, each cell labelled, so the cost is in view.
import { useState } from 'react';
import { useQuery } from 'urql';
import { Money } from '../components/Money';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { UsageChart } from '../components/UsageChart';
import { graphql } from '../gql';
import { formatTokens } from '../lib/money';
import { monthParam, withParam } from '../lib/search-params';
import { currentUtcMonth, dailySeries, modelTotals, monthRange, seriesModels } from '../lib/usage-shape';
import { useRouter } from '../router';

const UsageDoc = graphql(`
  query Usage($start: String!, $end: String!) {
    viewer {
      id
      wallet {
        currency
      }
      usage(start: $start, end: $end) {
        data {
          date
          model
          requests
          promptTokens
          completionTokens
          totalTokens
          cost
        }
      }
    }
  }
`);

export default function UsagePage() {
  // The month is kept in the address (?month=2026-02): a reload, Back or a shared link keeps it. It
  // replaces the history entry (a month field changes at each key typed), so Back leaves the page.
  const { path, search, navigate } = useRouter();
  const [thisMonth] = useState(() => currentUtcMonth(new Date()));
  const month = monthParam(search.get('month')) ?? thisMonth;
  const setMonth = (next: string) => navigate(withParam(path, search, 'month', next), { replace: true });
  const range = monthRange(month);
  const [{ data, fetching, error }, refetch] = useQuery({ query: UsageDoc, variables: range });
  const currency = data?.viewer.wallet.currency;
  // Grouped by model (the default), every row names its model.
  const rows = (data?.viewer.usage.data ?? []).map((r) => ({ ...r, model: r.model ?? '' }));
  const totals = modelTotals(rows);
  return (
    <>
      <h1>Usage</h1>
      <div className="field inline">
        <label htmlFor="usage-month">Month (UTC)</label>
        <input
          id="usage-month"
          type="month"
          value={month}
          onChange={(e) => {
            const picked = monthParam(e.target.value);
            if (picked) setMonth(picked);
          }}
        />
      </div>
      {fetching && !data ? <Loading what="usage" /> : null}
      {error ? (
        <ErrorMessage
          error={error}
          title={data ? 'Could not refresh: showing usage as last loaded' : 'Could not load usage'}
          onRetry={() => refetch({ requestPolicy: 'network-only' })}
        />
      ) : null}
      {data && rows.length === 0 ? <Empty>No usage in {month} (UTC).</Empty> : null}
      {rows.length > 0 ? (
        <>
          <UsageChart days={dailySeries(rows, month)} models={seriesModels(rows)} />
          <div className="table-wrap stack">
            <table>
              <caption>By model, {month} (UTC)</caption>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Cost</th>
                </tr>
              </thead>
              <tbody>
                {totals.map((t) => (
                  <tr key={t.model}>
                    <th scope="row">{t.model}</th>
                    <td data-label="Requests">{formatTokens(t.requests)}</td>
                    <td data-label="Tokens">{formatTokens(t.totalTokens)}</td>
                    <td data-label="Cost">
                      <Money value={t.cost} currency={currency} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="table-wrap stack">
            <table>
              <caption>By day (UTC)</caption>
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  <th scope="col">Model</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Prompt tokens</th>
                  <th scope="col">Completion tokens</th>
                  <th scope="col">Cost</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={`${r.date}-${r.model}`}>
                    <td data-label="Day (UTC)">{r.date}</td>
                    <td data-label="Model">{r.model}</td>
                    <td data-label="Requests">{formatTokens(r.requests)}</td>
                    <td data-label="Prompt tokens">{formatTokens(r.promptTokens)}</td>
                    <td data-label="Completion tokens">{formatTokens(r.completionTokens)}</td>
                    <td data-label="Cost">
                      <Money value={r.cost} currency={currency} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
    </>
  );
}
