// The benchmark's baseline server: tollgate exactly as `src/main.ts` builds it, except that the
// inference service runs without metering (no billing, no rate limits). Bench code only: the
// product has no way to turn billing off.
import { loadConfig } from '../src/config.js';
import { createServices } from '../src/container.js';
import { InferenceService } from '../src/domain/inference/inference-service.js';
import { createLogger } from '../src/logger.js';
import { startServer } from '../src/server.js';

const config = loadConfig();
const services = await createServices(config, createLogger());
services.inference = new InferenceService(services.catalog, services.engines);
const running = await startServer(services);
process.on('SIGTERM', () => void running.shutdown().then(() => process.exit(0)));
