// People, not keys, in the dashboard (issue 15): sign-up under the configured policy, sign-in with
// an e-mail address and a password (argon2id), sessions held in an httpOnly cookie (only the
// SHA-256 digest of its secret is stored), sign-out, password reset by e-mail, set-password links
// for accounts an operator created, and operator sessions (an account flagged admin, or
// ADMIN_TOKEN exchanged for one). Plain SQL through knex that reads the same on SQLite and
// PostgreSQL; instants are epoch milliseconds.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/core';
import type { AccountsSettings } from '../../config-accounts.js';
import { getKnex } from '../../db/connection.js';
import type { Logger } from '../../logger.js';
import type { Mailer, OutgoingMail } from '../../mail/mailer.js';
import { RetriedMail, type RetryPolicy } from '../../mail/retried-mail.js';
import type { AccountsService, AccountView } from '../accounts/accounts-service.js';
import { EMAIL_ADDRESS_RULE, isKnownEmailAddress, MAX_EMAIL_LENGTH } from '../email-address.js';
import { DomainError } from '../errors.js';
import { newId } from '../ids.js';
import { clientOf, LoginThrottle, type Refusal } from './login-throttle.js';
import { hashPassword, validatePassword, verifyPassword } from './passwords.js';

/** The name of the session cookie. */
export const SESSION_COOKIE = 'tollgate_session';
const RESET_TTL_MS = 60 * 60_000;
const SET_PASSWORD_TTL_MS = 7 * 24 * 60 * 60_000;
/** A session's last use is written at most this often (a read per request, a write per minute). */
const TOUCH_EVERY_MS = 60_000;

// What each throttled operation says when it is refused, with the wait.
// Every sign-in counts against its client address, a right password too (each costs a hash):
// refused for the address, it says so, as a password reset would not help then.
const TOO_MANY_SIGN_INS: Refusal = (wait, key) =>
  key.startsWith('ip:')
    ? `Too many sign-ins from this network address (every sign-in from it counts, whoever makes it); try again in ${wait}.`
    : `Too many failed sign-ins; try again in ${wait}, or reset the password.`;
/** The sessions an account keeps (its most recently used); signing in past it signs the oldest out. */
export const MAX_SESSIONS = 30;
const TOO_MANY_OPERATOR_SIGN_INS: Refusal = (wait) => `Too many failed sign-ins from this address; try again in ${wait}.`;
const TOO_MANY_RESETS: Refusal = (wait) => `Too many password-reset requests; try again in ${wait}.`;
const TOO_MANY_SIGN_UPS: Refusal = (wait) => `Too many sign-ups from this address; try again in ${wait}.`;

