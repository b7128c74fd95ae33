// The operator CLI (`tollgate …`, started by bin/tollgate.js): accounts and API keys today; later
// groups (wallet, models) add a register function to COMMAND_GROUPS. It works on the server's
// database (DATABASE_URL) through the same domain services, and opens it only when a command runs.
import { parseIsoDateTime } from './domain/iso-date.js';
import { authFor, registerDashboardCommands, setPasswordLink } from './cli-dashboard.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from './project-root.js';
import { Command, CommanderError, Option } from 'commander';
import { formatDecimal } from './domain/billing/money.js';
import { exactNanos, stringifyExact } from './exact-json.js';
import type { MikroORM } from '@mikro-orm/core';
import { closeDatabase, DEFAULT_DATABASE_URL, openDatabase } from './db/orm.js';
import { RateLimitOverrides } from './domain/ratelimit/overrides.js';
import { AccountsService, TIERS, type AccountView, type ApiKeyView } from './domain/accounts/accounts-service.js';
import { BillingService } from './domain/billing/billing-service.js';
import { registerLedgerCommands, registerWalletCommands } from './cli-billing.js';
import { registerModelCommands } from './cli-models.js';
import { registerRateLimitCommands } from './cli-ratelimits.js';
import { registerMailCommands } from './cli-mail.js';
import { registerDbCommands } from './cli-db.js';
import { BILLING_DEFAULTS, ConfigError, loadConfig, TIER_DEFAULTS, type AppConfig, type TierConfig, type TierName } from './config.js';
import { createLogger } from './logger.js';
import { DomainError } from './domain/errors.js';

/** The package's version (package.json), for `tollgate --version`. */
export const TOLLGATE_VERSION: string = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).version;

export interface CliServices {
  orm: MikroORM;
  accounts: AccountsService;
  rateLimitOverrides: RateLimitOverrides;
  /** Not started: the CLI registers no server instance and runs no sweeper. */
  billing: BillingService;
  /** The tiers of the config file the CLI read (CONFIG, default config/default.yaml). */
  tiers: Record<TierName, TierConfig>;
  /**
   * Before a command applies the CLI's tiers (a fee, an allocation, a rate limit): the running
   * servers on the database whose tiers differ. `refuse` stops the command with an error naming
   * their config file; otherwise a warning goes to stderr and the command goes on.
   */
  checkServersTiers(action: 'refuse' | 'warn'): Promise<void>;
}

export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export interface CliContext {
  /** Opens the database (and runs pending migrations) on first use; closed when the command ends. */
  services(): Promise<CliServices>;
  /** Prints `value` as one line of JSON. */
  printJson(value: unknown): void;
  print(text: string): void;
  /** Progress and notes, kept apart from the command's output (so --json stays one clean line). */
  stderr(text: string): void;
  /** The environment the command runs with (CONFIG, MODELS_DIR, …). */
  env: NodeJS.ProcessEnv;
}

export type CommandGroup = (program: Command, ctx: CliContext) => void;

