// Structured JSON logs (pino). Every request line carries its request id.
import { pino, type Logger } from 'pino';

export type { Logger };

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
