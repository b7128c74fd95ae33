// Settings: the spending limit (block or alert), the low-balance threshold, automatic top-up,
// the e-mail alerts, the e-mail address and the password, and the signed-in browsers. Read again
// when the tab comes back into view: another tab or browser may have changed them.
import { useQuery } from 'urql';
import { ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import { AlertsForm } from './settings/AlertsForm';
import { AutoTopupForm } from './settings/AutoTopupForm';
import { EmailForm } from './settings/EmailForm';
import { LowBalanceForm } from './settings/LowBalanceForm';
import { PasswordForm } from './settings/PasswordForm';
import { SessionsList } from './settings/SessionsList';
import { SpendingLimitForm } from './settings/SpendingLimitForm';
import { useRefetchOnReturn } from './settings/use-seeded-form';

const SettingsDoc = graphql(`
  query Settings {
    viewer {
      id
      email
      settings {
        lowBalanceAlert
        spendingLimit {
          enabled
          monthlyLimit
          action
        }
        autoTopup {
          enabled
          threshold
          amount
          disabledReason
        }
      }
      alertSettings {
        allocation80
        allocation100
        autoTopup
        lowBalance
        monthlyFee
        rateLimit
        spendingLimit
        unusualUsage
        extraRecipients
      }
      sessions {
        id
        current
        userAgent
        createdAt
        lastSeenAt
      }
    }
  }
`);

export default function SettingsPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: SettingsDoc });
  const reload = () => refetch({ requestPolicy: 'network-only' });
  useRefetchOnReturn(reload);
  if (fetching && !data) return <Loading what="your settings" />;
  if (!data) return error ? <ErrorMessage error={error} onRetry={reload} /> : <Loading what="your settings" />;
  const v = data.viewer;
  return (
    <>
      <h1>Settings</h1>
      {error ? <ErrorMessage error={error} title="Could not refresh: showing your settings as last loaded" onRetry={reload} /> : null}
      <div className="grid">
        <SpendingLimitForm current={v.settings.spendingLimit} onSaved={reload} />
        <LowBalanceForm current={v.settings.lowBalanceAlert ?? null} onSaved={reload} />
        <AutoTopupForm current={v.settings.autoTopup} onSaved={reload} />
        <AlertsForm current={v.alertSettings} onSaved={reload} />
        <EmailForm email={v.email} onSaved={reload} />
        <PasswordForm email={v.email} />
        <SessionsList sessions={v.sessions} onChanged={reload} />
      </div>
    </>
  );
}
