// ContentFilterResult: what a chat model's content filter said of an answer (on ChatChoice, and on
// the chunk of a stream that carries the finish reason). src/domain/inference/content-filter.ts.
import type { ContentFilterVerdict } from '../../domain/inference/engine.js';
import { builder } from '../builder.js';

export const ContentFilterResultRef = builder.objectRef<ContentFilterVerdict>('ContentFilterResult').implement({
  description:
    "The verdict of the model's output content filter: flagged answers end with finishReason content_filter, cut before the window that fired.",
  fields: (t) => ({
    flagged: t.exposeBoolean('flagged'),
    categories: t.exposeStringList('categories', { description: 'The moderation categories that fired (empty when not flagged).' }),
  }),
});
