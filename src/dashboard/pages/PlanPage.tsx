// Plan: the tiers side by side and a switch between them (a monthly fee is charged from the
// wallet as a subscription transaction when a tier with one is taken). A tier customers may not
// choose themselves (enterprise by default) says so instead of offering a switch.
import { useRef, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { Money } from '../components/Money';
import { ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import type { Tier } from '../gql/graphql';
import { formatTokens, toNumber } from '../lib/money';
import { feeNotice } from '../lib/plan-fee';
import { useRefocus } from '../lib/use-refocus';

const PlansDoc = graphql(`
  query Plans {
    plans {
      tier
      monthlyTokens
      overage
      monthlyFee
      rpm
      tpm
      selfService
    }
    viewer {
      id
      tier
      allocation {
        feePaidTier
      }
    }
  }
`);

const ChangePlanDoc = graphql(`
  mutation ChangePlan($tier: Tier!) {
    changePlan(tier: $tier) {
      id
      tier
    }
  }
`);

export default function PlanPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: PlansDoc });
  const [changing, change] = useMutation(ChangePlanDoc);
  const [confirm, setConfirm] = useState<Tier | null>(null);
  // What the last switch did, in a live region; the confirmation's buttons go with it, so the focus
  // goes to the page's heading once the plans are read again.
  const [switched, setSwitched] = useState('');
  const { heading, refocus } = useRefocus(!fetching);
  // Each plan's Switch button, for Cancel to give the focus back to.
  const switchButtons = useRef(new Map<Tier, HTMLButtonElement>());
  /** Cancel: the question goes, and the focus back to the Switch button it replaced. */
  const cancelSwitch = (tier: Tier) => {
    setConfirm(null);
    requestAnimationFrame(() => switchButtons.current.get(tier)?.focus());
  };
  if (fetching && !data) return <Loading what="plans" />;
  if (!data)
    return error ? <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} /> : <Loading what="plans" />;
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        Plan
      </h1>
      <p role="status">{switched}</p>
      {changing.error ? <ErrorMessage error={changing.error} title="Could not change the plan" /> : null}
      <div className="plans">
        {data.plans.map((p) => {
          const current = p.tier === data.viewer.tier;
          return (
            <section key={p.tier} className={`card plan${current ? ' current' : ''}`} aria-labelledby={`plan-${p.tier}`}>
              <h2 id={`plan-${p.tier}`}>
                {p.tier} {current ? <span className="badge">Current</span> : null}
              </h2>
              <dl>
                <dt>Monthly allocation</dt>
                <dd>
                  {p.monthlyTokens === null || p.monthlyTokens === undefined ? 'Unlimited' : `${formatTokens(p.monthlyTokens)} tokens`}
                </dd>
                <dt>Past the allocation</dt>
                <dd>
                  {p.monthlyTokens === null || p.monthlyTokens === undefined
                    ? 'Not applicable'
                    : p.overage
                      ? 'Paid from the wallet'
                      : 'Calls are refused'}
                </dd>
                <dt>Rate limits</dt>
                <dd>
                  {formatTokens(p.rpm)} requests and {formatTokens(p.tpm)} tokens a minute
                </dd>
                <dt>Monthly fee</dt>
                <dd>{toNumber(p.monthlyFee) > 0 ? <Money value={p.monthlyFee} currency="USD" /> : 'None'}</dd>
              </dl>
              {current ? null : !p.selfService ? (
                <p className="muted">Arranged with us: ask us to move your account to this plan.</p>
              ) : confirm === p.tier ? (
                // biome-ignore lint/a11y/useSemanticElements: a group of two buttons, not a form fieldset.
                <div role="group" aria-label={`Confirm switching to ${p.tier}`}>
                  <p>{feeNotice(p.tier, p.monthlyFee, data.viewer.allocation.feePaidTier)}</p>
                  <button
                    type="button"
                    className="primary"
                    disabled={changing.fetching}
                    onClick={async () => {
                      const r = await change({ tier: p.tier });
                      setConfirm(null);
                      refocus();
                      if (r.data) setSwitched(`Your plan is now ${r.data.changePlan.tier}.`);
                      refetch({ requestPolicy: 'network-only' });
                    }}
                  >
                    Confirm switch to {p.tier}
                  </button>{' '}
                  {/* biome-ignore lint/a11y/noAutofocus: the Switch button this replaces had the focus; the safe choice takes it. */}
                  <button type="button" onClick={() => cancelSwitch(p.tier)} autoFocus>
                    Cancel
                  </button>
                </div>
              ) : (
                <button
                  type="button"
                  ref={(el) => {
                    if (el) switchButtons.current.set(p.tier, el);
                    else switchButtons.current.delete(p.tier);
                  }}
                  onClick={() => {
                    setSwitched('');
                    setConfirm(p.tier);
                  }}
                >
                  Switch to {p.tier}
                </button>
              )}
            </section>
          );
        })}
      </div>
    </>
  );
}
