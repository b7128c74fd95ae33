// Builds the rate limiter the config asks for: none, in memory, or on Redis (REDIS_URL).
import type { RateLimitSettings } from './types.js';
import { MemoryRateLimitStore } from './memory-store.js';
import type { NotificationSink } from './notification-sink.js';
import { RateLimiter, type WarnLogger } from './rate-limiter.js';
import { RedisRateLimitStore } from './redis-store.js';

export async function createRateLimiter(
  settings: RateLimitSettings,
  redisUrl: string | null,
  opts: { logger: WarnLogger & { info(obj: object, msg: string): void }; notifications?: NotificationSink },
): Promise<RateLimiter | null> {
  if (settings.backend === 'none') return null;
  const common = {
    failClosed: settings.fail_closed,
    alertThreshold: settings.alert_threshold,
    logger: opts.logger,
    notifications: opts.notifications,
  };
  if (settings.backend === 'memory') return new RateLimiter(new MemoryRateLimitStore(), common);
  let lastLogged = 0;
  let limiter: RateLimiter | undefined;
  const store = new RedisRateLimitStore(redisUrl!, {
    onDeferredError: (err) => limiter?.backgroundError(err),
    prefix: settings.key_prefix,
    // ioredis reports every failed reconnection; one line every 10 s is enough.
    onConnectionError: (err) => {
      if (Date.now() - lastLogged < 10_000) return;
      lastLogged = Date.now();
      opts.logger.warn({ err: err.message }, 'rate limiter: cannot reach Redis (retrying in the background)');
    },
  });
  // Start-up does not wait for Redis: until it answers, calls fail open (or closed) like later outages.
  if (await store.connect()) opts.logger.info({ backend: 'redis' }, 'rate limiter: connected to Redis');
  limiter = new RateLimiter(store, common);
  return limiter;
}
