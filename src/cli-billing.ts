// The operator CLI's billing commands: `tollgate wallet credit|balance`, `tollgate ledger verify`.
// They run the same BillingService as the server and GraphQL (creditWallet), on DATABASE_URL.
import { existsSync } from 'node:fs';
import { Option } from 'commander';
import type { CliContext, CommandGroup } from './cli.js';
import { DEFAULT_DATABASE_URL, parseDatabaseUrl, storageProblems } from './db/orm.js';
import { MoneyFormatError, parseDecimal, WALLET_CURRENCY, formatDecimal } from './domain/billing/money.js';
import type { CreditType } from './domain/billing/billing-service.js';
import { DomainError } from './domain/errors.js';
import type { TransactionView } from './domain/ledger/ledger.js';
import { exactNanos, stringifyExact } from './exact-json.js';

export function transactionJson(t: TransactionView) {
  return {
    id: t.id,
    account_id: t.accountId,
    type: t.type,
    amount: exactNanos(t.amount),
    balance_after: exactNanos(t.balanceAfter),
    created_at: t.createdAt.toISOString(),
    description: t.description,
    reference: t.reference,
  };
}

function parseAmount(text: string): bigint {
  try {
    return parseDecimal(text);
  } catch (e) {
    throw new DomainError(
      'invalid_value',
      `--amount must be a positive decimal amount of ${WALLET_CURRENCY} such as 12.5: ${e instanceof MoneyFormatError ? e.message : text}.`,
    );
  }
}

const printExact = (ctx: CliContext, value: unknown) => ctx.print(stringifyExact(value));

export const registerWalletCommands: CommandGroup = (program, ctx) => {
  const wallet = program.command('wallet').description("Credit an account's wallet and read its balance");

  wallet
    .command('credit')
    .description('Add bonus or refund credits to a wallet; prints the transaction')
    .requiredOption('--account <id>', 'account id (acct_…)')
    .requiredOption('--amount <amount>', `amount in ${WALLET_CURRENCY}, e.g. 12.5 (at most 9 decimal places)`)
    .addOption(new Option('--type <type>', 'transaction type').choices(['bonus', 'refund']).makeOptionMandatory())
    .requiredOption('--description <text>', 'what the credit is for, shown to the account')
    .option('--idempotency-key <key>', 'a repeated command with the same key credits once and prints the first transaction')
    .option('--json', 'print JSON')
    .action(
      async (opts: { account: string; amount: string; type: CreditType; description: string; idempotencyKey?: string; json?: boolean }) => {
        const amount = parseAmount(opts.amount);
        const { billing, checkServersTiers } = await ctx.services();
        // A credit also charges a monthly fee that is due: with the running server's fees, not
        // with other ones this command may have read.
        await checkServersTiers('refuse');
        const started = Date.now();
        const t = await billing.creditWallet({
          accountId: opts.account,
          amount,
          type: opts.type,
          description: opts.description,
          idempotencyKey: opts.idempotencyKey ?? null,
        });
        // A repeated key answers the transaction it made before this command began: nothing new.
        const replayed = t.createdAt.getTime() < started;
        // What the same step wrote beside it (a monthly fee that fell due), newest first.
        const recent = (await billing.listTransactions(t.accountId, { limit: 10, order: 'desc' })).transactions;
        const withIt = replayed ? [] : recent.filter((r) => r.id !== t.id && r.createdAt.getTime() === t.createdAt.getTime());
        const newest = recent.find((r) => r.id === t.id || withIt.includes(r));
        if (opts.json) printExact(ctx, { ...transactionJson(t), replayed, charged_with_it: withIt.map(transactionJson) });
        else if (replayed)
          ctx.print(
            `Nothing credited: the idempotency key ${opts.idempotencyKey} was used at ${t.createdAt.toISOString()} for transaction ${t.id} (${formatDecimal(t.amount)} ${WALLET_CURRENCY}, ${t.type}, to ${t.accountId}).`,
          );
        else if (withIt.length > 0)
          ctx.print(
            `Credited ${formatDecimal(t.amount)} ${WALLET_CURRENCY} (${t.type}) to ${t.accountId}, and charged with it ${withIt
              .map((r) => `${formatDecimal(-r.amount)} ${WALLET_CURRENCY} (${r.description})`)
              .join(
                ', ',
              )}, which had fallen due: balance ${formatDecimal((newest ?? t).balanceAfter)} ${WALLET_CURRENCY}. Transaction ${t.id}.`,
          );
        else
          ctx.print(
            `Credited ${formatDecimal(t.amount)} ${WALLET_CURRENCY} (${t.type}) to ${t.accountId}: balance ${formatDecimal(t.balanceAfter)} ${WALLET_CURRENCY}. Transaction ${t.id}.`,
          );
      },
    );

  wallet
    .command('balance')
    .description("Print an account's balance and what calls in flight hold")
    .requiredOption('--account <id>', 'account id (acct_…)')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; json?: boolean }) => {
      const { billing, accounts } = await ctx.services();
      await accounts.getAccount(opts.account); // not_found for an unknown id
      const w = await billing.getWallet(opts.account);
      if (opts.json)
        printExact(ctx, { account_id: w.accountId, balance: exactNanos(w.balance), held: exactNanos(w.held), currency: w.currency });
      else
        ctx.print(`${w.accountId}: balance ${formatDecimal(w.balance)} ${w.currency} (${formatDecimal(w.held)} held by calls in flight).`);
    });
};

export const registerLedgerCommands: CommandGroup = (program, ctx) => {
  const ledger = program.command('ledger').description('Check the wallet ledger');

  ledger
    .command('verify')
    .description("Check the ledger invariants (and, on SQLite, the file's integrity); exits 1 and lists the problems when one fails")
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      // A file that is not there is not verified as a new, empty one (a mistyped backup path).
      const target = parseDatabaseUrl(ctx.env.DATABASE_URL || DEFAULT_DATABASE_URL);
      if (target.kind === 'sqlite' && target.location !== ':memory:' && !existsSync(target.location))
        throw new DomainError('invalid_request', `no database at ${target.location} (DATABASE_URL): nothing to verify`);
      const { billing, orm } = await ctx.services();
      // The file itself first: a broken index can leave every invariant reading right.
      const problems = [...(await storageProblems(orm)), ...(await billing.verifyLedger())];
      if (opts.json) ctx.printJson({ ok: problems.length === 0, problems });
      else if (problems.length === 0) ctx.print('Ledger verified: every invariant holds.');
      else ctx.print(problems.map((p) => `- ${p}`).join('\n'));
      if (problems.length > 0)
        throw new DomainError('internal_error', `ledger verify found ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
    });
};
