// The top-up form's rules, checked as the person types, before the API quotes the bonus: 10 to
// 499.99 with at most two decimals; 500 and more are arranged with sales (section 2.11).
import { stripAmount, THOUSANDS } from './money.js';

export const MINIMUM_TOP_UP = 10;
export const SALES_THRESHOLD = 500;

export type AmountCheck =
  | { kind: 'empty' }
  | { kind: 'invalid'; message: string }
  | { kind: 'too_small'; message: string }
  | { kind: 'sales'; message: string }
  | { kind: 'ok'; amount: string };

export function checkTopUpAmount(input: string): AmountCheck {
  // "$ 50" as the settings forms take it (stripAmount): a $ with or without a space after it.
  let text = stripAmount(input);
  if (text === '') return { kind: 'empty' };
  // A comma separates thousands (1,250.00) and nothing else: "12,5" is refused, not read as 125.
  if (text.includes(',')) {
    if (!THOUSANDS.test(text))
      return { kind: 'invalid', message: 'Use a point for decimals, such as 12.50 (a comma only separates thousands: 1,250).' };
    text = text.replace(/,/g, '');
  }
  if (!/^\d+(\.\d{1,2})?$/.test(text)) return { kind: 'invalid', message: 'Enter an amount such as 50 or 49.99 (at most two decimals).' };
  const value = Number(text);
  if (value < MINIMUM_TOP_UP) return { kind: 'too_small', message: `The smallest top-up is ${MINIMUM_TOP_UP}.00.` };
  if (value >= SALES_THRESHOLD)
    return { kind: 'sales', message: `Top-ups of ${SALES_THRESHOLD}.00 and more are arranged with our sales team.` };
  return { kind: 'ok', amount: text.replace(/^0+(?=\d)/, '') };
}

export interface QuoteView {
  amount: string;
  bonus: string;
  bonusPercent: number;
  credits: string;
  currency: string;
}

/** The preview's lines, e.g. "Bonus: +2.50 USD (5%)" and "Credits added: 52.50 USD". */
export function previewLines(
  q: QuoteView,
  format: (v: string, o: { currency?: string; sign?: boolean }) => string,
): { amount: string; bonus: string; credits: string } {
  const pct = Number.isInteger(q.bonusPercent) ? String(q.bonusPercent) : q.bonusPercent.toFixed(1);
  return {
    amount: format(q.amount, { currency: q.currency }),
    bonus: Number(q.bonus) > 0 ? `${format(q.bonus, { currency: q.currency, sign: true })} (${pct}%)` : 'No bonus at this amount',
    credits: format(q.credits, { currency: q.currency }),
  };
}

/** "10.00 to 499.99, in USD. Bonus: 5% from 50, 10% from 100." from the operator's terms. */
export function termsHint(t: {
  minimumAmount: string;
  salesThreshold: string;
  currency: string;
  bonusTable: { minAmount: string; percent: number }[];
}): string {
  const most = (Number(t.salesThreshold) - 0.01).toFixed(2);
  const bonus = t.bonusTable.filter((r) => r.percent > 0).map((r) => `${r.percent}% from ${Number(r.minAmount)}`);
  return `${Number(t.minimumAmount).toFixed(2)} to ${most}, in ${t.currency}.${bonus.length ? ` Bonus: ${bonus.join(', ')}.` : ''}`;
}
