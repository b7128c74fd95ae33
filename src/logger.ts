// Structured JSON logs (pino). Every request line carries its request id.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service: 'tollgate' },
    // Keys and tokens must never reach a log line.
    redact: { paths: ['req.headers.authorization', '*.authorization', '*.apiKey', '*.api_key'], censor: '[redacted]' },
  });
}
