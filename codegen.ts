// GraphQL Code Generator: typed documents for compat/ and the tests, from the committed SDL
// (schema/schema.graphql, printed from the Pothos schema by `npm run schema:print`) and the
// operations in schema/operations/. `npm run codegen` runs both steps.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['schema/operations/*.graphql'],
  ignoreNoDocuments: false,
  generates: {
    'src/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        emitLegacyCommonJSImports: false,
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: 'string', Decimal: 'string', SafeInt: 'number', EmbeddingVector: 'number[]' },
      },
    },
  },
};

export default config;
