// Accounts and their API keys: creation, revocation, listing, and the authentication of every
// request. Keys are stored as SHA-256 digests; the secret is returned once, at creation.
// Each method works on its own forked EntityManager, so one instance serves all requests.
// Writes use MikroORM's native insert/update (in a connection transaction where two rows go
// together), never the unit of work's flush: a flush runs inside an AsyncLocalStorage, and on
// Node 20 the first one switches async hooks on for the life of the process, after which every
// promise (dozens per generated token in llama.cpp, several per request everywhere) costs more.
import { timingSafeEqual } from 'node:crypto';
import { UniqueConstraintViolationException, type MikroORM } from '@mikro-orm/core';
import { selectRows } from '../../db/connection.js';
import { Account, ApiKey } from '../../entities/index.js';
import { DomainError } from '../errors.js';
import { EMAIL_ADDRESS_RULE, isEmailAddress } from '../email-address.js';
import { newId } from '../ids.js';
import { hasControlCharacter, UNPAIRED_SURROGATE } from '../text.js';
import { digestApiKey, displayKey, generateApiKey, hasValidChecksum, keyDisplayParts } from '../keys/key-format.js';

import type { RateLimitOverride } from '../ratelimit/overrides.js';
import { isTier, TIERS, type Tier } from './tiers.js';

export { isTier, TIERS, type Tier };

export interface AccountView {
  id: string;
  email: string;
  tier: Tier;
  createdAt: Date;
}

export interface ApiKeyView {
  id: string;
  /** e.g. `ask_AbCd1234…wxyz`; the secret itself is never stored. */
  display: string;
  name: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** When a call was last made with it, to the minute; null: never. */
  lastUsedAt: Date | null;
}

export type { RateLimitOverride };

export interface AuthenticatedKey {
  account: AccountView;
  keyId: string;
  /** Read with the key, so rate limits need no query of their own. */
  rateLimitOverride: RateLimitOverride;
}

export interface CreatedAccount {
  account: AccountView;
  /** The secret key, shown this once. */
  apiKey: string;
  keyId: string;
}

export interface CreatedKey {
  id: string;
  /** The secret key, shown this once. */
  apiKey: string;
}

const MESSAGES = {
  missing: "No API key provided. Send it as 'Authorization: Bearer ask_...'.",
  notBearer: "The Authorization header must use the Bearer scheme: 'Authorization: Bearer ask_...'.",
  incorrect: 'Incorrect API key provided.',
  revoked: 'The API key has been revoked.',
  expired: 'The API key has expired.',
} as const;

// Plain SQL that reads the same on SQLite and PostgreSQL: one lookup on the unique digest index.
const AUTHENTICATE_SQL =
  'select k.id as key_id, k.digest, k.revoked_at, k.expires_at, a.id as account_id, a.email, a.tier, a.created_at, o.rpm as rpm_limit, o.tpm as tpm_limit ' +
  'from api_keys k join accounts a on a.id = k.account_id left join rate_limit_overrides o on o.account_id = a.id where k.digest = ?';

interface AuthenticateRow {
  key_id: string;
  digest: string;
  revoked_at: unknown;
  expires_at: unknown;
  account_id: string;
  email: string;
  tier: Tier;
  created_at: string | number | Date;
  rpm_limit: number | string | null;
  tpm_limit: number | string | null;
}

/** Counts as the drivers return them (PostgreSQL gives bigints as text). */
const countOrNull = (v: unknown): number | null => (v == null ? null : Number(v));

const MAX_KEY_NAME_LENGTH = 255;

export class AccountsService {
  private readonly now: () => Date;
  /** The key lookup of every request, prepared once (SQLite). */
  private readonly select: <T>(sql: string, params: readonly (string | number | null)[]) => Promise<T[]>;

  /** `now` is the clock that decides key expiry (tests move it). */
  constructor(
    private readonly orm: MikroORM,
    opts: { now?: () => Date } = {},
  ) {
    this.now = opts.now ?? (() => new Date());
    this.select = selectRows(orm);
  }

