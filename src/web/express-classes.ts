// The node:http request and response classes of a server that serves an express app: node's own,
// extended by the app's express request and response, which then become the app's own
// (`app.request`, `app.response`). express 5 otherwise sets the prototype of every request and
// response as it arrives (`Object.setPrototypeOf` in `app.handle`), and V8 pays for each such
// change in the code that touches them: in a bare express app on Node 20 that cost about 14 KB of
// heap and 90 µs of CPU per request, client included (`BENCH_ONLY=prototypes npm run bench`).
// With these classes express's call changes nothing (each object already has that prototype).
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, Request, Response } from 'express';

export function serverClassesFor(app: Express) {
  class AppRequest extends IncomingMessage {}
  class AppResponse<R extends IncomingMessage = IncomingMessage> extends ServerResponse<R> {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  Object.setPrototypeOf(AppResponse.prototype, app.response);
  app.request = AppRequest.prototype as Request;
  app.response = AppResponse.prototype as unknown as Response;
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse };
}
