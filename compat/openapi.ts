// The OpenAPI 3.1 document of /v1, served at GET /openapi.json (and rendered at GET /docs). The
// request bodies are the very zod schemas the routes validate with, so the two cannot drift; the
// responses (status, headers, body) are described here, and every /v1 response the test suite sees
// is checked against them (test/support/openapi-contract.ts). A header is required only when every
// such response carries it. Unknown fields in requests are kept (not refused), as the routes do.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { body as chatBody } from './chat.js';
import { body as embeddingsBody } from './embeddings.js';
import { body as moderateBody } from './moderate.js';
import { body as rerankBody } from './rerank.js';
import { TopUpBody } from './top-up.js';

const ErrorBody = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .meta({ id: 'Error', description: 'Every refusal: the HTTP status, and this body.' });

const Usage = z.object({ prompt_tokens: z.int(), completion_tokens: z.int().optional(), total_tokens: z.int() }).meta({ id: 'Usage' });

const Model = z
  .object({
    id: z.string(),
    object: z.literal('model'),
    created: z.int(),
    owned_by: z.string(),
    category: z.enum(['chat', 'embedding', 'moderation', 'reranking']),
    version: z.string(),
    capabilities: z.record(z.string(), z.boolean()),
    pricing: z.record(z.string(), z.union([z.number(), z.string()])),
    specifications: z.record(z.string(), z.union([z.number(), z.string(), z.array(z.number())])),
    status: z.enum(['active', 'beta', 'deprecated']),
    available: z.boolean().describe('Whether the model can serve a call now (status is its lifecycle).'),
    unavailable_reason: z.string().nullable(),
  })
  .meta({ id: 'Model' });

const FinishReason = z.enum(['stop', 'length', 'content_filter', 'tool_calls']);

const ToolCall = z
  .object({
    id: z.string(),
    type: z.literal('function'),
    function: z.object({ name: z.string(), arguments: z.string().describe('The arguments as JSON text.') }),
  })
  .meta({ id: 'ToolCall' });

const ToolCallDelta = z
  .object({
    index: z.int(),
    id: z.string().optional().describe('With the first piece of a call, as are type and name.'),
    type: z.literal('function').optional(),
    function: z.object({ name: z.string().optional(), arguments: z.string() }),
  })
  .meta({ id: 'ToolCallDelta' });

const TopLogprob = z.object({ token: z.string(), logprob: z.number(), bytes: z.array(z.int()).nullable() });
const Logprobs = z
  .object({
    content: z.array(TopLogprob.extend({ top_logprobs: z.array(TopLogprob) })).nullable(),
    refusal: z.null(),
  })
  .meta({
    id: 'ChoiceLogprobs',
    description: "Each output token's log-probability, with `top_logprobs` alternatives; null unless asked for.",
  });

const ChatCompletion = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion'),
    created: z.int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.int(),
        message: z
          .object({
            role: z.literal('assistant'),
            content: z.string().nullable().describe('null when the answer is only tool calls.'),
            reasoning_content: z
              .string()
              .optional()
              .describe(
                "A reasoning model's reasoning, when its upstream sends it apart; absent otherwise, and under an output content filter.",
              ),
            refusal: z
              .string()
              .nullable()
              .describe("The model's refusal, when it refused (OpenAI's models say why; content is then null); null otherwise."),
            tool_calls: z.array(ToolCall).optional(),
          })
          .strict(),
        logprobs: Logprobs.nullable(),
        finish_reason: FinishReason,
      }),
    ),
    usage: Usage,
  })
  .meta({ id: 'ChatCompletion' });

const ChatCompletionChunk = z
  .object({
    id: z.string(),
    object: z.literal('chat.completion.chunk'),
    created: z.int(),
    model: z.string(),
    choices: z.array(
      z
        .object({
          index: z.int(),
          delta: z
            .object({
              role: z.literal('assistant').optional(),
              // null in the role chunk of a call that may call tools, as OpenAI's.
              content: z.string().nullable().optional(),
              reasoning_content: z.string().optional().describe("A piece of a reasoning model's reasoning, before the answer's content."),
              refusal: z.string().optional().describe("A piece of the model's refusal, when it refused."),
              tool_calls: z.array(ToolCallDelta).optional(),
            })
            .strict(),
          logprobs: Logprobs.nullable(),
          finish_reason: FinishReason.nullable(),
        })
        .strict(),
    ),
    usage: z
      .union([Usage, z.null()])
      .optional()
      .describe('With stream_options.include_usage: null on content chunks, the usage on the last one (no choices).'),
  })
  .meta({
    id: 'ChatCompletionChunk',
    description: 'One `data:` event of a stream; the stream ends with `data: [DONE]`, or with an Error event instead when it fails.',
  });

