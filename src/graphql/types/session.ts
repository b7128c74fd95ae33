// People in the dashboard (issue 15): sign-up, sign-in (with a password, or the operator's
// ADMIN_TOKEN), sign-out, password reset and change, the e-mail address, sign-in sessions, the
// account's own API keys, its plan, and the operator's account list. Sign-in sets an httpOnly
// session cookie; only a session (never an API key) manages keys, the password and sessions.
import { SIGNUP_POLICIES } from '../../config-accounts.js';
import { TIERS, type AccountView, type Tier } from '../../domain/accounts/accounts-service.js';
import type { IssuedSession, SessionView } from '../../domain/auth/auth-service.js';
import { priceToNanos } from '../../domain/billing/money.js';
import { DomainError } from '../../domain/errors.js';
import { builder } from '../builder.js';
import type { GraphQLContext, SessionCookies } from '../context.js';
import { AccountRef, ApiKeyRef, CreateApiKeyPayload, TierEnum } from './account.js';
import { DecimalScalar } from './money.js';

const SignupPolicyEnum = builder.enumType('SignupPolicy', {
  description: 'open: anyone signs up onto the free tier; invite: with an invitation code; closed: operators create accounts.',
  values: SIGNUP_POLICIES,
});

const SessionRef = builder.objectRef<SessionView>('Session').implement({
  description: 'A signed-in browser: a person of an account, or an operator.',
  fields: (t) => ({
    id: t.exposeID('id'),
    operator: t.exposeBoolean('operator', {
      description: 'May do what ADMIN_TOKEN does (an account flagged admin, or the token exchanged).',
    }),
    account: t.field({
      type: AccountRef,
      nullable: true,
      description: 'Null for an operator signed in with ADMIN_TOKEN.',
      resolve: (s) => s.accountId,
    }),
    current: t.boolean({ description: 'The session of this request.', resolve: (s, _args, ctx) => ctx.session?.id === s.id }),
    userAgent: t.exposeString('userAgent', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastSeenAt: t.expose('lastSeenAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

interface PlanView {
  tier: Tier;
  monthlyTokens: number | null;
  overage: boolean;
  monthlyFee: bigint;
  rpm: number;
  tpm: number;
  selfService: boolean;
}

const PlanRef = builder.objectRef<PlanView>('Plan').implement({
  description: 'A tier as the config sets it: its monthly allocation, rate limits and monthly fee.',
  fields: (t) => ({
    tier: t.field({ type: TierEnum, resolve: (p) => p.tier }),
    monthlyTokens: t.exposeInt('monthlyTokens', { nullable: true, description: 'null: unlimited.' }),
    overage: t.exposeBoolean('overage', { description: 'Calls past the allocation are paid from the wallet.' }),
    monthlyFee: t.field({ type: DecimalScalar, resolve: (p) => p.monthlyFee }),
    rpm: t.exposeInt('rpm'),
    tpm: t.exposeInt('tpm'),
    selfService: t.exposeBoolean('selfService', {
      description: 'Whether customers may move themselves to this tier (changePlan); an operator moves accounts to any.',
    }),
  }),
});

/**
 * The cookies of an HTTP request; refused before any work over WebSocket, where no cookie can be
 * set and no client address throttles failed tries (a password tried there would be neither
 * throttled nor answered with a session, but its right or wrong told apart all the same).
 */
function httpOnly(ctx: GraphQLContext, what: string): SessionCookies {
  if (!ctx.cookies)
    throw new DomainError(
      'invalid_request',
      `${what} works over HTTP only (it sets a cookie or is throttled per client): send it as a POST to /graphql.`,
    );
  return ctx.cookies;
}

/** Sets the cookie of a new session and answers the session. */
function issue(cookies: SessionCookies, issued: IssuedSession): SessionView {
  cookies.set(issued.token, issued.session.expiresAt);
  return issued.session;
}

builder.queryFields((t) => ({
  session: t.field({
    type: SessionRef,
    nullable: true,
    description: "The dashboard session of the request's cookie; null when nobody is signed in.",
    resolve: (_root, _args, ctx) => ctx.session,
  }),
  signupPolicy: t.field({
    type: SignupPolicyEnum,
    description: 'Who may sign up on this server. Needs no sign-in.',
    resolve: (_root, _args, ctx) => ctx.services.config.accounts.signup,
  }),
  plans: t.field({
    type: [PlanRef],
    description: 'The tiers, with their allocation, rate limits and fee. Needs no sign-in.',
    resolve: (_root, _args, ctx) =>
      TIERS.map((tier) => {
        const c = ctx.services.config.tiers[tier];
        return {
          tier,
          monthlyTokens: c.monthly_tokens,
          overage: c.overage,
          monthlyFee: priceToNanos(c.monthly_fee),
          rpm: c.rpm,
          tpm: c.tpm,
          selfService: c.self_service,
        };
      }),
  }),
  accounts: t.field({
    type: [AccountRef],
    description:
      'Operators: accounts whose e-mail address contains `search`, newest first (at most `first`, default 50, at most 200); `after` takes the id of the last account of the page before.',
    args: { search: t.arg.string({ required: false }), first: t.arg.int({ required: false }), after: t.arg.id({ required: false }) },
    resolve: async (_root, args, ctx) => {
      ctx.requireAdmin();
      return ctx.services.auth.searchAccounts(args.search, args.first ?? 50, args.after == null ? null : String(args.after));
    },
  }),
}));

builder.objectFields(AccountRef, (t) => ({
  sessions: t.field({
    type: [SessionRef],
    description: "The account's signed-in browsers (only for a person signed in to it).",
    resolve: (account, _args, ctx) => {
      const s = ctx.requireSession();
      if (s.accountId !== account.id) throw new DomainError('not_found', `No account with id '${account.id}'.`);
      return ctx.services.auth.listSessions(account.id);
    },
  }),
}));

builder.mutationFields((t) => ({
  signUp: t.field({
    type: SessionRef,
    description: 'Creates an account on the free tier and signs in (the policy of accounts.signup decides who may).',
    args: {
      email: t.arg.string({ required: true }),
      password: t.arg.string({ required: true }),
      inviteCode: t.arg.string({ required: false }),
    },
    resolve: async (_root, args, ctx) => {
      const cookies = httpOnly(ctx, 'Signing up');
      return issue(
        cookies,
        await ctx.services.auth.signUp({
          email: args.email,
          password: args.password,
          inviteCode: args.inviteCode,
          clientAddress: cookies.clientAddress,
          userAgent: cookies.userAgent,
        }),
      );
    },
  }),
  signIn: t.field({
    type: SessionRef,
    description: 'Signs in with an e-mail address and a password: sets the session cookie. Failed tries are throttled.',
    args: { email: t.arg.string({ required: true }), password: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const cookies = httpOnly(ctx, 'Signing in');
      return issue(
        cookies,
        await ctx.services.auth.signIn({
          email: args.email,
          password: args.password,
          clientAddress: cookies.clientAddress,
          userAgent: cookies.userAgent,
        }),
      );
    },
  }),
  signInAsOperator: t.field({
    type: SessionRef,
    description: 'Exchanges ADMIN_TOKEN for an operator session (which belongs to no account).',
    args: { token: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const cookies = httpOnly(ctx, 'Signing in');
      return issue(
        cookies,
        await ctx.services.auth.signInAsOperator(args.token, { clientAddress: cookies.clientAddress, userAgent: cookies.userAgent }),
      );
    },
  }),
  signOut: t.boolean({
    description: 'Ends the session of this request and clears its cookie.',
    resolve: async (_root, _args, ctx) => {
      // Over HTTP only, as signing in: its answer clears the cookie, which a socket cannot.
      const cookies = httpOnly(ctx, 'Signing out');
      if (ctx.session) await ctx.services.auth.signOut(ctx.session.id);
      cookies.clear();
      return true;
    },
  }),
  requestPasswordReset: t.boolean({
    description: 'E-mails a password-reset link when an account has this address; answers true either way.',
    args: { email: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      await ctx.services.auth.requestPasswordReset(args.email, httpOnly(ctx, 'A password reset').clientAddress);
      return true;
    },
  }),
  resetPassword: t.field({
    type: SessionRef,
    description: "Sets the password of a reset or set-password link (once); ends the account's other sessions and signs in.",
    args: { token: t.arg.string({ required: true }), password: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const cookies = httpOnly(ctx, 'A password reset');
      return issue(
        cookies,
        await ctx.services.auth.resetPassword({ token: args.token, password: args.password, userAgent: cookies.userAgent }),
      );
    },
  }),
  changePassword: t.boolean({
    description: "Session only: changes the password (the current one is checked); the account's other sessions end.",
    args: { currentPassword: t.arg.string({ required: true }), newPassword: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const s = ctx.requireSession();
      await ctx.services.auth.changePassword(s.accountId, {
        currentPassword: args.currentPassword,
        newPassword: args.newPassword,
        keepSessionId: s.id,
      });
      return true;
    },
  }),
  changeEmail: t.field({
    type: AccountRef,
    description:
      "Session only: changes the account's e-mail address (the password is checked); a security notice is e-mailed to the address it had.",
    args: { email: t.arg.string({ required: true }), password: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const s = ctx.requireSession();
      return (await ctx.services.auth.changeEmail(s.accountId, { email: args.email, password: args.password })) as AccountView;
    },
  }),
  revokeSession: t.boolean({
    description:
      "Session only: signs one of the account's browsers out (true); an id that is none of the account's sessions (another's, or one already ended) is 404 not_found, as revokeMyApiKey's.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => {
      if (!(await ctx.services.auth.revokeSession(ctx.requireSession().accountId, String(args.id))))
        throw new DomainError('not_found', `No session with id '${args.id}'.`, { param: 'id' });
      return true;
    },
  }),
  createMyApiKey: t.field({
    type: CreateApiKeyPayload,
    description:
      'Session only: a new API key of the signed-in account; the secret is shown this once. `expiresAt` (optional, in the future): the key is refused from then on.',
    args: { name: t.arg.string({ required: false }), expiresAt: t.arg({ type: 'DateTime', required: false }) },
    resolve: (_root, args, ctx) =>
      ctx.services.accounts.createKey(ctx.requireSession().accountId, {
        name: args.name ?? undefined,
        expiresAt: args.expiresAt ?? undefined,
      }),
  }),
  revokeMyApiKey: t.field({
    type: ApiKeyRef,
    description: "Session only: revokes one of the signed-in account's API keys; it is refused from the next request on.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const { accountId } = ctx.requireSession();
      const keys = await ctx.services.accounts.listKeys(accountId);
      if (!keys.some((k) => k.id === String(args.id)))
        throw new DomainError('not_found', `No API key with id '${args.id}'.`, { param: 'id' });
      return ctx.services.accounts.revokeKey(String(args.id));
    },
  }),
  changePlan: t.field({
    type: AccountRef,
    description:
      "Session only: moves the signed-in account to a tier customers may choose (Plan.selfService; 403 tier_not_self_service for another); a tier's monthly fee is charged from the wallet as a subscription transaction (402 insufficient_balance when it cannot be paid).",
    args: { tier: t.arg({ type: TierEnum, required: true }) },
    resolve: async (_root, args, ctx) => (await ctx.services.billing.choosePlan(ctx.requireSession().accountId, args.tier)).id,
  }),
}));
