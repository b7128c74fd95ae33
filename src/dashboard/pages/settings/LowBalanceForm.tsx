import type { FormEvent } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { normalizeAmount } from '../../lib/money';
import { ChangedElsewhere } from './ChangedElsewhere';
import { SaveStatus } from './SaveStatus';
import { useSeededForm } from './use-seeded-form';

const SetDoc = graphql(`
  mutation SetLowBalanceAlert($threshold: Decimal) {
    setLowBalanceAlert(threshold: $threshold) {
      lowBalanceAlert
    }
  }
`);

export function LowBalanceForm({ current, onSaved }: { current: string | null; onSaved: () => void }) {
  const form = useSeededForm({ threshold: current ?? '' });
  const [state, set] = useMutation(SetDoc);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void form.save(async ({ threshold }) => {
      const r = await set({ threshold: threshold.trim() === '' ? null : normalizeAmount(threshold) });
      if (!r.error) onSaved();
      return !r.error;
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="lb-title">
      <h2 id="lb-title">Low-balance alert</h2>
      {form.changedElsewhere ? <ChangedElsewhere onDiscard={form.discard} /> : null}
      <Field
        label="Low-balance threshold"
        inputMode="decimal"
        value={form.values.threshold}
        onChange={(e) => form.edit({ threshold: e.target.value })}
        hint="You get an alert when the balance falls below it. Empty: off."
      />
      <button type="submit" disabled={state.fetching}>
        Save threshold
      </button>
      <SaveStatus error={form.failed ? state.error : null} saved={form.saved} names={{ threshold: 'the low-balance threshold' }} />
    </form>
  );
}