const Embeddings = z
  .object({
    object: z.literal('list'),
    data: z.array(
      z.object({
        object: z.literal('embedding'),
        index: z.int(),
        embedding: z.union([z.array(z.number()), z.string().describe('base64 of little-endian float32s')]),
      }),
    ),
    model: z.string(),
    usage: Usage,
  })
  .meta({ id: 'Embeddings' });

const RerankResult = z
  .object({
    id: z.string(),
    model: z.string(),
    results: z.array(
      z.object({ index: z.int(), relevance_score: z.number().min(0).max(1), document: z.object({ text: z.string() }).optional() }),
    ),
    usage: Usage,
  })
  .meta({ id: 'RerankResult' });

const ModerationResult = z
  .object({
    id: z.string(),
    model: z.string(),
    results: z.array(
      z.object({ flagged: z.boolean(), categories: z.record(z.string(), z.boolean()), category_scores: z.record(z.string(), z.number()) }),
    ),
  })
  .meta({ id: 'ModerationResult' });

const Balance = z.object({ balance: z.number(), currency: z.string().regex(/^[A-Z]{3}$/) }).meta({ id: 'WalletBalance' });

const Transaction = z
  .object({
    id: z.string(),
    type: z.enum(['topup', 'usage', 'refund', 'subscription', 'bonus']),
    amount: z.number(),
    balance_after: z.number(),
    created_at: z.string(),
    description: z.string(),
  })
  .meta({ id: 'WalletTransaction' });

const Checkout = z
  .object({
    checkout_url: z.string(),
    amount: z.number(),
    currency: z.string(),
    id: z.string(),
    status: z.string(),
    bonus: z.number(),
    credits: z.number(),
    expires_at: z.string(),
  })
  .meta({ id: 'Checkout' });

const UsageReport = z
  .object({
    object: z.literal('usage'),
    period_start: z.string(),
    period_end: z.string(),
    group_by: z.enum(['model', 'user', 'key']),
    allocation: z.object({ monthly_tokens: z.int().nullable(), used: z.int(), remaining: z.int().nullable() }),
    data: z.array(
      z
        .object({
          date: z.string(),
          model: z.string().optional().describe('group_by=model (the default)'),
          user: z.string().nullable().optional().describe("group_by=user: the requests' `user` (null: calls that gave none)"),
          key_id: z.string().nullable().optional().describe('group_by=key: the API key (null: calls made without one)'),
          requests: z.int(),
          prompt_tokens: z.int(),
          completion_tokens: z.int(),
          total_tokens: z.int(),
          cost: z.number(),
        })
        .loose(),
    ),
  })
  .meta({ id: 'UsageReport' });

const int = z.string().regex(/^\d+$/);
// Optional: a server with `rate_limits.backend: none`, or one whose Redis is unreachable (it serves
// without limits, fail-open), knows no limits and sends none of them rather than wrong ones.
const whenLimited = ' Sent while rate limits are on: absent with `rate_limits.backend: none` and while the Redis store is unreachable.';
const rateLimitHeaders = z.object({
  'X-RateLimit-Limit-RPM': int.optional().describe(`Requests per minute allowed.${whenLimited}`),
  'X-RateLimit-Limit-TPM': int.optional().describe(`Tokens per minute allowed.${whenLimited}`),
  'X-RateLimit-Remaining-RPM': int.optional().describe(`Requests left in the current minute.${whenLimited}`),
  'X-RateLimit-Remaining-TPM': int.optional().describe(`Tokens left in the current minute.${whenLimited}`),
  'X-RateLimit-Reset-RPM': int.optional().describe(`Unix time when the requests counted now have left the window.${whenLimited}`),
  'X-RateLimit-Reset-TPM': int.optional().describe(`Unix time when the tokens counted now have left the window.${whenLimited}`),
  'X-Request-Id': z.string(),
});
// Optional: it is sent only where waiting helps, so a refusal that waiting cannot cure has none.
const retryHeaders = z.object({
  'Retry-After': int
    .optional()
    .describe(
      'Seconds to wait before retrying. Absent where waiting does not help: a 429 for a call whose estimate alone is over the TPM limit (it can never be admitted), a 503 model_unavailable for a model file that is missing or could not be loaded, and a 503 shutting_down.',
    ),
  'X-Request-Id': z.string(),
});
const requestIdHeader = z.object({ 'X-Request-Id': z.string() });
const cacheHeaders = z.object({
  'Cache-Control': z.literal('public, max-age=300'),
  ETag: z
    .string()
    .regex(/^"[^"]+"$/)
    .describe('A strong ETag of the body; send it back as If-None-Match.'),
  'X-Request-Id': z.string(),
});

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
const error = (description: string, headers = requestIdHeader) => ({ description, headers, content: json(ErrorBody) });

