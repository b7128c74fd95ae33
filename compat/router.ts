// The /v1 routes, one line each, mapped onto GraphQL operations executed in-process.
import { parse as parseBytes } from 'bytes';
import express, { type Request, type Response } from 'express';
import { DomainError, requestTooLarge } from '../src/domain/errors.js';
import { chatCompletions } from './chat.js';
import { embeddings } from './embeddings.js';
import { sendError } from './errors.js';
import { jsonNestsWithin, TOO_DEEP_MESSAGE } from '../src/json-depth.js';
import { keepRawBody, wantRawBody, wantsRawBody } from './body.js';
import { getModel, listModels } from './models.js';
import { moderate } from './moderate.js';
import { rerank } from './rerank.js';
import type { CompatDoor } from './door.js';
import { usage } from './usage.js';
import { walletBalance, walletTransactions } from './wallet.js';
import { walletTopUp } from './top-up.js';
import type { GraphQLContext } from '../src/graphql/context.js';

type Handler = (req: Request, res: Response, ctx: GraphQLContext) => Promise<void>;
type Route = (req: Request, res: Response) => Promise<void>;

export function createCompatRouter(door: CompatDoor, opts: { onUnexpected: (req: Request, err: unknown) => void }) {
  // `keyRequired`: the key is checked before the body, so a bad key is a 401 whatever the body says.
  // `metered`: an account already known to be over its RPM is refused (429) before its body is
  // read, so a refused key costs next to nothing however large its requests. `exact`: the body's
  // text is kept for fields read digit for digit (./body.ts rawBodyOf).
  const route =
    (handler: Handler, keyRequired: boolean | 'if-given' = true, metered = false, exact = false): Route =>
    async (req: Request, res: Response) => {
      try {
        const ctx = door.context(req, res);
        // 'if-given': no key needed, but one that is sent must be valid (401 otherwise, as OpenAI
        // answers), so a client's connection check with a mistyped key fails there, not at its first call.
        if (keyRequired === true || (keyRequired === 'if-given' && req.headers.authorization)) await ctx.principal();
        if (metered) await door.precheck(ctx);
        if (exact) wantRawBody(req);
        if (req.method === 'POST') await readJson(req, res);
        await handler(req, res, ctx);
      } catch (err) {
        sendError(res, err, (e) => opts.onUnexpected(req, e));
      }
    };

  const json = express.json({
    limit: door.bodyLimit,
    type: ['application/json', 'application/*+json'],
    // As body-parser decodes it (its charset), for a route that asked for the text.
    verify: (req, _res, buf, encoding) => {
      const text = buf.toString(encoding as BufferEncoding);
      // body-parser wraps what is thrown here (setting its status: not a DomainError's getter).
      if (!jsonNestsWithin(text)) throw Object.assign(new Error(TOO_DEEP_MESSAGE), { tooDeep: true });
      if (wantsRawBody(req as Request)) keepRawBody(req as Request, text);
    },
  });
  const limit = parseBytes(door.bodyLimit)!;
  // The common case (plain JSON, UTF-8, not compressed, its length declared) read directly;
  // everything else through body-parser. Both end in the same req.body and the same errors.
  const readJson = (req: Request, res: Response) => (isPlainJson(req, limit) ? readPlainJson(req) : readAnyJson(req, res));
  // Body parser failures become DomainErrors: broken JSON, an unsupported charset, a body over the limit.
  const readAnyJson = (req: Request, res: Response) =>
    new Promise<void>((resolve, reject) =>
      json(req, res, (err?: unknown) => {
        if (!err) return resolve();
        const e = err as { type?: string; status?: number; tooDeep?: boolean };
        if (e.tooDeep) return reject(new DomainError('invalid_request', TOO_DEEP_MESSAGE));
        if (e.type === 'entity.too.large') {
          return reject(requestTooLarge(door.bodyLimit));
        }
        if (e.type === 'entity.parse.failed') return reject(new DomainError('invalid_json', 'The request body is not valid JSON.'));
        if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
          return reject(new DomainError('invalid_request', 'The request body could not be read (check Content-Type and charset).'));
        }
        reject(err);
      }),
    );

  // The routes, matched as express's router would (case-insensitive, a trailing slash ignored,
  // HEAD served by GET), from one table: a lookup per request instead of trying each route's
  // pattern in turn through express's router (a tenth of a /v1 call's allocation).
  const routes = new Map<string, { path: string; run: Route }>();
  const add = (method: 'GET' | 'POST', path: string, run: Route) => routes.set(`${method} ${path}`, { path, run });
  add('GET', '/models', route(listModels(), 'if-given'));
  const oneModel = { path: '/models/*id', run: route(getModel(door), 'if-given') };
  add('POST', '/chat/completions', route(chatCompletions(door, opts.onUnexpected), true, true));
  add('POST', '/embeddings', route(embeddings(door), true, true));
  add('POST', '/rerank', route(rerank(door), true, true));
  add('POST', '/moderate', route(moderate(door), true, true));
  add('POST', '/moderations', route(moderate(door), true, true));
  add('GET', '/wallet/balance', route(walletBalance()));
  add('GET', '/wallet/transactions', route(walletTransactions()));
  add('POST', '/wallet/top-up', route(walletTopUp(), true, false, true));
  add('GET', '/usage', route(usage()));

  return (req: Request, res: Response): void => {
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
    let found = routes.get(`${method} ${path.toLowerCase()}`);
    if (!found && method === 'GET' && path.length > MODELS.length && path.slice(0, MODELS.length).toLowerCase() === MODELS) {
      // /models/{id}: the id may hold slashes; each segment decoded, as express's `*id` gives it.
      try {
        req.params = { id: path.slice(MODELS.length).split('/').map(decodeURIComponent) } as unknown as Request['params'];
      } catch {
        return void sendError(
          res,
          new DomainError('invalid_value', 'The model id in the path is not valid percent-encoding.', { param: 'model' }),
        );
      }
      found = oneModel;
    }
    // Anything else under /v1: a 404 that says what does exist (OpenAI clients often try these two).
    if (!found) return void sendError(res, unknownEndpoint(req.method, req.path));
    // The access log and the metrics label the request by its route's pattern.
    (req as { route?: unknown }).route = { path: found.path };
    void found.run(req, res);
  };
}

