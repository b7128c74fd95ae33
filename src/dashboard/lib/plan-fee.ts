// What the Plan page says before a switch: whether a monthly fee is charged now. A tier's fee is
// charged at most once per period (calendar month, UTC): a tier whose fee this period is paid
// already (Allocation.feePaidTier) is taken again for nothing.
import { formatMoney, toNumber } from './money.js';

export function feeNotice(tier: string, monthlyFee: string, feePaidTier: string | null | undefined): string {
  if (toNumber(monthlyFee) <= 0) return 'No fee is charged.';
  if (feePaidTier === tier) return `This month's fee for ${tier} is paid already: nothing is charged now.`;
  return `The fee of ${formatMoney(monthlyFee, { currency: 'USD' })} is charged from your wallet now.`;
}
