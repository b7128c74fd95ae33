// Structured JSON logs (pino). Every request line carries its request id.
import { pino, type Logger } from 'pino';

export type { Logger };

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const FORMATS = ['json', 'pretty'];

/** What is wrong with LOG_LEVEL or LOG_FORMAT, for a one-line start-up error; null when nothing is. */
export function logEnvProblem(env: NodeJS.ProcessEnv): string | null {
  if (env.LOG_LEVEL !== undefined && !LEVELS.includes(env.LOG_LEVEL))
    return `LOG_LEVEL must be one of ${LEVELS.join(', ')}; got "${env.LOG_LEVEL.slice(0, 40)}"`;
  if (env.LOG_FORMAT !== undefined && !FORMATS.includes(env.LOG_FORMAT))
    return `LOG_FORMAT must be one of ${FORMATS.join(', ')}; got "${env.LOG_FORMAT.slice(0, 40)}"`;
  return null;
}

/** JSON lines by default; `LOG_FORMAT=pretty` prints them for people (pino-pretty, in a worker thread). */
export function createLogger(level = process.env.LOG_LEVEL ?? 'info', format = process.env.LOG_FORMAT ?? 'json'): Logger {
  return pino({
    level,
    base: { service: 'tollgate' },
    // Keys and tokens must never reach a log line.
    redact: { paths: ['req.headers.authorization', '*.authorization', '*.apiKey', '*.api_key'], censor: '[redacted]' },
    ...(format === 'pretty'
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' } } }
      : {}),
  });
}
