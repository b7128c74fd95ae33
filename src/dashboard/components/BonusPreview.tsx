import { formatMoney } from '../lib/money';
import { previewLines, type QuoteView } from '../lib/top-up-amount';

/** What a top-up costs and adds: the amount paid, the bonus and the credits (from topUpQuote). */
export function BonusPreview({ quote }: { quote: QuoteView }) {
  const lines = previewLines(quote, formatMoney);
  return (
    <dl className="preview" aria-live="polite">
      <dt>You pay</dt>
      <dd>{lines.amount}</dd>
      <dt>Bonus</dt>
      <dd>{lines.bonus}</dd>
      <dt>Credits added</dt>
      <dd>{lines.credits}</dd>
    </dl>
  );
}
