// `npm start`: loads the config, checks that the port is free, opens the database, serves the API
// until SIGTERM/SIGINT/SIGHUP. A problem an operator can fix (a bad config, a port in use, a database file
// it may not write) is one line on stderr, printed once, without a stack trace.
import { createServer } from 'node:net';
import { ConfigError, loadConfig, SandboxHostError } from './config.js';
import path from 'node:path';
import { DatabaseLocationError, parseDatabaseUrl, withoutCredentials } from './db/orm.js';
import { closeServices, createServices } from './container.js';
import { createLogger, logEnvProblem } from './logger.js';
import { startServer } from './server.js';

const logProblem = logEnvProblem(process.env);
if (logProblem) {
  console.error(`tollgate: ${logProblem}`);
  process.exit(1);
}
const logger = createLogger();

/** Thrown when the address cannot be listened on (the port taken, HOST not this machine's): the message says what to do. */
class ListenError extends Error {}

function portInUse(host: string, port: number): ListenError {
  return new ListenError(
    `port ${port} on ${host} is already in use: stop what listens there, or choose another port with PORT (e.g. PORT=${port === 65535 ? 8081 : port + 1} npm start)`,
  );
}

/** An address this machine cannot listen on (HOST names no interface of it, or no host at all): the message says what to do. */
function cannotBind(host: string, port: number, e: NodeJS.ErrnoException): Error {
  if (e.code === 'EADDRINUSE') return portInUse(host, port);
  if (e.code === 'EADDRNOTAVAIL')
    return new ListenError(
      `HOST ${host} is not an address of this machine: listen on one of its own (127.0.0.1 by default, 0.0.0.0 for every interface)`,
    );
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN')
    return new ListenError(
      `HOST ${host} is no address or name this machine can resolve (${e.code}): set HOST to an address, e.g. 127.0.0.1`,
    );
  if (e.code === 'EACCES')
    return new ListenError(`port ${port} needs privileges this user does not have: choose one above 1023 with PORT (e.g. PORT=8080)`);
  return e;
}

/** Binds the address and lets it go, before any model loads or the database opens. */
async function checkPortFree(host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => reject(cannotBind(host, port, e)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** The database as the start-up line names it: a SQLite file's absolute path, a URL without its credentials. */
function databaseShown(url: string): string {
  const target = parseDatabaseUrl(url);
  return target.kind === 'sqlite' ? (target.location === ':memory:' ? ':memory:' : path.resolve(target.location)) : withoutCredentials(url);
}

async function main() {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (e) {
    // A HOST this machine cannot listen on is said as that before the sandbox's refusal of it.
    if (e instanceof SandboxHostError) await checkPortFree(e.host, e.port);
    throw e;
  }
  await checkPortFree(config.host, config.port);
  const services = await createServices(config, logger);
  const running = await startServer(services).catch(async (e: NodeJS.ErrnoException) => {
    // Taken between the check and now.
    await closeServices(services).catch(() => {});
    throw cannotBind(config.host, config.port, e);
  });
  // PORT=0: the port is known only now; links (checkout, password reset) name the one bound.
  if (config.port === 0 && !process.env.PUBLIC_URL) {
    const bound = new URL(running.url);
    // Every interface (0.0.0.0, ::): links name loopback, as loadConfig's default does.
    if (bound.hostname === '0.0.0.0' || bound.hostname === '[::]') bound.hostname = '127.0.0.1';
    config.publicUrl = bound.origin;
  }
  logger.info(
    {
      url: running.url,
      publicUrl: config.publicUrl,
      models: config.models.length,
      config: config.configPath,
      database: databaseShown(config.databaseUrl),
    },
    'tollgate is serving',
  );
  // A new database: how the first account is made.
  if ((await services.accounts.listAccounts({ limit: 1 })).accounts.length === 0)
    logger.info(
      `no accounts yet: create one with \`npx tollgate accounts create --email you@example.com --tier developer\` (the same DATABASE_URL)${config.accounts.signup === 'closed' ? '' : `, or sign up at ${config.publicUrl}/dashboard/signup`}`,
    );
  // What a first run may not have meant: said once, at start.
  if (config.adminToken === null)
    logger.warn(
      "ADMIN_TOKEN is not set: the operator's GraphQL operations (accounts, credits, tiers) answer 403 admin_required; set it to a secret of 16 characters or more (the CLI works without it)",
    );
  if (config.models.length === 0)
    logger.warn(
      { config: config.configPath },
      'the config names no models: every model call answers 400 invalid_model; add some under models:',
    );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await running.shutdown();
    await closeServices(services);
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // The terminal that ran `npm start` closed: stopped as gracefully (by default the process would
  // die at once, its calls in flight unbilled). The config is read at start only: restart to apply it.
  process.on('SIGHUP', () => void stop('SIGHUP'));
}

process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof ListenError || err instanceof DatabaseLocationError) {
    // Once, for a person: the JSON log would only say it again.
    console.error(`tollgate: ${err.message}`);
  } else {
    logger.fatal({ err }, 'start-up failed');
  }
  process.exit(1);
});
