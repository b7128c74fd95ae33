// The operator's dashboard commands (issue 15): a set-password link for an account an operator
// created (it has no password yet; the link works once, for a week), and the admin flag that makes
// an account's sign-ins operator sessions.
import type { Command } from 'commander';
import type { CliContext, CliServices, CommandGroup } from './cli.js';
import { AuthService } from './domain/auth/auth-service.js';
import { createLogger } from './logger.js';

/** The address people reach the server at, as the server computes it (PUBLIC_URL, else HOST and PORT). */
function publicUrl(env: NodeJS.ProcessEnv): string {
  if (env.PUBLIC_URL) return env.PUBLIC_URL.replace(/\/+$/, '');
  const host = env.HOST && env.HOST !== '0.0.0.0' && env.HOST !== '::' ? env.HOST : '127.0.0.1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${env.PORT || 8080}`;
}

export function authFor(services: CliServices, env: NodeJS.ProcessEnv): AuthService {
  return new AuthService({
    orm: services.orm,
    accounts: services.accounts,
    settings: { signup: 'open', invite_codes: [], session_days: 30, max_failed_logins: 5 },
    adminToken: () => null,
    publicUrl: () => publicUrl(env),
    mailer: null,
    logger: createLogger('silent'),
  });
}

export async function setPasswordLink(ctx: CliContext, accountId: string): Promise<string> {
  return authFor(await ctx.services(), ctx.env).passwordLink(accountId, 'set');
}

export const registerDashboardCommands: CommandGroup = (program: Command, ctx: CliContext) => {
  const accounts = program.commands.find((c) => c.name() === 'accounts') ?? program.command('accounts');
  accounts
    .command('password-link')
    .description("Print a link to the dashboard's set-password page for an account (works once, for 7 days)")
    .requiredOption('--account <id>', 'the account id')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; json?: boolean }) => {
      const { accounts: service } = await ctx.services();
      const account = await service.getAccount(opts.account);
      const url = await setPasswordLink(ctx, account.id);
      if (opts.json) return ctx.printJson({ account_id: account.id, set_password_url: url });
      ctx.print(`Send this link to ${account.email} to choose a password (it works once, for 7 days):\n${url}`);
    });
  accounts
    .command('set-admin')
    .description('Flag an account as an operator (its dashboard sign-ins can do what ADMIN_TOKEN does), or unflag it with --off')
    .requiredOption('--account <id>', 'the account id')
    .option('--off', 'remove the flag')
    .option('--json', 'print JSON')
    .action(async (opts: { account: string; off?: boolean; json?: boolean }) => {
      const auth = authFor(await ctx.services(), ctx.env);
      await auth.setAdmin(opts.account, !opts.off);
      if (opts.json) return ctx.printJson({ account_id: opts.account, admin: await auth.isAdmin(opts.account) });
      ctx.print(`${opts.account} is ${opts.off ? 'no longer' : 'now'} an operator.`);
    });
};