  async createAccount(input: { email: string; tier: Tier | string }): Promise<CreatedAccount> {
    const email = validateEmail(input.email);
    const tier = validateTier(input.tier);
    const em = this.orm.em.fork();
    const now = this.now();
    const account = new Account({ id: newId('acct'), email, tier, createdAt: now });
    const { key, apiKey } = this.newKey(account, { createdAt: now });
    // Checked first for a clear message; the unique index on lower(email) settles a race.
    if (await this.findByEmail(email)) throw emailTaken(email);
    // One transaction: an account never exists without its first key.
    try {
      await em.getConnection().transactional(async (trx) => {
        await em.insert(Account, account, { ctx: trx });
        await em.insert(ApiKey, key, { ctx: trx });
      });
    } catch (e) {
      if (e instanceof UniqueConstraintViolationException && /email/i.test(e.message)) throw emailTaken(email);
      throw e;
    }
    return { account: accountView(account), apiKey, keyId: key.id };
  }

  /** An account without any API key (a person who signed up in the dashboard creates keys there). */
  async createAccountWithoutKey(input: { email: string; tier: Tier | string }): Promise<AccountView> {
    const email = validateEmail(input.email);
    const tier = validateTier(input.tier);
    const account = new Account({ id: newId('acct'), email, tier, createdAt: this.now() });
    if (await this.findByEmail(email)) throw emailTaken(email);
    try {
      await this.orm.em.fork().insert(Account, account);
    } catch (e) {
      if (e instanceof UniqueConstraintViolationException && /email/i.test(e.message)) throw emailTaken(email);
      throw e;
    }
    return accountView(account);
  }

  /**
   * The address a new account would be stored with; refuses one that is not an e-mail address
   * (invalid_value) or that an account already has (email_taken). Sign-up asks before it hashes the
   * password, so a refused address costs no hashing.
   */
  async checkNewEmail(value: unknown): Promise<string> {
    const email = validateEmail(value);
    if (await this.findByEmail(email)) throw emailTaken(email);
    return email;
  }

  /** Changes an account's e-mail address (unique whatever its case). */
  async changeEmail(accountId: string, newEmail: string): Promise<AccountView> {
    const email = validateEmail(newEmail);
    const other = await this.findByEmail(email);
    if (other && other.id !== accountId) throw emailTaken(email);
    try {
      await this.orm.em.fork().nativeUpdate(Account, { id: accountId }, { email });
    } catch (e) {
      if (e instanceof UniqueConstraintViolationException && /email/i.test(e.message)) throw emailTaken(email);
      throw e;
    }
    return this.getAccount(accountId);
  }

  /** The account with this e-mail address (compared case-insensitively), or null. */
  async findByEmail(email: string): Promise<AccountView | null> {
    // No address holds a NUL, and MikroORM writes values into SQLite's statement, which a NUL ends.
    if (email.includes('\0')) return null;
    const rows = await this.sql<{ id: string }>('select id from accounts where lower(email) = ?', [email.trim().toLowerCase()]);
    return rows[0] ? this.getAccount(rows[0].id) : null;
  }

  /** Accounts, oldest first: at most `limit` (default 100, at most 1000), after the account id `after`. */
  async listAccounts(opts: { limit?: number | null; after?: string | null } = {}): Promise<{ accounts: AccountView[]; hasMore: boolean }> {
    const limit = opts.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new DomainError('invalid_value', 'limit must be an integer from 1 to 1000.', { param: 'limit' });
    const em = this.orm.em.fork();
    let where: object = {};
    if (opts.after) {
      const cursor = await em.findOne(Account, { id: opts.after });
      if (!cursor) throw accountNotFound(opts.after);
      where = { $or: [{ createdAt: { $gt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: { $gt: cursor.id } }] };
    }
    const found = await em.find(Account, where, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: limit + 1 });
    return { accounts: found.slice(0, limit).map(accountView), hasMore: found.length > limit };
  }

  async createKey(accountId: string, opts: { name?: string | null; expiresAt?: Date | null } = {}): Promise<CreatedKey> {
    const name = validateKeyName(opts.name);
    const now = this.now();
    const expiresAt = validateExpiry(opts.expiresAt, now);
    const em = this.orm.em.fork();
    const account = await em.findOne(Account, { id: accountId });
    if (!account) throw accountNotFound(accountId);
    const { key, apiKey } = this.newKey(account, { name, createdAt: now, expiresAt });
    await em.insert(key);
    return { id: key.id, apiKey };
  }

