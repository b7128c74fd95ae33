import { formatMoney } from '../lib/money';

/** An amount, two decimals, tabular figures. */
export function Money({ value, currency, sign }: { value: string | null | undefined; currency?: string; sign?: boolean }) {
  return <span className="money">{formatMoney(value, { currency, sign })}</span>;
}
