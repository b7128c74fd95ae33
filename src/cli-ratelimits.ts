// The operator CLI's rate-limit commands: `tollgate limits show|set`. An override replaces the
// account's tier RPM or TPM (README, "Rate limits"); it is read with the key on every request, so
// it applies from the account's next call on, on every instance.
import type { CliContext, CommandGroup } from './cli.js';
import type { RateLimitOverride } from './domain/accounts/accounts-service.js';
import { DomainError } from './domain/errors.js';

/** `--rpm 600` sets, `--rpm tier` goes back to the tier's limit. */
function parseLimit(text: string, flag: string): number | null {
  if (text === 'tier') return null;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1)
    throw new DomainError('invalid_value', `${flag} must be a positive integer, or "tier" for the tier's limit; got '${text}'.`);
  return n;
}

async function describe(ctx: CliContext, accountId: string, override: RateLimitOverride) {
  const { accounts, tiers, checkServersTiers } = await ctx.services();
  const account = await accounts.getAccount(accountId);
  // The tier's limits shown are this command's config's: said so when the server's differ.
  await checkServersTiers('warn');
  const tier = tiers[account.tier];
  return {
    account_id: account.id,
    tier: account.tier,
    rpm: override.rpm ?? tier.rpm,
    tpm: override.tpm ?? tier.tpm,
    override: { rpm: override.rpm, tpm: override.tpm },
  };
}

function print(ctx: CliContext, json: boolean | undefined, d: Awaited<ReturnType<typeof describe>>) {
  if (json) return ctx.printJson(d);
  const source = (v: number | null) => (v === null ? `tier ${d.tier}` : 'override');
  ctx.print(`Account ${d.account_id}: ${d.rpm} requests/min (${source(d.override.rpm)}), ${d.tpm} tokens/min (${source(d.override.tpm)}).`);
}

export const registerRateLimitCommands: CommandGroup = (program, ctx) => {
  const limits = program.command('limits').description("Show or override an account's rate limits (requests and tokens per minute)");

  limits
    .command('show')
    .description("An account's rate limits and where they come from")
    .requiredOption('--account <id>', 'account id (acct_…)')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; json?: boolean }) => {
      const { rateLimitOverrides } = await ctx.services();
      const { tier: _tier, ...override } = await rateLimitOverrides.profile(opts.account);
      print(ctx, opts.json, await describe(ctx, opts.account, override));
    });

  limits
    .command('set')
    .description('Override an account\'s RPM and/or TPM ("tier" goes back to the tier\'s limit)')
    .requiredOption('--account <id>', 'account id (acct_…)')
    .option('--rpm <n|tier>', 'requests per minute')
    .option('--tpm <n|tier>', 'tokens per minute')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; rpm?: string; tpm?: string; json?: boolean }) => {
      if (opts.rpm === undefined && opts.tpm === undefined) throw new DomainError('invalid_value', 'give --rpm, --tpm or both.');
      const { rateLimitOverrides } = await ctx.services();
      const override = await rateLimitOverrides.set(opts.account, {
        rpm: opts.rpm === undefined ? undefined : parseLimit(opts.rpm, '--rpm'),
        tpm: opts.tpm === undefined ? undefined : parseLimit(opts.tpm, '--tpm'),
      });
      print(ctx, opts.json, await describe(ctx, opts.account, override));
    });
};
