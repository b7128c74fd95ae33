import { formatTokens } from '../lib/money';

/** The monthly token allocation used, as a bar (a native progress element: a progressbar with its name and value). */
export function AllocationBar({ used, monthlyTokens }: { used: number; monthlyTokens: number | null | undefined }) {
  if (monthlyTokens === null || monthlyTokens === undefined) {
    return <p>{formatTokens(used)} tokens used this month (unlimited allocation).</p>;
  }
  if (monthlyTokens === 0) return <p>No monthly token allocation on this plan.</p>;
  const pct = Math.min(100, Math.round((used / monthlyTokens) * 100));
  return (
    <div className="bar">
      <progress aria-label="Monthly allocation used" max={monthlyTokens} value={Math.min(used, monthlyTokens)} />
      <p>
        {formatTokens(used)} of {formatTokens(monthlyTokens)} tokens ({pct}%)
      </p>
    </div>
  );
}
