// Every /v1 response a test gets from a tollgate server of the harness is checked against the
// OpenAPI document that server publishes (compat/openapi.ts): the status must be one the path
// declares (any other refusal must still be the error body), the headers the response declares
// required must be there, every declared header sent must match its schema, and the JSON body (or
// each SSE event of a stream; a 304 has none) must match the declared schema. Failures are
// collected and fail the test file.
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
/** The checks still reading their copy of a response. */
const checking = new Set<Promise<void>>();

/** Resolves when every /v1 response fetched so far has been checked (a test can then read contractFailures). */
export async function contractSettled(): Promise<void> {
  await Promise.all([...checking]);
}

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

interface DeclaredHeader {
  required?: boolean;
  schema?: { type?: unknown };
}

/** The headers a response declares: each required one present, each one sent matching its schema (a string's). */
function checkHeaders(where: string, parts: string[], declared: Record<string, DeclaredHeader> | undefined, headers: Headers) {
  for (const [name, header] of Object.entries(declared ?? {})) {
    const value = headers.get(name);
    if (value === null) {
      if (header.required) contractFailures.push(`${where}: no ${name} header, which the document declares required`);
    } else if (header.schema?.type === 'string') {
      check(`${where}: header ${name}`, [...parts, 'headers', name, 'schema'], value);
    }
  }
}

/** Checks one /v1 response (of `pathname`, without the origin) against the document; what breaks it goes to contractFailures. */
export async function checkResponse(method: string, pathname: string, res: Response) {
  const found = pathTemplates.find((p) => p.pattern.test(pathname));
  const where = `${method} ${pathname} → ${res.status}`;
  contractChecked.responses++;
  const type = res.headers.get('content-type') ?? '';
  const operation = found ? (doc.paths as any)[found.template]?.[method.toLowerCase()] : undefined;
  const declared = operation?.responses?.[String(res.status)];
  if (!res.headers.get('x-request-id')) contractFailures.push(`${where}: no X-Request-Id`);
  if (!declared) {
    if (res.status < 400) contractFailures.push(`${where}: a success the document does not declare`);
    else if (type.includes('json')) check(where, ['components', 'schemas', 'Error'], await readJson(res));
    else contractFailures.push(`${where}: an error without a JSON body`);
    return;
  }
  const response = ['paths', found!.template, method.toLowerCase(), 'responses', String(res.status)];
  checkHeaders(where, response, declared.headers, res.headers);
  if (res.status === 304) return; // no body
  const base = [...response, 'content'];
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
  const checked = checkResponse(method, url.pathname, copy).catch(() => {});
  checking.add(checked);
  void checked.finally(() => checking.delete(checked));
  return res;
};

afterAll(() => {
  expect(contractFailures).toEqual([]);
});
