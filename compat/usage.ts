// GET /v1/usage → Account.usage: daily sums per model between `start` and `end` (UTC dates,
// inclusive; default the current billing period), with the current period's allocation.
import type { Request, Response } from 'express';
import type { GraphQLContext } from '../src/graphql/context.js';
import { exact, sendExactJson } from './money.js';
import { documents, run } from './operations.js';
import { queryParam } from './query.js';

export function usage() {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const data = await run(documents.usage, { start: queryParam(req, 'start'), end: queryParam(req, 'end') }, ctx);
    const u = data.viewer.usage;
    sendExactJson(res, {
      object: 'usage',
      period_start: u.start,
      period_end: u.end,
      allocation: {
        monthly_tokens: u.allocation.monthlyTokens ?? null,
        used: u.allocation.used,
        remaining: u.allocation.remaining ?? null,
      },
      data: u.data.map((d) => ({
        date: d.date,
        model: d.model,
        requests: d.requests,
        prompt_tokens: d.promptTokens,
        completion_tokens: d.completionTokens,
        total_tokens: d.totalTokens,
        cost: exact(d.cost),
      })),
    });
  };
}