const MODELS = '/models/';

/**
 * A body body-parser would read as it comes (`application/json`, no charset or UTF-8, no
 * Content-Encoding) whose declared length is within the limit: the server refused longer ones.
 */
function isPlainJson(req: Request, limit: number): boolean {
  const type = req.headers['content-type'];
  const length = req.headers['content-length'];
  return (
    (type === 'application/json' || type === 'application/json; charset=utf-8') &&
    req.headers['content-encoding'] === undefined &&
    length !== undefined &&
    Number(length) <= limit
  );
}

/**
 * Reads and parses a plain JSON body as body-parser's json() does with `strict` on: an empty body
 * is `{}`, a leading byte-order mark is dropped, anything but an object or array is invalid JSON.
 */
function readPlainJson(req: Request): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const failed = () => reject(new DomainError('invalid_request', 'The request body could not be read (check Content-Type and charset).'));
    // `on`, not `once`: each fires at most once for a request, and `once` wraps every listener.
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', failed);
    req.on('aborted', failed);
    req.on('end', () => {
      let text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      keepRawBody(req, text);
      if (text.length === 0) {
        req.body = {};
        return resolve();
      }
      const first = /^[ \t\n\r]*(.)/.exec(text)?.[1];
      if (!jsonNestsWithin(text)) return reject(new DomainError('invalid_request', TOO_DEEP_MESSAGE));
      try {
        if (first !== '{' && first !== '[') throw new SyntaxError('not an object or array');
        req.body = JSON.parse(text);
      } catch {
        return reject(new DomainError('invalid_json', 'The request body is not valid JSON.'));
      }
      resolve();
    });
  });
}

/** Every /v1 endpoint, for the 404 of any other path (keep in step with the routes above). */
export const V1_ENDPOINTS = [
  'GET /v1/models',
  'GET /v1/models/{id}',
  'POST /v1/chat/completions',
  'POST /v1/embeddings',
  'POST /v1/rerank',
  'POST /v1/moderate',
  'POST /v1/moderations',
  'GET /v1/wallet/balance',
  'GET /v1/wallet/transactions',
  'POST /v1/wallet/top-up',
  'GET /v1/usage',
] as const;

const NOT_SERVED: Record<string, string> = {
  '/completions': 'the legacy completions endpoint is not served; send the prompt as a user message to POST /v1/chat/completions',
  '/responses': 'the Responses API is not served; use POST /v1/chat/completions',
};

function unknownEndpoint(method: string, path: string): DomainError {
  const why = NOT_SERVED[path.replace(/\/+$/, '')] ?? `there is no endpoint ${method} /v1${path}`;
  return new DomainError('not_found', `Not found: ${why}. This server's endpoints: ${V1_ENDPOINTS.join(', ')}.`);
}
