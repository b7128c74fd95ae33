// The one error family of the domain. Each code has a stable HTTP status and OpenAI-style type;
// both doors (GraphQL extensions, compat's HTTP body) read them from the table below and nowhere else.

export const ERROR_CODES = {
  // 400 invalid_request_error
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  missing_required_parameter: { status: 400, type: 'invalid_request_error' },
  invalid_type: { status: 400, type: 'invalid_request_error' },
  invalid_value: { status: 400, type: 'invalid_request_error' },
  unsupported_parameter: { status: 400, type: 'invalid_request_error' },
  invalid_model: { status: 400, type: 'invalid_request_error' },
  too_many_inputs: { status: 400, type: 'invalid_request_error' },
  input_too_long: { status: 400, type: 'invalid_request_error' },
  too_many_documents: { status: 400, type: 'invalid_request_error' },
  empty_query: { status: 400, type: 'invalid_request_error' },
  too_many_stop_sequences: { status: 400, type: 'invalid_request_error' },
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  /**
   * The model's upstream server refused the request as invalid (its 400 or 422: a JSON schema its
   * structured-output engine does not support, a value out of its range). Not retried: the same
   * request would be refused again.
   */
  upstream_rejected_request: { status: 400, type: 'invalid_request_error' },
  /** A chat model's content filter flagged the messages (src/domain/inference/content-filter.ts). */
  content_filter: { status: 400, type: 'invalid_request_error' },
  // Top-ups (payments): the amount rules, a card needed for automatic top-ups, webhook signatures.
  invalid_amount: { status: 400, type: 'invalid_request_error' },
  amount_too_small: { status: 400, type: 'invalid_request_error' },
  amount_requires_sales: { status: 400, type: 'invalid_request_error' },
  payment_method_required: { status: 400, type: 'invalid_request_error' },
  invalid_signature: { status: 400, type: 'invalid_request_error' },
  // 401 / 403
  invalid_api_key: { status: 401, type: 'authentication_error' },
  admin_required: { status: 403, type: 'permission_error' },
  // A customer choosing a tier the operator arranges (tiers.<name>.self_service: false).
  tier_not_self_service: { status: 403, type: 'permission_error' },
  // Dashboard sign-in (issue 15): a wrong e-mail or password, an operation that needs a signed-in
  // person (not an API key), sign-up turned off or needing an invitation, a used or expired link.
  invalid_credentials: { status: 401, type: 'authentication_error' },
  session_required: { status: 401, type: 'authentication_error' },
  signup_closed: { status: 403, type: 'permission_error' },
  invalid_token: { status: 400, type: 'invalid_request_error' },
  too_many_attempts: { status: 429, type: 'rate_limit_error' },
  // 404
  model_not_found: { status: 404, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  // 413
  request_too_large: { status: 413, type: 'invalid_request_error' },
  // 408: a request whose headers or body came too slowly (node:http's timeouts).
  request_timeout: { status: 408, type: 'invalid_request_error' },
  // 431: headers over node:http's limit, refused before the app sees the request.
  request_headers_too_large: { status: 431, type: 'invalid_request_error' },
  // 409 / 422: a checkout no longer open; an Idempotency-Key reused with another body (422, not
  // 409, which the OpenAI SDKs retry).
  checkout_not_open: { status: 409, type: 'invalid_request_error' },
  /** Another account has this e-mail address (compared case-insensitively). */
  email_taken: { status: 409, type: 'invalid_request_error' },
  idempotency_key_reused: { status: 422, type: 'invalid_request_error' },
  // 402 / 429
  monthly_allocation_exhausted: { status: 402, type: 'insufficient_quota' },
  insufficient_balance: { status: 402, type: 'insufficient_quota' },
  spending_limit_reached: { status: 402, type: 'insufficient_quota' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  /** An account holding its most standing subscriptions (wallet, notifications) on one server. */
  too_many_subscriptions: { status: 429, type: 'rate_limit_error' },
  /** A client address holding its most WebSockets on one server (`server.max_websockets_per_client`). */
  too_many_connections: { status: 429, type: 'rate_limit_error' },
  // 5xx
  upstream_error: { status: 502, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'server_error' },
  payment_processor_error: { status: 502, type: 'server_error' },
  model_unavailable: { status: 503, type: 'server_error' },
  model_overloaded: { status: 503, type: 'server_error' },
  shutting_down: { status: 503, type: 'server_error' },
  /** Rate limits cannot be checked (Redis away) and `rate_limits.fail_closed` is set. */
  rate_limiter_unavailable: { status: 503, type: 'server_error' },
  /** The database dropped or refused the connection for a moment (src/db/unavailable.ts). */
  database_unavailable: { status: 503, type: 'server_error' },
  internal_error: { status: 500, type: 'server_error' },
  /** The client closed the connection first: nobody reads this answer; 499 in the access log. */
  client_disconnected: { status: 499, type: 'invalid_request_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class DomainError extends Error {
  readonly code: ErrorCode;
  /** The request field at fault, OpenAI's `param`, when there is one. */
  readonly param: string | null;
  /** Seconds a client should wait before retrying (429, 503). */
  readonly retryAfter?: number;

  constructor(code: ErrorCode, message: string, opts: { param?: string | null; retryAfter?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'DomainError';
    this.code = code;
    this.param = opts.param ?? null;
    this.retryAfter = opts.retryAfter;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  get type(): string {
    return ERROR_CODES[this.code].type;
  }
}

export const invalid = (code: ErrorCode, message: string, param?: string) => new DomainError(code, message, { param });

/** A body over `server.body_limit`, on any door (`limit` as configured, e.g. "1mb"). */
export const requestTooLarge = (limit: string) =>
  new DomainError('request_too_large', `The request body is larger than the limit of ${limit}.`);

export function isDomainError(e: unknown): e is DomainError {
  return e instanceof DomainError;
}

/**
 * A setup mistake the operator must fix before the server can start: the config file or the
 * environment (src/config.ts), or a model file that does not match its catalog entry. Start-up
 * reports it as one message naming the key, not as a crash.
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Why a call's signal was aborted when its client went away before the answer was complete. Not a
 * DomainError: the call's code tells a client leaving from a refusal by what it was aborted with.
 */
export class ClientDisconnected extends Error {
  constructor() {
    super('The client closed the connection before the answer was complete.');
    this.name = 'ClientDisconnected';
  }
}
