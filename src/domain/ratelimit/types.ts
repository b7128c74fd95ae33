// The vocabulary of rate limiting: the limits of an account, the state a client is told about in
// X-RateLimit-* headers, and the store interface that the in-memory and Redis backends implement.
//
// The algorithm, shared by both backends: a sliding window of exact per-second counts. Each
// admission adds 1 request and its token estimate to the slot of the current second; a request is
// admitted when the slots of the last WINDOW_SECONDS seconds *plus the current one* leave room for
// it in both dimensions. Counting the extra (current) slot makes the window 60–61 s long rather
// than 59–60 s, so any 60-second span of real time holds at most the limit: no burst at window
// edges (a fixed window allows 2× the limit across a boundary; a token bucket or GCRA with a
// burst of the limit allows up to about 2× within one minute). The price is that a request's
// usage is remembered up to one second longer than a minute. A slot older than the window no
// longer counts and is deleted when next seen; whole states expire on their own (TTL in Redis, a
// sweep in memory).

/** Seconds of the rate window (the "per minute" of RPM and TPM). */
export const WINDOW_SECONDS = 60;
/** Slots counted for an admission: the window's seconds plus the current, partial one. */
export const WINDOW_SLOTS = WINDOW_SECONDS + 1;
/** The window over which 429s are counted for the "frequent rate-limit hits" alert. */
export const HITS_WINDOW_SECONDS = 600;
/** Width of one slot of the hits window (so 10 minutes are 10 slots, plus the current one). */
export const HITS_SLOT_SECONDS = 60;
/** At most one "frequent rate-limit hits" alert per account in this long. */
export const ALERT_INTERVAL_SECONDS = 3600;

/** The limits of one account, per minute. */
export interface RateLimits {
  rpm: number;
  tpm: number;
}

export type Dimension = 'rpm' | 'tpm';

export interface DimensionState {
  limit: number;
  remaining: number;
  /** Unix seconds when everything counted now has left the window (the quota is whole again). */
  reset: number;
}

export interface LimiterState {
  rpm: DimensionState;
  tpm: DimensionState;
}

/** Where an admission was counted, so a correction can find it. */
export interface AdmissionRef {
  key: string;
  /** The absolute slot (Unix second) the request and its tokens were added to. */
  slot: number;
}

export type AdmitResult =
  | { admitted: true; ref: AdmissionRef; state: LimiterState }
  | {
      admitted: false;
      /** The limits that refused the request (RPM first when both did). */
      exceeded: Dimension[];
      /**
       * Seconds until the request would fit; null when it never can (its token estimate alone is
       * over the TPM limit).
       */
      retryAfter: number | null;
      state: LimiterState;
      /** 429s of this account in the last HITS_WINDOW_SECONDS, this one included. */
      recentHits: number;
      /** True for the one refusal that crossed the alert threshold (at most once an hour). */
      alert: boolean;
    };

/**
 * A backend of the sliding window. Every method is atomic with respect to the others, across all
 * the processes sharing the store. `admit` and `correct` may answer at once (the memory store) or
 * with a promise (Redis).
 */
export interface RateLimitStore {
  readonly name: 'memory' | 'redis';
  /**
   * Counts 1 request and `tokens` when both fit under `limits`, or counts nothing and records a
   * hit (for the alert, which fires when hits exceed `alertThreshold`).
   */
  admit(key: string, limits: RateLimits, tokens: number, alertThreshold: number): AdmitResult | Promise<AdmitResult>;
  /**
   * Adds `deltaTokens` (negative: gives tokens back) to the slot of an admission, never below zero;
   * nothing when the slot has already left the window. Returns the state afterwards, or null when
   * the store applies the correction a moment later (Redis batches it with the next admission).
   */
  correct(ref: AdmissionRef, limits: RateLimits, deltaTokens: number): LimiterState | null | Promise<LimiterState | null>;
  /** 429s of the key in the last HITS_WINDOW_SECONDS. */
  recentHits(key: string): Promise<number>;
  /** Whether the store can be asked now (Redis: connected); memory: always. For /readyz. */
  reachable(): boolean;
  /** Asks the store something trivial (Redis: PING); rejects when it does not answer. For /readyz. */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

/** The config's `rate_limits:` section, with the backend resolved (src/config.ts). */
export interface RateLimitSettings {
  backend: 'memory' | 'redis' | 'none';
  fail_closed: boolean;
  alert_threshold: number;
  key_prefix: string;
}
