// Settings: the spending limit (block or alert), the low-balance threshold, automatic top-up,
// the e-mail alerts, the e-mail address and the password, and the signed-in browsers.
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
        lastSeenAt
      }
    }
  }
`);

export default function SettingsPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: SettingsDoc });
  if (fetching && !data) return <Loading what="your settings" />;
  if (!data) return error ? <ErrorMessage error={error} /> : <Loading what="your settings" />;
  const v = data.viewer;
  const reload = () => refetch({ requestPolicy: 'network-only' });
  return (
    <>
      <h1>Settings</h1>
      <div className="grid">
        <SpendingLimitForm current={v.settings.spendingLimit} onSaved={reload} />
        <LowBalanceForm current={v.settings.lowBalanceAlert ?? null} onSaved={reload} />
        <AutoTopupForm current={v.settings.autoTopup} onSaved={reload} />
        <AlertsForm current={v.alertSettings} onSaved={reload} />
        <EmailForm email={v.email} onSaved={reload} />
        <PasswordForm />
        <SessionsList sessions={v.sessions} onChanged={reload} />
      </div>
    </>
  );
}
