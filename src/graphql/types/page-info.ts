// Relay's PageInfo, shared by every connection (cursor pagination, forward with first/after).
import { builder } from '../builder.js';

export interface PageInfoShape {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export const PageInfoRef = builder.objectRef<PageInfoShape>('PageInfo').implement({
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage', { description: 'True when the page starts after a cursor.' }),
    startCursor: t.exposeString('startCursor', { nullable: true }),
    endCursor: t.exposeString('endCursor', { nullable: true }),
  }),
});
