// What the overview says beside spend against a blocking spending limit. The server refuses a call
// whose cost would take the month's spend past the limit, so calls are refused before the spend
// reaches it ("calls are refused past it" read as if calls ran until then). What the next call
// would cost depends on its prompt, which the dashboard cannot know: it says which calls are
// refused, and that the limit is reached once the spend is at it.

import { decimalNanos } from './money.js';

export function spendingLimitNote(action: 'alert' | 'block', spent: string, limit: string): string {
  if (action === 'alert') return 'an alert past it';
  const s = decimalNanos(spent);
  const l = decimalNanos(limit);
  return s !== null && l !== null && s >= l ? 'reached: calls are refused' : 'calls that would pass it are refused';
}