const registerAccountCommands: CommandGroup = (program, ctx) => {
  const accounts = program.command('accounts').description('Create accounts and change their tier');

  accounts
    .command('create')
    .description('Create an account and its first API key (the key is shown once)')
    .requiredOption('--email <email>', "the account's e-mail address")
    .addOption(tierOption())
    .option('--json', 'print JSON')
    .action(async (opts: { email: string; tier: string; json?: boolean }) => {
      const { accounts: service } = await ctx.services();
      const created = await service.createAccount({ email: opts.email, tier: opts.tier });
      const link = await setPasswordLink(ctx, created.account.id);
      if (opts.json) {
        ctx.printJson({ account: accountJson(created.account), api_key: created.apiKey, key_id: created.keyId, set_password_url: link });
        return;
      }
      ctx.print(
        [
          `Created account ${created.account.id} (${created.account.email}, tier ${created.account.tier}).`,
          `API key ${created.keyId}: ${created.apiKey}`,
          'Store the key now: it is not shown again.',
          `Set-password link for the dashboard (works once, for 7 days): ${link}`,
        ].join('\n'),
      );
    });

  accounts
    .command('list')
    .description('List accounts, oldest first (id, e-mail, tier, created)')
    .option('--limit <n>', 'at most this many (1 to 1000)', '100')
    .option('--after <id>', 'start after this account id (the last one of the previous page)')
    .option('--json', 'print JSON')
    .action(async (opts: { limit: string; after?: string; json?: boolean }) => {
      const { accounts: service } = await ctx.services();
      const page = await service.listAccounts({ limit: parseIntOption(opts.limit, '--limit'), after: opts.after ?? null });
      if (opts.json) {
        ctx.printJson({ accounts: page.accounts.map(accountJson), has_more: page.hasMore });
        return;
      }
      if (page.accounts.length === 0) {
        ctx.print('No accounts.');
        return;
      }
      const rows = page.accounts.map((a) => [a.id, a.email, a.tier, a.createdAt.toISOString()]);
      const more = page.hasMore ? `\nMore: --after ${page.accounts.at(-1)!.id}` : '';
      ctx.print(formatTable(['ID', 'EMAIL', 'TIER', 'CREATED'], rows) + more);
    });

  accounts
    .command('show')
    .description('Show one account: its tier, wallet balance and API keys')
    .argument('<account>', 'account id (acct_…) or e-mail address')
    .option('--json', 'print JSON')
    .action(async (ref: string, opts: { json?: boolean }) => {
      const services = await ctx.services();
      const { accounts: service, billing } = services;
      const account = ref.includes('@') ? await service.findByEmail(ref) : await service.getAccount(ref);
      if (!account) throw new DomainError('not_found', `No account with the e-mail address ${ref}.`, { param: 'email' });
      const [wallet, keys, operator] = await Promise.all([
        billing.getWallet(account.id),
        service.listKeys(account.id),
        authFor(services, ctx.env).isAdmin(account.id),
      ]);
      if (opts.json) {
        printExactJson(ctx, {
          account: { ...accountJson(account), operator },
          wallet: { balance: exactNanos(wallet.balance), held: exactNanos(wallet.held), currency: wallet.currency },
          api_keys: keys.map(keyJson),
        });
        return;
      }
      const active = keys.filter((k) => keyStatus(k) === 'active').length;
      ctx.print(
        [
          `Account ${account.id}`,
          `  e-mail   ${account.email}`,
          `  tier     ${account.tier}`,
          ...(operator ? ['  operator yes: its dashboard sign-ins can do what ADMIN_TOKEN does (accounts set-admin --off to remove)'] : []),
          `  created  ${account.createdAt.toISOString()}`,
          `  wallet   ${formatDecimal(wallet.balance)} ${wallet.currency}${wallet.held > 0n ? ` (${formatDecimal(wallet.held)} held by calls in flight)` : ''}`,
          `  API keys ${keys.length} (${active} active)`,
          ...(keys.length ? ['', formatTable(['ID', 'KEY', 'STATUS', 'CREATED', 'EXPIRES', 'NAME'], keys.map(keyRow))] : []),
        ].join('\n'),
      );
    });

  accounts
    .command('set-tier')
    .description("Change an account's tier")
    .requiredOption('--account <id>', 'account id (acct_…)')
    .addOption(tierOption())
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; tier: string; json?: boolean }) => {
      const { accounts: service, billing, checkServersTiers } = await ctx.services();
      // The fee and allocation applied are this command's tiers: refused when the server's differ.
      await checkServersTiers('refuse');
      // Through billing: a tier with a monthly fee charges it when taken.
      await billing.setTier(opts.account, opts.tier);
      const account = await service.getAccount(opts.account);
      if (opts.json) ctx.printJson({ account: accountJson(account) });
      else ctx.print(`Account ${account.id} is now on tier ${account.tier}.`);
    });
};