export interface SessionView {
  id: string;
  /** Null for an operator session made from ADMIN_TOKEN. */
  accountId: string | null;
  /** An operator: an account flagged admin, or ADMIN_TOKEN exchanged. */
  operator: boolean;
  userAgent: string | null;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

export interface IssuedSession {
  /** The cookie's value, given to the browser once. */
  token: string;
  session: SessionView;
}

interface SessionRow {
  id: string;
  account_id: string | null;
  operator: unknown;
  is_admin?: unknown;
  user_agent: string | null;
  admin_token_digest?: string | null;
  created_at_ms: unknown;
  last_seen_at_ms: unknown;
  expires_at_ms: unknown;
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex');
/** What an operator session keeps of the ADMIN_TOKEN it was made from. */
const adminTokenDigest = (sessionId: string, token: string) => digest(`${sessionId}:${token}`);
const newToken = (prefix: string) => `${prefix}_${randomBytes(32).toString('base64url')}`;
const truthy = (v: unknown) => v === true || v === 1 || v === '1' || v === 't';
const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class AuthService {
  private readonly throttle: LoginThrottle;
  private readonly now: () => number;
  /** Password-reset e-mails and e-mail-changed notices, sent after their request was answered and retried in memory. */
  private readonly mail: RetriedMail | null;

  constructor(
    private readonly o: {
      orm: MikroORM;
      accounts: AccountsService;
      settings: AccountsSettings;
      adminToken: () => string | null;
      publicUrl: () => string;
      /** Null: password-reset mail cannot be sent (the CLI). */
      mailer: Mailer | null;
      logger: Logger;
      now?: () => number;
      /** How often a reset or notice that failed is tried again (tests shorten it). */
      mailRetry?: RetryPolicy;
    },
  ) {
    this.now = o.now ?? Date.now;
    this.throttle = new LoginThrottle(o.settings.max_failed_logins, this.now);
    this.mail = o.mailer ? new RetriedMail({ mailer: o.mailer, logger: o.logger, retry: o.mailRetry, now: this.now }) : null;
  }

  private get knex() {
    return getKnex(this.o.orm);
  }

  get signupPolicy() {
    return this.o.settings.signup;
  }

  /**
   * A new account on the free tier, signed in; under `invite`, with one of the configured codes.
   * Every attempt counts against its client (ten times max_failed_logins in 15 minutes), taken or
   * not: an answer of email_taken tells that an account has the address, so asking is limited.
   */
  async signUp(input: {
    email: string;
    password: string;
    inviteCode?: string | null;
    clientAddress?: string | null;
    userAgent?: string | null;
  }): Promise<IssuedSession> {
    const policy = this.o.settings.signup;
    if (policy === 'closed') throw new DomainError('signup_closed', 'Sign-up is closed on this server: ask its operator for an account.');
    this.throttle.attempt(input.clientAddress ? [`ip:signup:${clientOf(input.clientAddress)}`] : [], TOO_MANY_SIGN_UPS);
    if (policy === 'invite') {
      const code = input.inviteCode?.trim() ?? '';
      if (!code || !this.o.settings.invite_codes.some((c) => safeEqual(c, code))) {
        throw new DomainError('signup_closed', 'Sign-up on this server needs a valid invitation code.', { param: 'inviteCode' });
      }
    }
    const password = validatePassword(input.password);
    // The address is checked before the password is hashed (argon2, the costly part): a refusal costs no hashing.
    const email = await this.o.accounts.checkNewEmail(input.email);
    const hash = await hashPassword(password);
    const account = await this.o.accounts.createAccountWithoutKey({ email, tier: 'free' });
    await this.knex('account_passwords').insert({
      account_id: account.id,
      password_hash: hash,
      is_admin: false,
      updated_at_ms: this.now(),
    });
    return this.createSession({ accountId: account.id, operator: false, userAgent: input.userAgent ?? null });
  }

  /** Signs in with an e-mail address and a password; throttled per address and per client. */
  async signIn(input: {
    email: string;
    password: string;
    clientAddress?: string | null;
    userAgent?: string | null;
  }): Promise<IssuedSession> {
    const email = String(input.email ?? '')
      .trim()
      .toLowerCase();
    const clientKeys = input.clientAddress ? [`ip:${clientOf(input.clientAddress)}`] : [];
    // Longer than any account's address: no account to look up, counted against the client only.
    if (email.length > MAX_EMAIL_LENGTH) {
      this.throttle.attempt(clientKeys, TOO_MANY_SIGN_INS);
      throw new DomainError('invalid_credentials', 'The e-mail address or the password is not right.');
    }
    const keys = [`email:${email}`, ...clientKeys];
    this.throttle.attempt(keys, TOO_MANY_SIGN_INS);
    const account = email ? await this.o.accounts.findByEmail(email) : null;
    const row = account
      ? ((await this.knex('account_passwords').select('password_hash', 'is_admin').where('account_id', account.id))[0] as
          | { password_hash: string | null; is_admin: unknown }
          | undefined)
      : undefined;
    const ok = await verifyPassword(row?.password_hash, String(input.password ?? ''));
    if (!account || !ok) throw new DomainError('invalid_credentials', 'The e-mail address or the password is not right.');
    // A right password clears the address's count; the client's stays: every sign-in costs a
    // password hash, so one client signing in again and again is limited as one guessing is.
    this.throttle.succeed(`email:${email}`);
    return this.createSession({ accountId: account.id, operator: truthy(row?.is_admin), userAgent: input.userAgent ?? null });
  }

  /** ADMIN_TOKEN exchanged for an operator session (belonging to no account). */
  async signInAsOperator(token: string, input: { clientAddress?: string | null; userAgent?: string | null } = {}): Promise<IssuedSession> {
    // Per client: one bucket for everyone would let anyone lock the operator out with five wrong
    // tokens (the token is at least MIN_ADMIN_TOKEN_LENGTH characters: guessing it is hopeless anyway).
    const keys = input.clientAddress ? [`admin:${clientOf(input.clientAddress)}`, `ip:${clientOf(input.clientAddress)}`] : ['admin'];
    // Refused by the operator's own count only: customers signing in from the same address (an
    // office, a NAT) fill the address's, and must not lock the operator out. A wrong token counts
    // against both.
    this.throttle.check([keys[0]!], TOO_MANY_OPERATOR_SIGN_INS);
    const expected = this.o.adminToken();
    if (!expected || !safeEqual(String(token ?? '').trim(), expected)) {
      this.throttle.fail(keys);
      throw new DomainError(
        'invalid_credentials',
        expected ? 'That is not the operator token.' : 'Operator sign-in is disabled: set ADMIN_TOKEN to enable it.',
      );
    }
    return this.createSession({ accountId: null, operator: true, userAgent: input.userAgent ?? null, adminToken: expected });
  }

  private async createSession(s: {
    accountId: string | null;
    operator: boolean;
    userAgent: string | null;
    adminToken?: string;
  }): Promise<IssuedSession> {
    const token = newToken('tgs');
    const now = this.now();
    const session: SessionView = {
      id: newId('sess'),
      accountId: s.accountId,
      operator: s.operator,
      userAgent: s.userAgent ? s.userAgent.slice(0, 255) : null,
      createdAt: new Date(now),
      lastSeenAt: new Date(now),
      expiresAt: new Date(now + this.o.settings.session_days * 86_400_000),
    };
    await this.knex('sessions').insert({
      id: session.id,
      digest: digest(token),
      account_id: s.accountId,
      operator: s.operator,
      user_agent: session.userAgent,
      admin_token_digest: s.adminToken ? adminTokenDigest(session.id, s.adminToken) : null,
      created_at_ms: now,
      last_seen_at_ms: now,
      expires_at_ms: session.expiresAt.getTime(),
    });
    // An account keeps its MAX_SESSIONS most recently used sessions: signing in again and again
    // (a script, a leaked password) cannot grow the table, and the oldest browser is signed out.
    if (s.accountId !== null) {
      const stale = (await this.knex('sessions')
        .select('id')
        .where('account_id', s.accountId)
        .orderBy([
          { column: 'last_seen_at_ms', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .offset(MAX_SESSIONS)) as { id: string }[];
      if (stale.length > 0)
        await this.knex('sessions')
          .whereIn(
            'id',
            stale.map((r) => r.id),
          )
          .delete();
    }
    return { token, session };
  }

  /** The live session of a cookie's value, or null (unknown, expired, signed out); its use extends it. */
  async sessionOf(token: string | null | undefined): Promise<SessionView | null> {
    if (!token?.startsWith('tgs_') || token.length > 100) return null;
    const rows = rowsOf<SessionRow>(
      await this.knex.raw(
        'select s.id, s.account_id, s.operator, s.user_agent, s.admin_token_digest, s.created_at_ms, s.last_seen_at_ms, s.expires_at_ms, p.is_admin from sessions s left join account_passwords p on p.account_id = s.account_id where s.digest = ?',
        [digest(token)],
      ),
    );
    const row = rows[0];
    const now = this.now();
    if (!row || Number(row.expires_at_ms) <= now) return null;
    if (row.account_id === null && !this.madeFromCurrentAdminToken(row)) return null;
    const view = sessionView(row);
    if (now - Number(row.last_seen_at_ms) > TOUCH_EVERY_MS) {
      const expiresAt = now + this.o.settings.session_days * 86_400_000;
      await this.knex('sessions').where('id', row.id).update({ last_seen_at_ms: now, expires_at_ms: expiresAt });
      view.lastSeenAt = new Date(now);
      view.expiresAt = new Date(expiresAt);
    }
    return view;
  }

  /** An operator session made from ADMIN_TOKEN is good only while ADMIN_TOKEN is still the token it was made from. */
  private madeFromCurrentAdminToken(row: SessionRow): boolean {
    const token = this.o.adminToken();
    if (!token || !row.admin_token_digest) return false;
    return safeEqual(adminTokenDigest(row.id, token), row.admin_token_digest);
  }

  async signOut(sessionId: string): Promise<void> {
    await this.knex('sessions').where('id', sessionId).delete();
  }

  async listSessions(accountId: string): Promise<SessionView[]> {
    const rows = (await this.knex('sessions')
      .select('id', 'account_id', 'operator', 'user_agent', 'created_at_ms', 'last_seen_at_ms', 'expires_at_ms')
      .where('account_id', accountId)
      .andWhere('expires_at_ms', '>', this.now())
      .orderBy('last_seen_at_ms', 'desc')) as SessionRow[];
    return rows.map(sessionView);
  }

  /**
   * The sessions of `sessionIds` that have ended (signed out, revoked, ended by a password change,
   * expired), each with the reason: the key watch ends their open operations.
   */
  async endedSessions(sessionIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (sessionIds.length === 0) return out;
    const rows = (await this.knex('sessions')
      .select('id', 'expires_at_ms')
      .whereIn('id', [...sessionIds])) as {
      id: string;
      expires_at_ms: unknown;
    }[];
    const now = this.now();
    const expiresAt = new Map(rows.map((r) => [r.id, Number(r.expires_at_ms)]));
    for (const id of sessionIds) {
      const expiry = expiresAt.get(id);
      if (expiry === undefined) out.set(id, 'This sign-in session has ended (signed out or revoked): sign in again.');
      else if (expiry <= now) out.set(id, 'This sign-in session has expired: sign in again.');
    }
    return out;
  }

  /** Ends one of the account's sessions; true when there was one. */
  async revokeSession(accountId: string, sessionId: string): Promise<boolean> {
    return (await this.knex('sessions').where({ id: sessionId, account_id: accountId }).delete()) > 0;
  }

  /** Sets a new password after checking the current one; the account's other sessions end. */
  async changePassword(accountId: string, input: { currentPassword: string; newPassword: string; keepSessionId: string }): Promise<void> {
    await this.checkPassword(accountId, input.currentPassword, 'currentPassword');
    await this.setPassword(accountId, validatePassword(input.newPassword, 'newPassword'));
    await this.knex('sessions').where('account_id', accountId).andWhereNot('id', input.keepSessionId).delete();
  }

  /**
   * Changes the account's e-mail address, after checking its password, and tells the address it
   * had (after the answer, as a reset link is mailed): whoever holds a stolen session and the
   * password could otherwise take the account over silently, since resets then go to the new one.
   */
  async changeEmail(accountId: string, input: { email: string; password: string }): Promise<AccountView> {
    await this.checkPassword(accountId, input.password, 'password');
    const before = await this.o.accounts.getAccount(accountId);
    const after = await this.o.accounts.changeEmail(accountId, input.email);
    const mailer = this.o.mailer;
    if (mailer && this.mail && before.email.toLowerCase() !== after.email.toLowerCase()) {
      // Tried for an hour, as a reset link lasts.
      this.mail.send(async () => this.emailChangedMail(mailer, after, before.email), {
        what: 'e-mail-changed notice',
        account: accountId,
        until: this.now() + RESET_TTL_MS,
      });
    }
    return after;
  }

  /**
   * Mails a password-reset link when an account has this address; says nothing either way (the
   * caller cannot learn which addresses have accounts, not even from how long the answer took:
   * the link is made and mailed after the answer, in the background). Throttled like sign-in:
   * every request counts against its client, then against the address (which must be one).
   */
  async requestPasswordReset(email: string, clientAddress?: string | null): Promise<void> {
    this.throttle.attempt(clientAddress ? [`ip:reset:${clientOf(clientAddress)}`] : [], TOO_MANY_RESETS);
    const address = String(email ?? '').trim();
    // Whatever the client sends is checked before it is counted: no account has anything else.
    // An address made before addresses had to be ASCII can still ask for its reset.
    if (!isKnownEmailAddress(address)) throw new DomainError('invalid_value', `email must be ${EMAIL_ADDRESS_RULE}.`, { param: 'email' });
    this.throttle.attempt([`reset:${address.toLowerCase()}`], TOO_MANY_RESETS);
    const mailer = this.o.mailer;
    if (!mailer) throw new DomainError('internal_error', 'No mailer is configured.');
    const account = await this.o.accounts.findByEmail(address);
    if (!account || !this.mail) return;
    // Tried until the link it carries expires.
    this.mail.send(async () => this.resetLinkMail(mailer, account), {
      what: 'password-reset',
      account: account.id,
      until: this.now() + RESET_TTL_MS,
    });
  }

  /** Resolves when no password-reset or e-mail-changed message is being made, sent or waiting for a retry (tests). */
  async idle(): Promise<void> {
    await this.mail?.idle();
  }

  /**
   * At shutdown: the messages waiting for a retry are tried once more; those being sent get 2 s
   * at most (a hung SMTP server must not hold shutdown), then their exchange is closed.
   */
  async stop(graceMs?: number): Promise<void> {
    await this.mail?.stop(graceMs);
    this.o.mailer?.close();
  }

  private async resetLinkMail(mailer: Mailer, account: AccountView): Promise<OutgoingMail> {
    const link = await this.passwordLink(account.id, 'reset');
    const text = [
      'Someone (hopefully you) asked to reset the password of your tollgate account.',
      '',
      `Choose a new password here (the link works once, for an hour):`,
      link,
      '',
      'If it was not you, ignore this message: your password stays as it is.',
    ].join('\n');
    return {
      to: [account.email],
      cc: [],
      subject: 'Reset your tollgate password',
      text,
      html: `<p>Someone (hopefully you) asked to reset the password of your tollgate account.</p><p><a href="${link}">Choose a new password</a> (the link works once, for an hour):<br>${link}</p><p>If it was not you, ignore this message: your password stays as it is.</p>`,
      messageId: `<reset-${randomBytes(8).toString('hex')}@${mailer.domain}>`,
      key: `password-reset-${account.id}-${this.now()}`,
    };
  }

  /** The security notice to the address an account had: sent there, not to the new one (which may be an intruder's). */
  private emailChangedMail(mailer: Mailer, account: AccountView, oldEmail: string): OutgoingMail {
    const lines = [
      `The sign-in e-mail address of your tollgate account (${account.id}) was changed from ${oldEmail} to ${account.email}.`,
      'Sign-in, password resets and alerts now use the new address; this is the last message sent here about the account.',
      "If this wasn't you, someone signed in to your account with your password: contact the operator of this service at once, quoting the account id above (a password reset would now go to the new address).",
    ];
    return {
      to: [oldEmail],
      cc: [],
      subject: 'Your tollgate sign-in e-mail was changed',
      text: `${lines.join('\n\n')}\n`,
      html: lines.map((l) => `<p>${escapeHtml(l)}</p>`).join(''),
      messageId: `<email-changed-${randomBytes(8).toString('hex')}@${mailer.domain}>`,
      key: `email-changed-${account.id}-${this.now()}`,
    };
  }

  /** A single-use link to the dashboard's set-password page: `reset` lasts an hour, `set` (printed by the CLI) a week. */
  async passwordLink(accountId: string, purpose: 'reset' | 'set'): Promise<string> {
    const token = newToken(purpose === 'reset' ? 'tgr' : 'tgp');
    const now = this.now();
    await this.knex('password_tokens').insert({
      digest: digest(token),
      account_id: accountId,
      purpose,
      created_at_ms: now,
      expires_at_ms: now + (purpose === 'reset' ? RESET_TTL_MS : SET_PASSWORD_TTL_MS),
      used_at_ms: null,
    });
    return `${this.o.publicUrl().replace(/\/+$/, '')}/dashboard/reset-password?token=${encodeURIComponent(token)}`;
  }

  /** Sets the password of a reset or set-password link (once), ends every session of the account, and signs in. */
  async resetPassword(input: { token: string; password: string; userAgent?: string | null }): Promise<IssuedSession> {
    const password = validatePassword(input.password);
    const now = this.now();
    const d = digest(String(input.token ?? ''));
    // Conditional update: of two uses of one link, one wins.
    const used = await this.knex('password_tokens')
      .where('digest', d)
      .whereNull('used_at_ms')
      .andWhere('expires_at_ms', '>', now)
      .update({ used_at_ms: now });
    if (used !== 1)
      throw new DomainError('invalid_token', 'This link has expired or was used already: ask for a new one.', { param: 'token' });
    const row = (await this.knex('password_tokens').select('account_id').where('digest', d))[0] as { account_id: string };
    await this.setPassword(row.account_id, password);
    await this.knex('sessions').where('account_id', row.account_id).delete();
    // The owner proved the address: its failed sign-ins no longer lock it (the lockout's message
    // says "or reset the password"). A client address's count stays.
    const { email } = await this.o.accounts.getAccount(row.account_id);
    this.throttle.succeed(`email:${email.trim().toLowerCase()}`);
    const isAdmin = await this.isAdmin(row.account_id);
    return this.createSession({ accountId: row.account_id, operator: isAdmin, userAgent: input.userAgent ?? null });
  }

  /** Flags an account as an operator (or not): its sessions can then do what ADMIN_TOKEN does. */
  async setAdmin(accountId: string, admin: boolean): Promise<void> {
    await this.o.accounts.getAccount(accountId);
    await this.knex('account_passwords')
      .insert({ account_id: accountId, password_hash: null, is_admin: admin, updated_at_ms: this.now() })
      .onConflict('account_id')
      .merge(['is_admin', 'updated_at_ms']);
    await this.knex('sessions').where('account_id', accountId).update({ operator: admin });
  }

  async isAdmin(accountId: string): Promise<boolean> {
    const row = (await this.knex('account_passwords').select('is_admin').where('account_id', accountId))[0] as
      | { is_admin: unknown }
      | undefined;
    return truthy(row?.is_admin);
  }

  /**
   * Accounts for the operator's list: the address contains `search` (any case), newest first; after
   * the account `after` (the last one of the page before) when given.
   */
  async searchAccounts(search: string | null | undefined, limit = 50, after: string | null = null): Promise<AccountView[]> {
    let q = this.knex('accounts')
      .select('id')
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(Math.min(Math.max(limit, 1), 200));
    const s = search?.trim().toLowerCase();
    if (s) q = q.whereRaw("lower(email) like ? escape '\\'", [`%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`]);
    if (after !== null) {
      const cursor = (await this.knex('accounts').select('id', 'created_at').where('id', after).first()) as
        | { id: string; created_at: string | number | Date }
        | undefined;
      if (!cursor)
        throw new DomainError('invalid_value', `'after' must be an account id; got '${after.slice(0, 60)}'.`, { param: 'after' });
      q = q.where((w) =>
        w
          .where('created_at', '<', cursor.created_at)
          .orWhere((e) => e.where('created_at', cursor.created_at).andWhere('id', '<', cursor.id)),
      );
    }
    const ids = ((await q) as { id: string }[]).map((r) => r.id);
    const found = await this.o.accounts.getAccountsByIds(ids);
    return ids.flatMap((id) => found.filter((a) => a.id === id));
  }

  /**
   * Sets the password; every reset or set-password link of the account still open is used up with
   * it (one asked for before, or a second one, would otherwise set another password afterwards).
   */
  private async setPassword(accountId: string, password: string): Promise<void> {
    const hash = await hashPassword(password);
    const now = this.now();
    await this.knex.transaction(async (trx) => {
      await trx('account_passwords')
        .insert({ account_id: accountId, password_hash: hash, is_admin: false, updated_at_ms: now })
        .onConflict('account_id')
        .merge(['password_hash', 'updated_at_ms']);
      await trx('password_tokens').where('account_id', accountId).whereNull('used_at_ms').update({ used_at_ms: now });
    });
  }

  /**
   * Checks the account's password for a change made in a session. Its yes or no is a sign-in's, so
   * wrong guesses count against the same limit as failed sign-ins to the account's address (a
   * stolen session cannot try passwords past it, nor alternate with sign-in to get twice as many).
   */
  private async checkPassword(accountId: string, password: string, param: string): Promise<void> {
    const { email } = await this.o.accounts.getAccount(accountId);
    const keys = [`email:${email.trim().toLowerCase()}`];
    this.throttle.attempt(keys, TOO_MANY_SIGN_INS);
    const row = (await this.knex('account_passwords').select('password_hash').where('account_id', accountId))[0] as
      | { password_hash: string | null }
      | undefined;
    if (!(await verifyPassword(row?.password_hash, String(password ?? '')))) {
      throw new DomainError('invalid_credentials', 'The current password is not right.', { param });
    }
    this.throttle.succeed(keys[0]!);
  }
}

function sessionView(row: SessionRow): SessionView {
  return {
    id: row.id,
    accountId: row.account_id,
    operator: truthy(row.operator) || truthy(row.is_admin),
    userAgent: row.user_agent,
    createdAt: new Date(Number(row.created_at_ms)),
    lastSeenAt: new Date(Number(row.last_seen_at_ms)),
    expiresAt: new Date(Number(row.expires_at_ms)),
  };
}
