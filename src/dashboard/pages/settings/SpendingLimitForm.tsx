import type { FormEvent } from 'react';
import { useMutation } from 'urql';
import { Field } from '../../components/Field';
import { graphql } from '../../gql';
import type { SpendingLimitAction } from '../../gql/graphql';
import { normalizeAmount } from '../../lib/money';
import { ChangedElsewhere } from './ChangedElsewhere';
import { SaveStatus } from './SaveStatus';
import { useSeededForm } from './use-seeded-form';

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
  const form = useSeededForm({ enabled: current.enabled, limit: current.monthlyLimit ?? '', action: current.action });
  const { enabled, limit, action } = form.values;
  const [state, update] = useMutation(UpdateDoc);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void form.save(async (v) => {
      // Turned off, the amount is kept (the server stores it), ready for when it is turned on again.
      // Empty while on: the server says the amount is required.
      const monthlyLimit = v.limit.trim() === '' ? null : normalizeAmount(v.limit);
      const r = await update({ input: { enabled: v.enabled, monthlyLimit, action: v.action } });
      if (!r.error) onSaved();
      return !r.error;
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="sl-title">
      <h2 id="sl-title">Spending limit</h2>
      {form.changedElsewhere ? <ChangedElsewhere onDiscard={form.discard} /> : null}
      <label className="check">
        <input type="checkbox" checked={enabled} onChange={(e) => form.edit({ enabled: e.target.checked })} /> Enable spending limit
      </label>
      <Field
        label="Monthly limit"
        inputMode="decimal"
        disabled={!enabled}
        value={limit}
        onChange={(e) => form.edit({ limit: e.target.value })}
        hint="Wallet money charged for usage per calendar month (UTC). Kept while the limit is off."
      />
      <div className="field">
        <label htmlFor="sl-action">When reached</label>
        <select
          id="sl-action"
          value={action}
          disabled={!enabled}
          onChange={(e) => form.edit({ action: e.target.value as SpendingLimitAction })}
        >
          <option value="block">Block calls</option>
          <option value="alert">Alert only</option>
        </select>
      </div>
      <button type="submit" disabled={state.fetching}>
        Save spending limit
      </button>
      <SaveStatus error={form.failed ? state.error : null} saved={form.saved} />
    </form>
  );
}
