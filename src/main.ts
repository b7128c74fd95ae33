// `npm start`: loads the config, opens the database, serves the API until SIGTERM/SIGINT.
import { ConfigError, loadConfig } from './config.js';
import { closeServices, createServices } from './container.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';

const logger = createLogger();

async function main() {
  const config = loadConfig();
  const services = await createServices(config, logger);
  const running = await startServer(services);
  logger.info({ url: running.url, publicUrl: config.publicUrl, models: config.models.length, config: config.configPath }, 'tollgate is serving');

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
}

process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));

main().catch((err) => {
  if (err instanceof ConfigError) {
    logger.fatal(err.message);
    console.error(`tollgate: ${err.message}`);
  } else {
    logger.fatal({ err }, 'start-up failed');
  }
  process.exit(1);
});