/** The refusals every call may meet, and those of metered calls (limits, wallet, models). */
const commonErrors = {
  400: error('Invalid request: a missing, mistyped or out-of-range parameter, an unknown model, an input too long, …'),
  401: error('Missing, malformed, wrong, revoked or expired API key (invalid_api_key).'),
  413: error('Body over server.body_limit (request_too_large).'),
  500: error('Unexpected error (internal_error); logged with the request id.'),
};
const meteredErrors = {
  ...commonErrors,
  402: error('The wallet or the allocation cannot pay (insufficient_balance, monthly_allocation_exhausted, spending_limit_reached).'),
  429: error('Rate limit (rate_limit_exceeded): RPM or TPM.', rateLimitHeaders.extend(retryHeaders.shape)),
  502: error('The upstream failed or answered garbage (upstream_error).'),
  503: error(
    'The model is unavailable or overloaded (model_unavailable, model_overloaded), rate limits cannot be checked (rate_limiter_unavailable, with rate_limits.fail_closed), the server is shutting down (shutting_down), or the database dropped or refused the connection for a moment (database_unavailable).',
    retryHeaders,
  ),
  504: error('The upstream did not answer in time (upstream_timeout).'),
};

const bearer = [{ apiKey: [] }];

/**
 * The page of GET /v1/wallet/transactions: the ledger's TRANSACTION_PAGE (src/domain/ledger), which
 * compat, a door, may not import; test/openapi.test.ts holds the two together and checks the server.
 */
const TRANSACTION_PAGE = { defaultLimit: 100, maxLimit: 1000 } as const;

