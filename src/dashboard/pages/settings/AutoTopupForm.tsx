import type { FormEvent } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { normalizeAmount } from '../../lib/money';
import { ChangedElsewhere } from './ChangedElsewhere';
import { SaveStatus } from './SaveStatus';
import { useSeededForm } from './use-seeded-form';

const UpdateDoc = graphql(`
  mutation UpdateAutoTopup($input: AutoTopupInput!) {
    updateAutoTopup(input: $input) {
      enabled
      threshold
      amount
    }
  }
`);

/**
 * Why tollgate turned automatic top-up off, said once: the server's reasons begin "Turned off"
 * themselves ("Turned off after 3 failed automatic top-ups in a row; …"); any other gets it.
 */
const turnedOff = (reason: string) => (/^turned off\b/i.test(reason.trim()) ? reason : `Turned off: ${reason}`);

/** The server's messages name the fields by their API names: in this form's words instead. */
const NAMES = { threshold: 'the balance to top up at', amount: 'the top-up amount' };

export function AutoTopupForm({
  current,
  onSaved,
}: {
  current: { enabled: boolean; threshold?: string | null; amount?: string | null; disabledReason?: string | null };
  onSaved: () => void;
}) {
  const form = useSeededForm({ enabled: current.enabled, threshold: current.threshold ?? '', amount: current.amount ?? '' });
  const { enabled, threshold, amount } = form.values;
  const [state, update] = useMutation(UpdateDoc);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void form.save(async (v) => {
      const r = await update({
        input: { enabled: v.enabled, threshold: normalizeAmount(v.threshold) || null, amount: normalizeAmount(v.amount) || null },
      });
      if (!r.error) onSaved();
      return !r.error;
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="at-title">
      <h2 id="at-title">Automatic top-up</h2>
      {current.disabledReason ? <p className="notice">{turnedOff(current.disabledReason)}</p> : null}
      {form.changedElsewhere ? <ChangedElsewhere onDiscard={form.discard} /> : null}
      <label className="check">
        <input type="checkbox" checked={enabled} onChange={(e) => form.edit({ enabled: e.target.checked })} /> Enable automatic top-up
      </label>
      <Field
        label="Top up when the balance falls below"
        inputMode="decimal"
        value={threshold}
        onChange={(e) => form.edit({ threshold: e.target.value })}
      />
      <Field
        label="Top-up amount"
        inputMode="decimal"
        value={amount}
        onChange={(e) => form.edit({ amount: e.target.value })}
        hint="10.00 to 499.99, charged to the card saved at your last checkout."
      />
      <button type="submit" disabled={state.fetching}>
        Save automatic top-up
      </button>
      <SaveStatus error={form.failed ? state.error : null} saved={form.saved} names={NAMES} />
    </form>
  );
}