const registerKeyCommands: CommandGroup = (program, ctx) => {
  const keys = program.command('keys').description('Create, list and revoke API keys');

  keys
    .command('create')
    .description('Create another API key for an account (the key is shown once)')
    .requiredOption('--account <id>', 'account id (acct_…)')
    .option('--name <name>', 'a label for the key')
    .option('--expires-at <iso>', 'expiry, an ISO 8601 date and time (e.g. 2027-01-31T00:00:00Z)')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; name?: string; expiresAt?: string; json?: boolean }) => {
      const expiresAt = opts.expiresAt === undefined ? undefined : parseDateOption(opts.expiresAt, '--expires-at');
      const { accounts: service } = await ctx.services();
      const created = await service.createKey(opts.account, { name: opts.name, expiresAt });
      if (opts.json) {
        ctx.printJson({ id: created.id, api_key: created.apiKey });
        return;
      }
      ctx.print([`Created API key ${created.id}: ${created.apiKey}`, 'Store the key now: it is not shown again.'].join('\n'));
    });

  keys
    .command('revoke')
    .description('Revoke an API key; it is refused from the next request on')
    .argument('<key-id>', 'key id (key_…)')
    .option('--json', 'print JSON')
    .action(async (keyId: string, opts: { json?: boolean }) => {
      const { accounts: service } = await ctx.services();
      const started = Date.now();
      const key = await service.revokeKey(keyId);
      // A second revoke keeps the first time: a key revoked before this command says so.
      const before = key.revokedAt !== null && key.revokedAt.getTime() < started;
      if (opts.json) ctx.printJson(keyJson(key));
      else if (before) ctx.print(`API key ${key.id} (${key.display}) was already revoked, at ${key.revokedAt!.toISOString()}.`);
      else ctx.print(`Revoked API key ${key.id} (${key.display}).`);
    });

  keys
    .command('list')
    .description("List an account's API keys (prefix and last four characters only)")
    .requiredOption('--account <id>', 'account id (acct_…)')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; json?: boolean }) => {
      const { accounts: service } = await ctx.services();
      const list = await service.listKeys(opts.account);
      if (opts.json) {
        ctx.printJson(list.map(keyJson));
        return;
      }
      ctx.print(list.length === 0 ? 'No API keys.' : formatTable(['ID', 'KEY', 'STATUS', 'CREATED', 'EXPIRES', 'NAME'], list.map(keyRow)));
    });
};

/** Every command group, in help order. Later issues append theirs (wallet, models, …). */
export const COMMAND_GROUPS: CommandGroup[] = [
  registerAccountCommands,
  registerKeyCommands,
  registerRateLimitCommands,
  registerWalletCommands,
  registerLedgerCommands,
  registerModelCommands,
  registerMailCommands,
  registerDbCommands,
  registerDashboardCommands,
];

export function buildProgram(ctx: CliContext, io: Pick<CliIO, 'stdout' | 'stderr'>): Command {
  const program = new Command('tollgate')
    .description(
      'Operate a tollgate server: accounts and API keys, rate limits, wallets and the ledger, model files, alert e-mail and the database (uses DATABASE_URL, default sqlite:./data/tollgate.db)',
    )
    .version(TOLLGATE_VERSION, '-V, --version', 'print the version of tollgate')
    // Set before adding commands: subcommands inherit them.
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(add --help for usage)');
  for (const register of COMMAND_GROUPS) register(program, ctx);
  return program;
}

