// GET /v1/usage → Account.usage: daily sums per model (or per end user, or per API key, with
// `group_by`) between `start` and `end` (UTC dates, inclusive; default the current billing
// period), with the current period's allocation.
import type { Request, Response } from 'express';
import { DomainError } from '../src/domain/errors.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import type { UsageGroupBy } from '../src/generated/graphql.js';
import { exact, sendExactJson } from './money.js';
import { documents, run } from './operations.js';
import { queryParam } from './query.js';

const GROUP_BY: readonly UsageGroupBy[] = ['model', 'user', 'key'];

function groupByParam(req: Request): UsageGroupBy | null {
  const value = queryParam(req, 'group_by');
  if (value === null || (GROUP_BY as readonly string[]).includes(value)) return value as UsageGroupBy | null;
  throw new DomainError('invalid_value', `'group_by' must be one of ${GROUP_BY.join(', ')}; got '${value.slice(0, 40)}'.`, {
    param: 'group_by',
  });
}

export function usage() {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const variables = { start: queryParam(req, 'start'), end: queryParam(req, 'end'), groupBy: groupByParam(req) };
    const data = await run(documents.usage, variables, ctx);
    const u = data.viewer.usage;
    sendExactJson(res, {
      object: 'usage',
      period_start: u.start,
      period_end: u.end,
      group_by: u.groupBy,
      allocation: {
        monthly_tokens: u.allocation.monthlyTokens ?? null,
        used: u.allocation.used,
        remaining: u.allocation.remaining ?? null,
      },
      data: u.data.map((d) => ({
        date: d.date,
        ...(u.groupBy === 'model' ? { model: d.model } : {}),
        ...(u.groupBy === 'user' ? { user: d.user } : {}),
        ...(u.groupBy === 'key' ? { key_id: d.keyId } : {}),
        requests: d.requests,
        prompt_tokens: d.promptTokens,
        completion_tokens: d.completionTokens,
        total_tokens: d.totalTokens,
        cost: exact(d.cost),
      })),
    });
  };
}
