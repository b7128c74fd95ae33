// Every /v1 response a test gets from a tollgate server of the harness is checked against the
// OpenAPI document that server publishes (compat/openapi.ts): the status must be one the path
// declares (any other refusal must still be the error body), and the JSON body (or each SSE event
// of a stream) must match the declared schema. Failures are collected and fail the test file.
// Loaded by vitest.config.ts as a setup file, in every test file's process.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, expect } from 'vitest';
import { buildOpenApiDocument } from '../../compat/openapi.js';

import { tollgateOrigins } from './tollgate-origins.js';

type Doc = ReturnType<typeof buildOpenApiDocument>;
const doc: Doc = buildOpenApiDocument('http://127.0.0.1');
const ajv = new Ajv2020({ strict: false, allErrors: false });
ajv.addSchema(doc as object, 'openapi');

const pathTemplates = Object.keys(doc.paths ?? {}).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '.+')}$`),
}));

export const contractFailures: string[] = [];
export const contractChecked = { responses: 0, events: 0 };

const pointer = (...parts: string[]) => `openapi#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

function validator(parts: string[]) {
  const responses = parts.slice(0, 4).reduce<any>((o, k) => o?.[k], doc);
  return responses === undefined ? undefined : ajv.getSchema(pointer(...parts));
}

function check(where: string, parts: string[], value: unknown) {
  const validate = validator(parts);
  if (!validate) return;
  if (!validate(value)) contractFailures.push(`${where}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(value).slice(0, 300)}`);
}

async function checkResponse(method: string, pathname: string, res: Response) {
  const found = pathTemplates.find((p) => p.pattern.test(pathname));
  const where = `${method} ${pathname} → ${res.status}`;
  contractChecked.responses++;
  if (res.status === 304) return;
  const type = res.headers.get('content-type') ?? '';
  const operation = found ? (doc.paths as any)[found.template]?.[method.toLowerCase()] : undefined;
  const declared = operation?.responses?.[String(res.status)];
  if (!res.headers.get('x-request-id')) contractFailures.push(`${where}: no X-Request-Id`);
  if (res.status === 429 && !res.headers.get('retry-after')) contractFailures.push(`${where}: a 429 without Retry-After`);
  if (!declared) {
    if (res.status < 400) contractFailures.push(`${where}: a success the document does not declare`);
    else if (type.includes('json')) check(where, ['components', 'schemas', 'Error'], await readJson(res));
    else contractFailures.push(`${where}: an error without a JSON body`);
    return;
  }
  const base = ['paths', found!.template, method.toLowerCase(), 'responses', String(res.status), 'content'];
  if (type.includes('text/event-stream')) {
    const text = await res.text();
    for (const block of text.split('\n\n')) {
      const data = block.startsWith('data: ') ? block.slice(6) : null;
      if (data === null || data === '[DONE]') continue;
      contractChecked.events++;
      const event = JSON.parse(data) as Record<string, unknown>;
      // A stream that fails ends with an error event instead of [DONE].
      if ('error' in event) check(where, ['components', 'schemas', 'Error'], event);
      else check(where, [...base, 'text/event-stream', 'schema'], event);
    }
    return;
  }
  if (type.includes('json')) check(where, [...base, 'application/json', 'schema'], await readJson(res));
  else contractFailures.push(`${where}: a body of type '${type}' the document does not declare`);
}

/** The JSON body; a body that is not JSON is a failure of its own. */
async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    contractFailures.push(`${res.url} → ${res.status}: a JSON content type with a body that is not JSON: ${text.slice(0, 100)}`);
    return undefined;
  }
}

const originalFetch = globalThis.fetch;
globalThis.fetch = async function checkedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const res = await originalFetch(input, init);
  const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
  if (!tollgateOrigins.has(url.origin) || !url.pathname.startsWith('/v1/')) return res;
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  if (method === 'OPTIONS') return res; // CORS preflights are the browser's, not the API's
  // The test reads its own copy; the check reads the other, at its own pace.
  const copy = res.clone();
  // A body that cannot be read whole (the test aborted, the server cut a stream on purpose) has
  // nothing to check; what was read is never half-checked.
  void checkResponse(method, url.pathname, copy).catch(() => {});
  return res;
};

afterAll(() => {
  expect(contractFailures).toEqual([]);
});
