/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  query Session {\n    session {\n      id\n      operator\n      account {\n        id\n        email\n        tier\n      }\n    }\n    signupPolicy\n  }\n": typeof types.SessionDocument,
    "\n  mutation SignOut {\n    signOut\n  }\n": typeof types.SignOutDocument,
    "\n  query ApiKeys {\n    viewer {\n      id\n      apiKeys {\n        id\n        name\n        display\n        createdAt\n        lastUsedAt\n        expiresAt\n        revokedAt\n      }\n    }\n  }\n": typeof types.ApiKeysDocument,
    "\n  mutation CreateMyApiKey($name: String, $expiresAt: DateTime) {\n    createMyApiKey(name: $name, expiresAt: $expiresAt) {\n      id\n      apiKey\n    }\n  }\n": typeof types.CreateMyApiKeyDocument,
    "\n  mutation RevokeMyApiKey($id: ID!) {\n    revokeMyApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n": typeof types.RevokeMyApiKeyDocument,
    "\n  mutation RequestPasswordReset($email: String!) {\n    requestPasswordReset(email: $email)\n  }\n": typeof types.RequestPasswordResetDocument,
    "\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      id\n    }\n  }\n": typeof types.SignInDocument,
    "\n  query Models {\n    models {\n      id\n      category\n      status\n      available\n      unavailableReason\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n        pricePerMillionTokens\n        currency\n      }\n    }\n  }\n": typeof types.ModelsDocument,
    "\n  query Notifications($first: Int!, $after: String) {\n    viewer {\n      id\n      notifications(first: $first, after: $after) {\n        unreadCount\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n        nodes {\n          id\n          subject\n          text\n          createdAt\n          read\n        }\n      }\n    }\n  }\n": typeof types.NotificationsDocument,
    "\n  mutation MarkNotificationsRead($ids: [ID!]!) {\n    markNotificationsRead(ids: $ids) {\n      id\n      read\n    }\n  }\n": typeof types.MarkNotificationsReadDocument,
    "\n  mutation MarkAllNotificationsRead($upTo: ID) {\n    markAllNotificationsRead(upTo: $upTo)\n  }\n": typeof types.MarkAllNotificationsReadDocument,
    "\n  mutation SignInAsOperator($token: String!) {\n    signInAsOperator(token: $token) {\n      id\n    }\n  }\n": typeof types.SignInAsOperatorDocument,
    "\n  query OperatorAccounts($search: String, $first: Int!, $after: ID) {\n    accounts(search: $search, first: $first, after: $after) {\n      id\n      email\n      tier\n      wallet {\n        balance\n        currency\n      }\n    }\n  }\n": typeof types.OperatorAccountsDocument,
    "\n  mutation OperatorSetTier($accountId: ID!, $tier: Tier!) {\n    setAccountTier(accountId: $accountId, tier: $tier) {\n      id\n      tier\n    }\n  }\n": typeof types.OperatorSetTierDocument,
    "\n  mutation OperatorCredit($input: CreditWalletInput!) {\n    creditWallet(input: $input) {\n      id\n      balanceAfter\n    }\n  }\n": typeof types.OperatorCreditDocument,
    "\n  query Overview {\n    viewer {\n      id\n      tier\n      wallet {\n        balance\n        held\n        currency\n      }\n      allocation {\n        used\n        held\n        monthlyTokens\n        period\n      }\n      settings {\n        monthlySpend\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n      }\n      notifications(first: 5) {\n        unreadCount\n        nodes {\n          id\n          subject\n          createdAt\n          read\n        }\n      }\n    }\n  }\n": typeof types.OverviewDocument,
    "\n  subscription WalletUpdated {\n    walletUpdated {\n      balance\n      currency\n      transaction {\n        id\n        type\n        amount\n      }\n    }\n  }\n": typeof types.WalletUpdatedDocument,
    "\n  subscription OverviewNotificationAdded {\n    notificationAdded {\n      id\n    }\n  }\n": typeof types.OverviewNotificationAddedDocument,
    "\n  query Plans {\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n      rpm\n      tpm\n      selfService\n    }\n    viewer {\n      id\n      tier\n      allocation {\n        feePaidTier\n      }\n    }\n  }\n": typeof types.PlansDocument,
    "\n  mutation ChangePlan($tier: Tier!) {\n    changePlan(tier: $tier) {\n      id\n      tier\n    }\n  }\n": typeof types.ChangePlanDocument,
    "\n  query ChatModels {\n    models(category: chat) {\n      id\n      available\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n      }\n    }\n  }\n": typeof types.ChatModelsDocument,
    "\n  subscription PlaygroundStream($input: ChatCompletionInput!) {\n    chatCompletionStream(input: $input) {\n      choices {\n        delta {\n          content\n          reasoningContent\n        }\n        finishReason\n      }\n      usage {\n        promptTokens\n        completionTokens\n        totalTokens\n      }\n    }\n  }\n": typeof types.PlaygroundStreamDocument,
    "\n  mutation ResetPassword($token: String!, $password: String!) {\n    resetPassword(token: $token, password: $password) {\n      id\n    }\n  }\n": typeof types.ResetPasswordDocument,
    "\n  query Settings {\n    viewer {\n      id\n      email\n      settings {\n        lowBalanceAlert\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n        autoTopup {\n          enabled\n          threshold\n          amount\n          disabledReason\n        }\n      }\n      alertSettings {\n        allocation80\n        allocation100\n        autoTopup\n        lowBalance\n        monthlyFee\n        rateLimit\n        spendingLimit\n        unusualUsage\n        extraRecipients\n      }\n      sessions {\n        id\n        current\n        userAgent\n        createdAt\n        lastSeenAt\n      }\n    }\n  }\n": typeof types.SettingsDocument,
    "\n  mutation SignUp($email: String!, $password: String!, $inviteCode: String) {\n    signUp(email: $email, password: $password, inviteCode: $inviteCode) {\n      id\n    }\n  }\n": typeof types.SignUpDocument,
    "\n  query TopUpQuote($amount: Decimal!) {\n    topUpQuote(amount: $amount) {\n      amount\n      bonus\n      bonusPercent\n      credits\n      currency\n    }\n  }\n": typeof types.TopUpQuoteDocument,
    "\n  query TopUpTerms {\n    topUpTerms {\n      minimumAmount\n      salesThreshold\n      currency\n      bonusTable {\n        minAmount\n        percent\n      }\n      salesContact\n    }\n  }\n": typeof types.TopUpTermsDocument,
    "\n  query TopUpPlan {\n    viewer {\n      id\n      tier\n    }\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n    }\n  }\n": typeof types.TopUpPlanDocument,
    "\n  query OpenCheckouts($first: Int!) {\n    viewer {\n      id\n      topUps(first: $first, status: open) {\n        nodes {\n          id\n          amount\n          credits\n          currency\n          checkoutUrl\n          createdAt\n          expiresAt\n        }\n      }\n    }\n  }\n": typeof types.OpenCheckoutsDocument,
    "\n  mutation TopUp($amount: Decimal!, $idempotencyKey: String) {\n    topUp(amount: $amount, idempotencyKey: $idempotencyKey) {\n      id\n      checkoutUrl\n    }\n  }\n": typeof types.TopUpDocument,
    "\n  query TopUpResult($id: ID!, $byId: Boolean!) {\n    viewer {\n      id\n      wallet {\n        balance\n        currency\n      }\n      topUp(id: $id) @include(if: $byId) {\n        ...TopUpOutcome\n      }\n      topUps(first: 1) @skip(if: $byId) {\n        nodes {\n          ...TopUpOutcome\n        }\n      }\n    }\n  }\n\n  fragment TopUpOutcome on TopUp {\n    id\n    status\n    amount\n    bonus\n    credits\n    currency\n    failureReason\n    checkoutUrl\n    refunded\n    dispute\n  }\n": typeof types.TopUpResultDocument,
    "\n  query Transactions($first: Int!, $after: String, $type: TransactionType) {\n    viewer {\n      id\n      wallet {\n        currency\n        transactions(first: $first, after: $after, order: desc, type: $type) {\n          nodes {\n            id\n            type\n            amount\n            balanceAfter\n            createdAt\n            description\n            reference\n          }\n          pageInfo {\n            hasNextPage\n            endCursor\n          }\n        }\n      }\n    }\n  }\n": typeof types.TransactionsDocument,
    "\n  query Usage($start: String!, $end: String!) {\n    viewer {\n      id\n      wallet {\n        currency\n      }\n      usage(start: $start, end: $end) {\n        data {\n          date\n          model\n          requests\n          promptTokens\n          completionTokens\n          totalTokens\n          cost\n        }\n      }\n    }\n  }\n": typeof types.UsageDocument,
    "\n  mutation UpdateAlertSettings($input: AlertSettingsInput!) {\n    updateAlertSettings(input: $input) {\n      allocation80\n      extraRecipients\n    }\n  }\n": typeof types.UpdateAlertSettingsDocument,
    "\n  mutation UpdateAutoTopup($input: AutoTopupInput!) {\n    updateAutoTopup(input: $input) {\n      enabled\n      threshold\n      amount\n    }\n  }\n": typeof types.UpdateAutoTopupDocument,
    "\n  mutation ChangeEmail($email: String!, $password: String!) {\n    changeEmail(email: $email, password: $password) {\n      id\n      email\n    }\n  }\n": typeof types.ChangeEmailDocument,
    "\n  mutation SetLowBalanceAlert($threshold: Decimal) {\n    setLowBalanceAlert(threshold: $threshold) {\n      lowBalanceAlert\n    }\n  }\n": typeof types.SetLowBalanceAlertDocument,
    "\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)\n  }\n": typeof types.ChangePasswordDocument,
    "\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id)\n  }\n": typeof types.RevokeSessionDocument,
    "\n  mutation UpdateSpendingLimit($input: SpendingLimitInput!) {\n    updateSpendingLimit(input: $input) {\n      spendingLimit {\n        enabled\n        monthlyLimit\n        action\n      }\n    }\n  }\n": typeof types.UpdateSpendingLimitDocument,
};
const documents: Documents = {
    "\n  query Session {\n    session {\n      id\n      operator\n      account {\n        id\n        email\n        tier\n      }\n    }\n    signupPolicy\n  }\n": types.SessionDocument,
    "\n  mutation SignOut {\n    signOut\n  }\n": types.SignOutDocument,
    "\n  query ApiKeys {\n    viewer {\n      id\n      apiKeys {\n        id\n        name\n        display\n        createdAt\n        lastUsedAt\n        expiresAt\n        revokedAt\n      }\n    }\n  }\n": types.ApiKeysDocument,
    "\n  mutation CreateMyApiKey($name: String, $expiresAt: DateTime) {\n    createMyApiKey(name: $name, expiresAt: $expiresAt) {\n      id\n      apiKey\n    }\n  }\n": types.CreateMyApiKeyDocument,
    "\n  mutation RevokeMyApiKey($id: ID!) {\n    revokeMyApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n": types.RevokeMyApiKeyDocument,
    "\n  mutation RequestPasswordReset($email: String!) {\n    requestPasswordReset(email: $email)\n  }\n": types.RequestPasswordResetDocument,
    "\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      id\n    }\n  }\n": types.SignInDocument,
    "\n  query Models {\n    models {\n      id\n      category\n      status\n      available\n      unavailableReason\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n        pricePerMillionTokens\n        currency\n      }\n    }\n  }\n": types.ModelsDocument,
    "\n  query Notifications($first: Int!, $after: String) {\n    viewer {\n      id\n      notifications(first: $first, after: $after) {\n        unreadCount\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n        nodes {\n          id\n          subject\n          text\n          createdAt\n          read\n        }\n      }\n    }\n  }\n": types.NotificationsDocument,
    "\n  mutation MarkNotificationsRead($ids: [ID!]!) {\n    markNotificationsRead(ids: $ids) {\n      id\n      read\n    }\n  }\n": types.MarkNotificationsReadDocument,
    "\n  mutation MarkAllNotificationsRead($upTo: ID) {\n    markAllNotificationsRead(upTo: $upTo)\n  }\n": types.MarkAllNotificationsReadDocument,
    "\n  mutation SignInAsOperator($token: String!) {\n    signInAsOperator(token: $token) {\n      id\n    }\n  }\n": types.SignInAsOperatorDocument,
    "\n  query OperatorAccounts($search: String, $first: Int!, $after: ID) {\n    accounts(search: $search, first: $first, after: $after) {\n      id\n      email\n      tier\n      wallet {\n        balance\n        currency\n      }\n    }\n  }\n": types.OperatorAccountsDocument,
    "\n  mutation OperatorSetTier($accountId: ID!, $tier: Tier!) {\n    setAccountTier(accountId: $accountId, tier: $tier) {\n      id\n      tier\n    }\n  }\n": types.OperatorSetTierDocument,
    "\n  mutation OperatorCredit($input: CreditWalletInput!) {\n    creditWallet(input: $input) {\n      id\n      balanceAfter\n    }\n  }\n": types.OperatorCreditDocument,
    "\n  query Overview {\n    viewer {\n      id\n      tier\n      wallet {\n        balance\n        held\n        currency\n      }\n      allocation {\n        used\n        held\n        monthlyTokens\n        period\n      }\n      settings {\n        monthlySpend\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n      }\n      notifications(first: 5) {\n        unreadCount\n        nodes {\n          id\n          subject\n          createdAt\n          read\n        }\n      }\n    }\n  }\n": types.OverviewDocument,
    "\n  subscription WalletUpdated {\n    walletUpdated {\n      balance\n      currency\n      transaction {\n        id\n        type\n        amount\n      }\n    }\n  }\n": types.WalletUpdatedDocument,
    "\n  subscription OverviewNotificationAdded {\n    notificationAdded {\n      id\n    }\n  }\n": types.OverviewNotificationAddedDocument,
    "\n  query Plans {\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n      rpm\n      tpm\n      selfService\n    }\n    viewer {\n      id\n      tier\n      allocation {\n        feePaidTier\n      }\n    }\n  }\n": types.PlansDocument,
    "\n  mutation ChangePlan($tier: Tier!) {\n    changePlan(tier: $tier) {\n      id\n      tier\n    }\n  }\n": types.ChangePlanDocument,
    "\n  query ChatModels {\n    models(category: chat) {\n      id\n      available\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n      }\n    }\n  }\n": types.ChatModelsDocument,
    "\n  subscription PlaygroundStream($input: ChatCompletionInput!) {\n    chatCompletionStream(input: $input) {\n      choices {\n        delta {\n          content\n          reasoningContent\n        }\n        finishReason\n      }\n      usage {\n        promptTokens\n        completionTokens\n        totalTokens\n      }\n    }\n  }\n": types.PlaygroundStreamDocument,
    "\n  mutation ResetPassword($token: String!, $password: String!) {\n    resetPassword(token: $token, password: $password) {\n      id\n    }\n  }\n": types.ResetPasswordDocument,
    "\n  query Settings {\n    viewer {\n      id\n      email\n      settings {\n        lowBalanceAlert\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n        autoTopup {\n          enabled\n          threshold\n          amount\n          disabledReason\n        }\n      }\n      alertSettings {\n        allocation80\n        allocation100\n        autoTopup\n        lowBalance\n        monthlyFee\n        rateLimit\n        spendingLimit\n        unusualUsage\n        extraRecipients\n      }\n      sessions {\n        id\n        current\n        userAgent\n        createdAt\n        lastSeenAt\n      }\n    }\n  }\n": types.SettingsDocument,
    "\n  mutation SignUp($email: String!, $password: String!, $inviteCode: String) {\n    signUp(email: $email, password: $password, inviteCode: $inviteCode) {\n      id\n    }\n  }\n": types.SignUpDocument,
    "\n  query TopUpQuote($amount: Decimal!) {\n    topUpQuote(amount: $amount) {\n      amount\n      bonus\n      bonusPercent\n      credits\n      currency\n    }\n  }\n": types.TopUpQuoteDocument,
    "\n  query TopUpTerms {\n    topUpTerms {\n      minimumAmount\n      salesThreshold\n      currency\n      bonusTable {\n        minAmount\n        percent\n      }\n      salesContact\n    }\n  }\n": types.TopUpTermsDocument,
    "\n  query TopUpPlan {\n    viewer {\n      id\n      tier\n    }\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n    }\n  }\n": types.TopUpPlanDocument,
    "\n  query OpenCheckouts($first: Int!) {\n    viewer {\n      id\n      topUps(first: $first, status: open) {\n        nodes {\n          id\n          amount\n          credits\n          currency\n          checkoutUrl\n          createdAt\n          expiresAt\n        }\n      }\n    }\n  }\n": types.OpenCheckoutsDocument,
    "\n  mutation TopUp($amount: Decimal!, $idempotencyKey: String) {\n    topUp(amount: $amount, idempotencyKey: $idempotencyKey) {\n      id\n      checkoutUrl\n    }\n  }\n": types.TopUpDocument,
    "\n  query TopUpResult($id: ID!, $byId: Boolean!) {\n    viewer {\n      id\n      wallet {\n        balance\n        currency\n      }\n      topUp(id: $id) @include(if: $byId) {\n        ...TopUpOutcome\n      }\n      topUps(first: 1) @skip(if: $byId) {\n        nodes {\n          ...TopUpOutcome\n        }\n      }\n    }\n  }\n\n  fragment TopUpOutcome on TopUp {\n    id\n    status\n    amount\n    bonus\n    credits\n    currency\n    failureReason\n    checkoutUrl\n    refunded\n    dispute\n  }\n": types.TopUpResultDocument,
    "\n  query Transactions($first: Int!, $after: String, $type: TransactionType) {\n    viewer {\n      id\n      wallet {\n        currency\n        transactions(first: $first, after: $after, order: desc, type: $type) {\n          nodes {\n            id\n            type\n            amount\n            balanceAfter\n            createdAt\n            description\n            reference\n          }\n          pageInfo {\n            hasNextPage\n            endCursor\n          }\n        }\n      }\n    }\n  }\n": types.TransactionsDocument,
    "\n  query Usage($start: String!, $end: String!) {\n    viewer {\n      id\n      wallet {\n        currency\n      }\n      usage(start: $start, end: $end) {\n        data {\n          date\n          model\n          requests\n          promptTokens\n          completionTokens\n          totalTokens\n          cost\n        }\n      }\n    }\n  }\n": types.UsageDocument,
    "\n  mutation UpdateAlertSettings($input: AlertSettingsInput!) {\n    updateAlertSettings(input: $input) {\n      allocation80\n      extraRecipients\n    }\n  }\n": types.UpdateAlertSettingsDocument,
    "\n  mutation UpdateAutoTopup($input: AutoTopupInput!) {\n    updateAutoTopup(input: $input) {\n      enabled\n      threshold\n      amount\n    }\n  }\n": types.UpdateAutoTopupDocument,
    "\n  mutation ChangeEmail($email: String!, $password: String!) {\n    changeEmail(email: $email, password: $password) {\n      id\n      email\n    }\n  }\n": types.ChangeEmailDocument,
    "\n  mutation SetLowBalanceAlert($threshold: Decimal) {\n    setLowBalanceAlert(threshold: $threshold) {\n      lowBalanceAlert\n    }\n  }\n": types.SetLowBalanceAlertDocument,
    "\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)\n  }\n": types.ChangePasswordDocument,
    "\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id)\n  }\n": types.RevokeSessionDocument,
    "\n  mutation UpdateSpendingLimit($input: SpendingLimitInput!) {\n    updateSpendingLimit(input: $input) {\n      spendingLimit {\n        enabled\n        monthlyLimit\n        action\n      }\n    }\n  }\n": types.UpdateSpendingLimitDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Session {\n    session {\n      id\n      operator\n      account {\n        id\n        email\n        tier\n      }\n    }\n    signupPolicy\n  }\n"): (typeof documents)["\n  query Session {\n    session {\n      id\n      operator\n      account {\n        id\n        email\n        tier\n      }\n    }\n    signupPolicy\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignOut {\n    signOut\n  }\n"): (typeof documents)["\n  mutation SignOut {\n    signOut\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ApiKeys {\n    viewer {\n      id\n      apiKeys {\n        id\n        name\n        display\n        createdAt\n        lastUsedAt\n        expiresAt\n        revokedAt\n      }\n    }\n  }\n"): (typeof documents)["\n  query ApiKeys {\n    viewer {\n      id\n      apiKeys {\n        id\n        name\n        display\n        createdAt\n        lastUsedAt\n        expiresAt\n        revokedAt\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateMyApiKey($name: String, $expiresAt: DateTime) {\n    createMyApiKey(name: $name, expiresAt: $expiresAt) {\n      id\n      apiKey\n    }\n  }\n"): (typeof documents)["\n  mutation CreateMyApiKey($name: String, $expiresAt: DateTime) {\n    createMyApiKey(name: $name, expiresAt: $expiresAt) {\n      id\n      apiKey\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RevokeMyApiKey($id: ID!) {\n    revokeMyApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n"): (typeof documents)["\n  mutation RevokeMyApiKey($id: ID!) {\n    revokeMyApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RequestPasswordReset($email: String!) {\n    requestPasswordReset(email: $email)\n  }\n"): (typeof documents)["\n  mutation RequestPasswordReset($email: String!) {\n    requestPasswordReset(email: $email)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Models {\n    models {\n      id\n      category\n      status\n      available\n      unavailableReason\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n        pricePerMillionTokens\n        currency\n      }\n    }\n  }\n"): (typeof documents)["\n  query Models {\n    models {\n      id\n      category\n      status\n      available\n      unavailableReason\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n        pricePerMillionTokens\n        currency\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Notifications($first: Int!, $after: String) {\n    viewer {\n      id\n      notifications(first: $first, after: $after) {\n        unreadCount\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n        nodes {\n          id\n          subject\n          text\n          createdAt\n          read\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Notifications($first: Int!, $after: String) {\n    viewer {\n      id\n      notifications(first: $first, after: $after) {\n        unreadCount\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n        nodes {\n          id\n          subject\n          text\n          createdAt\n          read\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation MarkNotificationsRead($ids: [ID!]!) {\n    markNotificationsRead(ids: $ids) {\n      id\n      read\n    }\n  }\n"): (typeof documents)["\n  mutation MarkNotificationsRead($ids: [ID!]!) {\n    markNotificationsRead(ids: $ids) {\n      id\n      read\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation MarkAllNotificationsRead($upTo: ID) {\n    markAllNotificationsRead(upTo: $upTo)\n  }\n"): (typeof documents)["\n  mutation MarkAllNotificationsRead($upTo: ID) {\n    markAllNotificationsRead(upTo: $upTo)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignInAsOperator($token: String!) {\n    signInAsOperator(token: $token) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation SignInAsOperator($token: String!) {\n    signInAsOperator(token: $token) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OperatorAccounts($search: String, $first: Int!, $after: ID) {\n    accounts(search: $search, first: $first, after: $after) {\n      id\n      email\n      tier\n      wallet {\n        balance\n        currency\n      }\n    }\n  }\n"): (typeof documents)["\n  query OperatorAccounts($search: String, $first: Int!, $after: ID) {\n    accounts(search: $search, first: $first, after: $after) {\n      id\n      email\n      tier\n      wallet {\n        balance\n        currency\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OperatorSetTier($accountId: ID!, $tier: Tier!) {\n    setAccountTier(accountId: $accountId, tier: $tier) {\n      id\n      tier\n    }\n  }\n"): (typeof documents)["\n  mutation OperatorSetTier($accountId: ID!, $tier: Tier!) {\n    setAccountTier(accountId: $accountId, tier: $tier) {\n      id\n      tier\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OperatorCredit($input: CreditWalletInput!) {\n    creditWallet(input: $input) {\n      id\n      balanceAfter\n    }\n  }\n"): (typeof documents)["\n  mutation OperatorCredit($input: CreditWalletInput!) {\n    creditWallet(input: $input) {\n      id\n      balanceAfter\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Overview {\n    viewer {\n      id\n      tier\n      wallet {\n        balance\n        held\n        currency\n      }\n      allocation {\n        used\n        held\n        monthlyTokens\n        period\n      }\n      settings {\n        monthlySpend\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n      }\n      notifications(first: 5) {\n        unreadCount\n        nodes {\n          id\n          subject\n          createdAt\n          read\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Overview {\n    viewer {\n      id\n      tier\n      wallet {\n        balance\n        held\n        currency\n      }\n      allocation {\n        used\n        held\n        monthlyTokens\n        period\n      }\n      settings {\n        monthlySpend\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n      }\n      notifications(first: 5) {\n        unreadCount\n        nodes {\n          id\n          subject\n          createdAt\n          read\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription WalletUpdated {\n    walletUpdated {\n      balance\n      currency\n      transaction {\n        id\n        type\n        amount\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription WalletUpdated {\n    walletUpdated {\n      balance\n      currency\n      transaction {\n        id\n        type\n        amount\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription OverviewNotificationAdded {\n    notificationAdded {\n      id\n    }\n  }\n"): (typeof documents)["\n  subscription OverviewNotificationAdded {\n    notificationAdded {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Plans {\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n      rpm\n      tpm\n      selfService\n    }\n    viewer {\n      id\n      tier\n      allocation {\n        feePaidTier\n      }\n    }\n  }\n"): (typeof documents)["\n  query Plans {\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n      rpm\n      tpm\n      selfService\n    }\n    viewer {\n      id\n      tier\n      allocation {\n        feePaidTier\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ChangePlan($tier: Tier!) {\n    changePlan(tier: $tier) {\n      id\n      tier\n    }\n  }\n"): (typeof documents)["\n  mutation ChangePlan($tier: Tier!) {\n    changePlan(tier: $tier) {\n      id\n      tier\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ChatModels {\n    models(category: chat) {\n      id\n      available\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n      }\n    }\n  }\n"): (typeof documents)["\n  query ChatModels {\n    models(category: chat) {\n      id\n      available\n      pricing {\n        inputPricePerMillion\n        outputPricePerMillion\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription PlaygroundStream($input: ChatCompletionInput!) {\n    chatCompletionStream(input: $input) {\n      choices {\n        delta {\n          content\n          reasoningContent\n        }\n        finishReason\n      }\n      usage {\n        promptTokens\n        completionTokens\n        totalTokens\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription PlaygroundStream($input: ChatCompletionInput!) {\n    chatCompletionStream(input: $input) {\n      choices {\n        delta {\n          content\n          reasoningContent\n        }\n        finishReason\n      }\n      usage {\n        promptTokens\n        completionTokens\n        totalTokens\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ResetPassword($token: String!, $password: String!) {\n    resetPassword(token: $token, password: $password) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation ResetPassword($token: String!, $password: String!) {\n    resetPassword(token: $token, password: $password) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Settings {\n    viewer {\n      id\n      email\n      settings {\n        lowBalanceAlert\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n        autoTopup {\n          enabled\n          threshold\n          amount\n          disabledReason\n        }\n      }\n      alertSettings {\n        allocation80\n        allocation100\n        autoTopup\n        lowBalance\n        monthlyFee\n        rateLimit\n        spendingLimit\n        unusualUsage\n        extraRecipients\n      }\n      sessions {\n        id\n        current\n        userAgent\n        createdAt\n        lastSeenAt\n      }\n    }\n  }\n"): (typeof documents)["\n  query Settings {\n    viewer {\n      id\n      email\n      settings {\n        lowBalanceAlert\n        spendingLimit {\n          enabled\n          monthlyLimit\n          action\n        }\n        autoTopup {\n          enabled\n          threshold\n          amount\n          disabledReason\n        }\n      }\n      alertSettings {\n        allocation80\n        allocation100\n        autoTopup\n        lowBalance\n        monthlyFee\n        rateLimit\n        spendingLimit\n        unusualUsage\n        extraRecipients\n      }\n      sessions {\n        id\n        current\n        userAgent\n        createdAt\n        lastSeenAt\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignUp($email: String!, $password: String!, $inviteCode: String) {\n    signUp(email: $email, password: $password, inviteCode: $inviteCode) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation SignUp($email: String!, $password: String!, $inviteCode: String) {\n    signUp(email: $email, password: $password, inviteCode: $inviteCode) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TopUpQuote($amount: Decimal!) {\n    topUpQuote(amount: $amount) {\n      amount\n      bonus\n      bonusPercent\n      credits\n      currency\n    }\n  }\n"): (typeof documents)["\n  query TopUpQuote($amount: Decimal!) {\n    topUpQuote(amount: $amount) {\n      amount\n      bonus\n      bonusPercent\n      credits\n      currency\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TopUpTerms {\n    topUpTerms {\n      minimumAmount\n      salesThreshold\n      currency\n      bonusTable {\n        minAmount\n        percent\n      }\n      salesContact\n    }\n  }\n"): (typeof documents)["\n  query TopUpTerms {\n    topUpTerms {\n      minimumAmount\n      salesThreshold\n      currency\n      bonusTable {\n        minAmount\n        percent\n      }\n      salesContact\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TopUpPlan {\n    viewer {\n      id\n      tier\n    }\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n    }\n  }\n"): (typeof documents)["\n  query TopUpPlan {\n    viewer {\n      id\n      tier\n    }\n    plans {\n      tier\n      monthlyTokens\n      overage\n      monthlyFee\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpenCheckouts($first: Int!) {\n    viewer {\n      id\n      topUps(first: $first, status: open) {\n        nodes {\n          id\n          amount\n          credits\n          currency\n          checkoutUrl\n          createdAt\n          expiresAt\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query OpenCheckouts($first: Int!) {\n    viewer {\n      id\n      topUps(first: $first, status: open) {\n        nodes {\n          id\n          amount\n          credits\n          currency\n          checkoutUrl\n          createdAt\n          expiresAt\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation TopUp($amount: Decimal!, $idempotencyKey: String) {\n    topUp(amount: $amount, idempotencyKey: $idempotencyKey) {\n      id\n      checkoutUrl\n    }\n  }\n"): (typeof documents)["\n  mutation TopUp($amount: Decimal!, $idempotencyKey: String) {\n    topUp(amount: $amount, idempotencyKey: $idempotencyKey) {\n      id\n      checkoutUrl\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query TopUpResult($id: ID!, $byId: Boolean!) {\n    viewer {\n      id\n      wallet {\n        balance\n        currency\n      }\n      topUp(id: $id) @include(if: $byId) {\n        ...TopUpOutcome\n      }\n      topUps(first: 1) @skip(if: $byId) {\n        nodes {\n          ...TopUpOutcome\n        }\n      }\n    }\n  }\n\n  fragment TopUpOutcome on TopUp {\n    id\n    status\n    amount\n    bonus\n    credits\n    currency\n    failureReason\n    checkoutUrl\n    refunded\n    dispute\n  }\n"): (typeof documents)["\n  query TopUpResult($id: ID!, $byId: Boolean!) {\n    viewer {\n      id\n      wallet {\n        balance\n        currency\n      }\n      topUp(id: $id) @include(if: $byId) {\n        ...TopUpOutcome\n      }\n      topUps(first: 1) @skip(if: $byId) {\n        nodes {\n          ...TopUpOutcome\n        }\n      }\n    }\n  }\n\n  fragment TopUpOutcome on TopUp {\n    id\n    status\n    amount\n    bonus\n    credits\n    currency\n    failureReason\n    checkoutUrl\n    refunded\n    dispute\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Transactions($first: Int!, $after: String, $type: TransactionType) {\n    viewer {\n      id\n      wallet {\n        currency\n        transactions(first: $first, after: $after, order: desc, type: $type) {\n          nodes {\n            id\n            type\n            amount\n            balanceAfter\n            createdAt\n            description\n            reference\n          }\n          pageInfo {\n            hasNextPage\n            endCursor\n          }\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Transactions($first: Int!, $after: String, $type: TransactionType) {\n    viewer {\n      id\n      wallet {\n        currency\n        transactions(first: $first, after: $after, order: desc, type: $type) {\n          nodes {\n            id\n            type\n            amount\n            balanceAfter\n            createdAt\n            description\n            reference\n          }\n          pageInfo {\n            hasNextPage\n            endCursor\n          }\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Usage($start: String!, $end: String!) {\n    viewer {\n      id\n      wallet {\n        currency\n      }\n      usage(start: $start, end: $end) {\n        data {\n          date\n          model\n          requests\n          promptTokens\n          completionTokens\n          totalTokens\n          cost\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Usage($start: String!, $end: String!) {\n    viewer {\n      id\n      wallet {\n        currency\n      }\n      usage(start: $start, end: $end) {\n        data {\n          date\n          model\n          requests\n          promptTokens\n          completionTokens\n          totalTokens\n          cost\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateAlertSettings($input: AlertSettingsInput!) {\n    updateAlertSettings(input: $input) {\n      allocation80\n      extraRecipients\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateAlertSettings($input: AlertSettingsInput!) {\n    updateAlertSettings(input: $input) {\n      allocation80\n      extraRecipients\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateAutoTopup($input: AutoTopupInput!) {\n    updateAutoTopup(input: $input) {\n      enabled\n      threshold\n      amount\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateAutoTopup($input: AutoTopupInput!) {\n    updateAutoTopup(input: $input) {\n      enabled\n      threshold\n      amount\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ChangeEmail($email: String!, $password: String!) {\n    changeEmail(email: $email, password: $password) {\n      id\n      email\n    }\n  }\n"): (typeof documents)["\n  mutation ChangeEmail($email: String!, $password: String!) {\n    changeEmail(email: $email, password: $password) {\n      id\n      email\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetLowBalanceAlert($threshold: Decimal) {\n    setLowBalanceAlert(threshold: $threshold) {\n      lowBalanceAlert\n    }\n  }\n"): (typeof documents)["\n  mutation SetLowBalanceAlert($threshold: Decimal) {\n    setLowBalanceAlert(threshold: $threshold) {\n      lowBalanceAlert\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)\n  }\n"): (typeof documents)["\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id)\n  }\n"): (typeof documents)["\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateSpendingLimit($input: SpendingLimitInput!) {\n    updateSpendingLimit(input: $input) {\n      spendingLimit {\n        enabled\n        monthlyLimit\n        action\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateSpendingLimit($input: SpendingLimitInput!) {\n    updateSpendingLimit(input: $input) {\n      spendingLimit {\n        enabled\n        monthlyLimit\n        action\n      }\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;