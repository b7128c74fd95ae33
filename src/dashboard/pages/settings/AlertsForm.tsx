import type { FormEvent } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import { ChangedElsewhere } from './ChangedElsewhere';
import { SaveStatus } from './SaveStatus';
import { useSeededForm } from './use-seeded-form';

const UpdateDoc = graphql(`
  mutation UpdateAlertSettings($input: AlertSettingsInput!) {
    updateAlertSettings(input: $input) {
      allocation80
      extraRecipients
    }
  }
`);

const ALERTS = [
  ['allocation80', '80% of the monthly allocation used'],
  ['allocation100', 'Monthly allocation used up'],
  ['lowBalance', 'Low balance'],
  ['spendingLimit', 'Spending limit reached'],
  ['autoTopup', 'Automatic top-up problems'],
  ['monthlyFee', 'Monthly fee charged or unpaid'],
  ['rateLimit', 'Frequent rate-limit hits'],
  ['unusualUsage', 'Unusual usage'],
] as const;

type AlertKey = (typeof ALERTS)[number][0];

export function AlertsForm({
  current,
  onSaved,
}: {
  current: Record<AlertKey, boolean> & { extraRecipients: string[] };
  onSaved: () => void;
}) {
  const form = useSeededForm({
    on: Object.fromEntries(ALERTS.map(([k]) => [k, current[k]])) as Record<AlertKey, boolean>,
    recipients: current.extraRecipients.join(', '),
  });
  const { on, recipients } = form.values;
  const [state, update] = useMutation(UpdateDoc);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void form.save(async (v) => {
      const extraRecipients = v.recipients
        .split(/[,\s]+/)
        .map((s) => s.trim())
        .filter(Boolean);
      const r = await update({ input: { ...v.on, extraRecipients } });
      if (!r.error) onSaved();
      return !r.error;
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="al-title">
      <h2 id="al-title">E-mail alerts</h2>
      {form.changedElsewhere ? <ChangedElsewhere onDiscard={form.discard} /> : null}
      <fieldset>
        <legend>Send me an e-mail for</legend>
        {ALERTS.map(([k, label]) => (
          <label className="check" key={k}>
            <input type="checkbox" checked={on[k]} onChange={(e) => form.edit({ on: { ...on, [k]: e.target.checked } })} /> {label}
          </label>
        ))}
        <p className="muted">Receipts of top-ups are always sent.</p>
      </fieldset>
      <Field
        label="Extra recipients"
        value={recipients}
        onChange={(e) => form.edit({ recipients: e.target.value })}
        hint="Up to 5 addresses, separated by commas."
      />
      <button type="submit" disabled={state.fetching}>
        Save alerts
      </button>
      <SaveStatus error={form.failed ? state.error : null} saved={form.saved} />
    </form>
  );
}