/** Runs the CLI and resolves to the process exit code. Errors go to stderr as one message, without a stack. */
export async function runCli(argv: readonly string[] = process.argv, io: CliIO = defaultIO()): Promise<number> {
  let opened: Promise<CliServices> | undefined;
  const ctx: CliContext = {
    services() {
      opened ??= (async () => {
        const billingConfig = readBillingConfig(io.env);
        let created = false;
        const orm = await openDatabase(io.env.DATABASE_URL || DEFAULT_DATABASE_URL, {
          // A new file is said so: a mistyped DATABASE_URL (or another folder) would otherwise get
          // accounts and keys no server sees, without a word.
          // An upgrade is said too: a database a newer CLI migrated no longer starts an older server.
          migrations: {
            creating: (file) => {
              created = true;
              io.stderr(`tollgate: no database at ${file} (DATABASE_URL): creating a new one\n`);
            },
            starting: (pending, applied) => {
              if (applied === 0 && !created) io.stderr(`tollgate: the database (DATABASE_URL) has no tables yet: creating them\n`);
              else if (applied > 0)
                io.stderr(
                  `tollgate: upgrading the database (DATABASE_URL): ${pending.length} migration${pending.length === 1 ? '' : 's'} to apply (${pending.join(', ')}); a tollgate older than this one cannot start on it afterwards\n`,
                );
            },
          },
        });
        const billing = new BillingService({
          orm,
          tiers: billingConfig.tiers,
          settings: billingConfig.billing,
          logger: createLogger('silent'),
        });
        const checkServersTiers = async (action: 'refuse' | 'warn') => {
          const others = await billing.serversWithOtherTiers();
          if (others.length === 0) return;
          const mine = billingConfig.configPath ?? 'the built-in tiers (no config file)';
          const theirs = others.map((i) => `pid ${i.pid} on ${i.host.split(' ')[0]}, config ${i.configPath ?? 'unknown'}`).join('; ');
          const paths = [...new Set(others.map((i) => i.configPath).filter((p) => p !== null))];
          const fix = paths.length === 1 ? `run the command with CONFIG=${paths[0]}` : "set CONFIG to the servers' config file";
          const message =
            `the server running on this database (${theirs}) has other tiers (fees, allocations or rate limits) than ${mine}, ` +
            `which this command read: ${fix}, or restart the server with this config`;
          if (action === 'refuse') throw new DomainError('invalid_value', `${message}.`);
          io.stderr(`warning: ${message}; shown with the tiers this command read.\n`);
        };
        return {
          orm,
          accounts: new AccountsService(orm),
          rateLimitOverrides: new RateLimitOverrides(orm),
          billing,
          tiers: billingConfig.tiers,
          checkServersTiers,
        };
      })();
      return opened;
    },
    printJson: (value) => io.stdout(`${JSON.stringify(value)}\n`),
    print: (text) => io.stdout(`${text}\n`),
    stderr: io.stderr,
    env: io.env,
  };
  const program = buildProgram(ctx, io);
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    // Commander has already printed its own usage errors (and help, which "fails" with code 0).
    if (e instanceof CommanderError) return e.exitCode;
    io.stderr(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    if (io.env.TOLLGATE_DEBUG && e instanceof Error && !(e instanceof DomainError)) io.stderr(`${e.stack}\n`);
    return 1;
  } finally {
    if (opened) {
      await opened.then(({ orm }) => closeDatabase(orm)).catch(() => {});
    }
  }
}

/**
 * The tiers (monthly fees) and billing settings of the server's config file (env CONFIG, default
 * config/default.yaml); the defaults when no CONFIG is given and the default file is absent.
 */
function readBillingConfig(env: NodeJS.ProcessEnv): Pick<AppConfig, 'tiers' | 'billing'> & { configPath: string | null } {
  try {
    return loadConfig(env, { payments: false });
  } catch (e) {
    if (e instanceof ConfigError && !env.CONFIG && /cannot read config file/.test(e.message)) {
      return {
        tiers: TIER_DEFAULTS,
        billing: BILLING_DEFAULTS,
        configPath: null,
      };
    }
    throw e;
  }
}

function defaultIO(): CliIO {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
  };
}

function tierOption(): Option {
  return new Option('--tier <tier>', 'the pricing tier').choices(TIERS).makeOptionMandatory();
}

function parseDateOption(value: string, flag: string): Date {
  const date = parseIsoDateTime(value);
  if (!date) {
    throw new DomainError('invalid_value', `${flag} must be an ISO 8601 date and time, e.g. 2027-01-31T00:00:00Z.`);
  }
  return date;
}

function accountJson(a: AccountView) {
  return { id: a.id, email: a.email, tier: a.tier, created_at: a.createdAt.toISOString() };
}

function keyJson(k: ApiKeyView) {
  return {
    id: k.id,
    display: k.display,
    name: k.name,
    created_at: k.createdAt.toISOString(),
    expires_at: k.expiresAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

function keyStatus(k: ApiKeyView, now = new Date()): string {
  if (k.revokedAt) return 'revoked';
  if (k.expiresAt && k.expiresAt.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

function keyRow(k: ApiKeyView): string[] {
  return [k.id, k.display, keyStatus(k), k.createdAt.toISOString(), k.expiresAt?.toISOString() ?? '-', k.name ?? ''];
}

function parseIntOption(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new DomainError('invalid_value', `${flag} must be a whole number, got '${value}'.`);
  return n;
}

/** JSON whose money fields are exact decimals (nanos written as numbers without rounding). */
function printExactJson(ctx: CliContext, value: unknown): void {
  ctx.print(stringifyExact(value));
}

function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
