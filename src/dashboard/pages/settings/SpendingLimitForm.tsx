import { type FormEvent, useState } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import type { SpendingLimitAction } from '../../gql/graphql';
import { normalizeAmount } from '../../lib/money';
import { SaveStatus } from './SaveStatus';

const UpdateDoc = graphql(`
  mutation UpdateSpendingLimit($input: SpendingLimitInput!) {
    updateSpendingLimit(input: $input) {
      spendingLimit {
        enabled
        monthlyLimit
        action
      }
    }
  }
`);

export function SpendingLimitForm({
  current,
  onSaved,
}: {
  current: { enabled: boolean; monthlyLimit?: string | null; action: SpendingLimitAction };
  onSaved: () => void;
}) {
  const [enabled, setEnabled] = useState(current.enabled);
  const [limit, setLimit] = useState(current.monthlyLimit ?? '');
  const [action, setAction] = useState<SpendingLimitAction>(current.action);
  const [state, update] = useMutation(UpdateDoc);
  const [saved, setSaved] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await update({ input: { enabled, monthlyLimit: enabled ? normalizeAmount(limit) : null, action } });
    setSaved(!r.error);
    if (!r.error) onSaved();
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="sl-title">
      <h2 id="sl-title">Spending limit</h2>
      <label className="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enable spending limit
      </label>
      <Field
        label="Monthly limit"
        inputMode="decimal"
        disabled={!enabled}
        value={limit}
        onChange={(e) => setLimit(e.target.value)}
        hint="Wallet money charged for usage per calendar month (UTC)."
      />
      <div className="field">
        <label htmlFor="sl-action">When reached</label>
        <select id="sl-action" value={action} disabled={!enabled} onChange={(e) => setAction(e.target.value as SpendingLimitAction)}>
          <option value="block">Block calls</option>
          <option value="alert">Alert only</option>
        </select>
      </div>
      <button type="submit" disabled={state.fetching}>
        Save spending limit
      </button>
      <SaveStatus error={state.error} saved={saved} />
    </form>
  );
}
