import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { normalizeAmount } from '../../lib/money';
import { SaveStatus } from './SaveStatus';

const UpdateDoc = graphql(`
  mutation UpdateAutoTopup($input: AutoTopupInput!) {
    updateAutoTopup(input: $input) {
      enabled
      threshold
      amount
    }
  }
`);

export function AutoTopupForm({
  current,
  onSaved,
}: {
  current: { enabled: boolean; threshold?: string | null; amount?: string | null; disabledReason?: string | null };
  onSaved: () => void;
}) {
  const [enabled, setEnabled] = useState(current.enabled);
  const [threshold, setThreshold] = useState(current.threshold ?? '');
  const [amount, setAmount] = useState(current.amount ?? '');
  const [state, update] = useMutation(UpdateDoc);
  const [saved, setSaved] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await update({
      input: { enabled, threshold: normalizeAmount(threshold) || null, amount: normalizeAmount(amount) || null },
    });
    setSaved(!r.error);
    if (!r.error) onSaved();
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="at-title">
      <h2 id="at-title">Automatic top-up</h2>
      {current.disabledReason ? <p className="notice">Turned off: {current.disabledReason}</p> : null}
      <label className="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enable automatic top-up
      </label>
      <Field
        label="Top up when the balance falls below"
        inputMode="decimal"
        value={threshold}
        onChange={(e) => setThreshold(e.target.value)}
      />
      <Field
        label="Top-up amount"
        inputMode="decimal"
        value={amount}
        onChange={(e) => setAmount(e.target.value)}
        hint="10.00 to 499.99, charged to the card saved at your last checkout."
      />
      <button type="submit" disabled={state.fetching}>
        Save automatic top-up
      </button>
      <SaveStatus error={state.error} saved={saved} />
    </form>
  );
}