  /** Revokes a key from the next request on; revoking a revoked key changes nothing. */
  async revokeKey(keyId: string): Promise<ApiKeyView> {
    const em = this.orm.em.fork();
    // Conditional update: a second revoke keeps the first timestamp.
    await em.nativeUpdate(ApiKey, { id: keyId, revokedAt: null }, { revokedAt: this.now() });
    const key = await em.findOne(ApiKey, { id: keyId });
    if (!key) throw new DomainError('not_found', `No API key with id '${keyId}'.`, { param: 'id' });
    return apiKeyView(key);
  }

  /** The keys of several accounts (each list oldest first), in one query; [] for an account without keys. */
  async keysOf(accountIds: readonly string[]): Promise<ApiKeyView[][]> {
    if (accountIds.length === 0) return [];
    const keys = await this.orm.em.fork().find(ApiKey, { account: { $in: [...accountIds] } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const byAccount = new Map<string, ApiKeyView[]>(accountIds.map((id) => [id, []]));
    for (const key of keys) byAccount.get(key.account.id)?.push(apiKeyView(key));
    return accountIds.map((id) => byAccount.get(id) ?? []);
  }

  async listKeys(accountId: string): Promise<ApiKeyView[]> {
    const em = this.orm.em.fork();
    const keys = await em.find(ApiKey, { account: accountId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    if (keys.length === 0 && (await em.count(Account, { id: accountId })) === 0) throw accountNotFound(accountId);
    return keys.map(apiKeyView);
  }

  /**
   * The account behind an `Authorization: Bearer ask_…` header. Malformed keys and bad checksums
   * are refused without touching the database; otherwise one indexed query, no cache (a key
   * revoked by another process is refused on its next request). Messages never repeat the key.
   */
  async authenticate(authorizationHeader: string | undefined | null): Promise<AuthenticatedKey> {
    const header = authorizationHeader?.trim();
    if (!header) throw authError(MESSAGES.missing);
    const match = /^Bearer\s+(.+)$/i.exec(header);
    if (!match) throw authError(MESSAGES.notBearer);
    const key = match[1]!;
    if (!hasValidChecksum(key)) throw authError(MESSAGES.incorrect);

    const digest = digestApiKey(key);
    const [row] = await this.select<AuthenticateRow>(AUTHENTICATE_SQL, [digest]);
    // The index found the row by equality already; the constant-time comparison keeps the final
    // decision free of early-exit string comparison.
    if (!row || !digestsEqual(row.digest, digest)) throw authError(MESSAGES.incorrect);
    if (row.revoked_at != null) throw authError(MESSAGES.revoked);
    if (row.expires_at != null && this.parseDate(row.expires_at).getTime() <= this.now().getTime()) {
      throw authError(MESSAGES.expired);
    }
    return {
      keyId: row.key_id,
      account: { id: row.account_id, email: row.email, tier: row.tier, createdAt: this.parseDate(row.created_at) },
      rateLimitOverride: { rpm: countOrNull(row.rpm_limit), tpm: countOrNull(row.tpm_limit) },
    };
  }

  /**
   * Which of `keyIds` can no longer be used (revoked, expired, or gone), each with the message an
   * operation of that key ends with: one indexed query.
   */
  async unusableKeys(keyIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (keyIds.length === 0) return out;
    const rows = await this.sql<{ id: string; revoked_at: unknown; expires_at: unknown }>(
      `select id, revoked_at, expires_at from api_keys where id in (${keyIds.map(() => '?').join(', ')})`,
      [...keyIds],
    );
    const now = this.now().getTime();
    const found = new Set<string>();
    for (const row of rows) {
      found.add(row.id);
      if (row.revoked_at != null) out.set(row.id, MESSAGES.revoked);
      else if (row.expires_at != null && this.parseDate(row.expires_at).getTime() <= now) out.set(row.id, MESSAGES.expired);
    }
    for (const id of keyIds) if (!found.has(id)) out.set(id, MESSAGES.incorrect);
    return out;
  }

  async getAccount(id: string): Promise<AccountView> {
    const account = await this.orm.em.fork().findOne(Account, { id });
    if (!account) throw accountNotFound(id);
    return accountView(account);
  }

  /**
   * The accounts with these ids in one query, in the order of `ids` (duplicates once); unknown
   * ids are left out. Meant as a DataLoader batch function.
   */
  async getAccountsByIds(ids: readonly string[]): Promise<AccountView[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const accounts = await this.orm.em.fork().find(Account, { id: { $in: unique } });
    const byId = new Map(accounts.map((a) => [a.id, a]));
    return unique.flatMap((id) => {
      const account = byId.get(id);
      return account ? [accountView(account)] : [];
    });
  }

  private newKey(
    account: Account,
    opts: { name?: string | null; createdAt: Date; expiresAt?: Date | null },
  ): { key: ApiKey; apiKey: string } {
    const apiKey = generateApiKey();
    const { prefix, last4 } = keyDisplayParts(apiKey);
    const key = new ApiKey({
      id: newId('key'),
      account,
      digest: digestApiKey(apiKey),
      prefix,
      last4,
      name: opts.name ?? null,
      createdAt: opts.createdAt,
      expiresAt: opts.expiresAt ?? null,
    });
    return { key, apiKey };
  }

  /** Raw rows hold dates as the driver returns them (epoch milliseconds on SQLite, text on PostgreSQL). */
  private parseDate(value: unknown): Date {
    if (value instanceof Date) return value;
    return this.orm.em.getPlatform().parseDate(value as string | number);
  }
  /** Rows of one statement through MikroORM's connection (no unit of work, no identity map). */
  private sql<T>(query: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute<T[]>(query, params, 'all');
  }
}

function accountView(account: Account): AccountView {
  return { id: account.id, email: account.email, tier: account.tier, createdAt: account.createdAt };
}

function apiKeyView(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    display: displayKey(key.prefix, key.last4),
    name: key.name,
    createdAt: key.createdAt,
    expiresAt: key.expiresAt,
    revokedAt: key.revokedAt,
    lastUsedAt: key.lastUsedAt,
  };
}

function authError(message: string): DomainError {
  return new DomainError('invalid_api_key', message);
}

function accountNotFound(id: string): DomainError {
  return new DomainError('not_found', `No account with id '${id}'.`, { param: 'account_id' });
}

function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

function validateEmail(value: unknown): string {
  const email = typeof value === 'string' ? value.trim() : '';
  if (!isEmailAddress(email)) {
    throw new DomainError('invalid_value', `email must be ${EMAIL_ADDRESS_RULE}.`, { param: 'email' });
  }
  return email;
}

function validateTier(value: unknown): Tier {
  if (!isTier(value)) {
    throw new DomainError('invalid_value', `tier must be one of ${TIERS.join(', ')}.`, { param: 'tier' });
  }
  return value;
}

function validateKeyName(value: unknown): string | null {
  if (value == null) return null;
  // No control character (a NUL cut SQLite's statement short, a 500; none belongs in a name shown
  // in a list), nor a surrogate without its pair (not text PostgreSQL stores).
  if (
    typeof value !== 'string' ||
    value.trim().length > MAX_KEY_NAME_LENGTH ||
    hasControlCharacter(value, true) ||
    UNPAIRED_SURROGATE.test(value)
  ) {
    throw new DomainError('invalid_value', `name must be text of at most ${MAX_KEY_NAME_LENGTH} characters, without control characters.`, {
      param: 'name',
    });
  }
  return value.trim() || null;
}

function validateExpiry(value: unknown, now: Date): Date | null {
  if (value == null) return null;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new DomainError('invalid_value', 'expires_at must be a valid date and time.', { param: 'expires_at' });
  }
  if (value.getTime() <= now.getTime()) {
    throw new DomainError('invalid_value', 'expires_at must be in the future.', { param: 'expires_at' });
  }
  return value;
}

function emailTaken(email: string): DomainError {
  return new DomainError(
    'email_taken',
    `An account with the e-mail address ${email} already exists (addresses are compared without regard to case).`,
    { param: 'email' },
  );
}
