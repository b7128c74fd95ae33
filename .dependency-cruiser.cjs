// Import rules that keep tollgate's layers apart (run by `npm run check`, and so by CI):
// one domain, two doors (GraphQL in src/graphql, the OpenAI-shaped /v1 in compat), entities
// below the domain, and the composition root (src/container.ts, src/server.ts) wiring them.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'domain-stays-inside',
      comment:
        'The domain imports no config loader, database driver or migration, GraphQL, compat or HTTP code: ' +
        'the doors and the composition root depend on the domain, never the other way round.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: {
        path: [
          '^src/(config|config-payments|container|server|main|cli[^/]*)\\.ts$',
          '^src/db/(orm\\.ts|migrations/)',
          '^src/(graphql|web|generated|fixtures)/',
          '^compat/',
          '^node_modules/(express|graphql|graphql-yoga|graphql-ws|@graphql-yoga|@pothos|cors|ws|zod|yaml|better-sqlite3|pg|knex|@mikro-orm/(better-sqlite|postgresql|migrations))/',
        ],
      },
    },
    {
      name: 'entities-import-no-services',
      comment: "Entities describe tables; they may use the domain's plain types but no service or store.",
      severity: 'error',
      from: { path: '^src/entities/' },
      to: { path: ['-(service|store|stores)\\.ts$', '^src/(graphql|web|db)/', '^compat/', '^src/(config|container|server)\\.ts$'] },
    },
    {
      name: 'compat-is-a-thin-door',
      comment:
        'compat maps /v1 onto the GraphQL door: it imports the GraphQL schema, context and generated ' +
        'documents and one error mapper, never a service, a store or the container.',
      severity: 'error',
      from: { path: '^compat/' },
      to: {
        path: '^src/',
        pathNot: [
          '^src/graphql/(schema|context|errors)\\.ts$',
          '^src/generated/',
          '^src/domain/errors\\.ts$',
          '^src/(exact-json|json-depth)\\.ts$',
        ],
      },
    },
    {
      name: 'only-the-server-imports-compat',
      comment: "compat is a door: only the server's wiring mounts it (tests may call it too).",
      severity: 'error',
      from: { path: '^(src|bench)/', pathNot: '^src/server\\.ts$' },
      to: { path: '^compat/' },
    },
    {
      name: 'the-dashboard-speaks-only-graphql',
      comment: 'The dashboard is a browser app: it reaches the server through GraphQL, never by importing its code.',
      severity: 'error',
      from: { path: '^src/dashboard/' },
      to: { path: ['^src/(?!dashboard/)', '^compat/'] },
    },
    {
      name: 'no-circular-entities',
      severity: 'error',
      from: { path: '^src/entities/' },
      to: { circular: true, pathNot: '^src/entities/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      // A types-only package (no main) that the resolver cannot place.
      to: { couldNotResolve: true, pathNot: '^@graphql-typed-document-node/core$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    exclude: { path: '^src/generated/' },
  },
};