export function buildOpenApiDocument(serverUrl: string) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key: `Authorization: Bearer ask_…`',
  });

  const metered = (path: string, summary: string, request: z.ZodType, response: z.ZodType, extra: Record<string, unknown> = {}) =>
    registry.registerPath({
      method: 'post',
      path,
      summary,
      security: bearer,
      request: { body: { required: true, content: json(request) } },
      responses: { 200: { description: 'The result.', headers: rateLimitHeaders, content: json(response) }, ...meteredErrors },
      ...extra,
    });

  const notModified = {
    description: 'Not modified: the If-None-Match sent names the current ETag (or is `*`); no body.',
    headers: cacheHeaders,
  };
  registry.registerPath({
    method: 'get',
    path: '/v1/models',
    summary: 'The model catalog (no key needed).',
    request: {
      headers: z.object({ 'If-None-Match': z.string().optional().describe('An ETag received before: 304 while it is current.') }),
    },
    responses: {
      200: {
        description: 'Every model. Cacheable: Cache-Control public, max-age=300, and an ETag (304 on If-None-Match).',
        headers: cacheHeaders,
        content: json(z.object({ object: z.literal('list'), data: z.array(Model) })),
      },
      304: notModified,
      401: error('An API key was sent and is not valid (invalid_api_key): none is needed, but one sent must be valid.'),
      500: commonErrors[500],
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/models/{model_id}',
    summary: 'One model (no key needed).',
    request: {
      params: z.object({ model_id: z.string() }),
      headers: z.object({ 'If-None-Match': z.string().optional().describe('An ETag received before: 304 while it is current.') }),
    },
    responses: {
      200: {
        description: 'The model. Cacheable like the catalog: Cache-Control public, max-age=300, and an ETag (304 on If-None-Match).',
        headers: cacheHeaders,
        content: json(Model),
      },
      304: notModified,
      401: error('An API key was sent and is not valid (invalid_api_key): none is needed, but one sent must be valid.'),
      404: error('No such model (model_not_found).'),
      500: commonErrors[500],
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'A chat completion; with `stream: true`, Server-Sent Events of chunks.',
    security: bearer,
    request: { body: { required: true, content: json(chatBody) } },
    responses: {
      200: {
        description: 'The completion, or (stream: true) `data: <chunk>` events and a final `data: [DONE]`.',
        headers: rateLimitHeaders,
        content: { ...json(ChatCompletion), 'text/event-stream': { schema: ChatCompletionChunk } },
      },
      ...meteredErrors,
    },
  });
  metered('/v1/embeddings', 'Embeddings of up to 100 inputs.', embeddingsBody, Embeddings);
  metered('/v1/rerank', 'Documents ranked by relevance to a query.', rerankBody, RerankResult);
  metered('/v1/moderate', 'Moderation of one input or a list.', moderateBody, ModerationResult);
  metered('/v1/moderations', 'The same as /v1/moderate (the path OpenAI clients call).', moderateBody, ModerationResult);
  registry.registerPath({
    method: 'get',
    path: '/v1/wallet/balance',
    summary: "The key's wallet balance.",
    security: bearer,
    responses: { 200: { description: 'The balance.', headers: requestIdHeader, content: json(Balance) }, ...commonErrors },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/wallet/transactions',
    summary: "The wallet's ledger, paged.",
    security: bearer,
    request: {
      query: z.object({
        limit: z
          .int()
          .min(1)
          .max(TRANSACTION_PAGE.maxLimit)
          .default(TRANSACTION_PAGE.defaultLimit)
          .describe(`Transactions per page: 1 to ${TRANSACTION_PAGE.maxLimit} (default ${TRANSACTION_PAGE.defaultLimit}).`),
        after: z.string().optional().describe('a transaction id: the page after it'),
        order: z.enum(['asc', 'desc']).optional(),
        type: z.enum(['topup', 'usage', 'refund', 'subscription', 'bonus']).optional(),
      }),
    },
    responses: {
      200: {
        description: 'A page of transactions.',
        headers: requestIdHeader,
        content: json(z.object({ transactions: z.array(Transaction), has_more: z.boolean() })),
      },
      ...commonErrors,
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/v1/wallet/top-up',
    summary: "A checkout at the payment processor for the key's wallet.",
    security: bearer,
    request: {
      headers: z.object({
        'Idempotency-Key': z
          .string()
          .optional()
          .describe('The same key returns the same checkout for the same amount (422 for another amount).'),
      }),
      body: { required: true, content: json(TopUpBody) },
    },
    responses: {
      200: { description: 'The checkout; pay at checkout_url.', headers: requestIdHeader, content: json(Checkout) },
      ...commonErrors,
      409: error('The checkout is no longer open (checkout_not_open).'),
      422: error('Idempotency-Key reused with another amount (idempotency_key_reused).'),
      502: error('The payment processor failed (payment_processor_error).'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/usage',
    summary: 'Daily usage per model, end user or API key, and the allocation of the current period.',
    security: bearer,
    request: {
      query: z.object({
        start: z.string().optional().describe('UTC date YYYY-MM-DD'),
        end: z.string().optional().describe('UTC date YYYY-MM-DD'),
        group_by: z
          .enum(['model', 'user', 'key'])
          .optional()
          .describe("What each day's rows are summed by: model (default), user (the requests' `user` field) or key (the API key)."),
      }),
    },
    responses: { 200: { description: 'The usage report.', headers: requestIdHeader, content: json(UsageReport) }, ...commonErrors },
  });

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'tollgate /v1',
      version: '1',
      description: 'The OpenAI-compatible HTTP API of tollgate. Errors: the HTTP status and `{error: {message, type, param, code}}`.',
    },
    servers: [{ url: serverUrl }],
  });
}

/** The error schema of any /v1 answer outside the document's paths (e.g. the 404 of an unknown path). */
export const errorBodySchema = ErrorBody;
