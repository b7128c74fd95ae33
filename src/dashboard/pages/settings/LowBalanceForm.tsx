import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { normalizeAmount } from '../../lib/money';
import { SaveStatus } from './SaveStatus';

const SetDoc = graphql(`
  mutation SetLowBalanceAlert($threshold: Decimal) {
    setLowBalanceAlert(threshold: $threshold) {
      lowBalanceAlert
    }
  }
`);

export function LowBalanceForm({ current, onSaved }: { current: string | null; onSaved: () => void }) {
  const [value, setValue] = useState(current ?? '');
  const [state, set] = useMutation(SetDoc);
  const [saved, setSaved] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await set({ threshold: value.trim() === '' ? null : normalizeAmount(value) });
    setSaved(!r.error);
    if (!r.error) onSaved();
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="lb-title">
      <h2 id="lb-title">Low-balance alert</h2>
      <Field
        label="Low-balance threshold"
        inputMode="decimal"
        value={value}
        onChange={(e) => setValue(e.target.value)}
        hint="You get an alert when the balance falls below it. Empty: off."
      />
      <button type="submit" disabled={state.fetching}>
        Save threshold
      </button>
      <SaveStatus error={state.error} saved={saved} />
    </form>
  );
}
