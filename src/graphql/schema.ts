// The GraphQL schema: every type file registers itself on the builder; this builds it once.
import { lexicographicSortSchema } from 'graphql';
import { builder } from './builder.js';
import './types/model.js';
import './types/account.js';
import './types/chat.js';
import './types/embeddings.js';
import './types/rerank.js';
import './types/moderation.js';
import './types/money.js';
import './types/wallet.js';
import './types/usage.js';
import './types/settings.js';
import './types/tier.js';
import './types/top-up.js';
import './types/notifications.js';
import './types/session.js';

export const schema = lexicographicSortSchema(builder.toSchema());
