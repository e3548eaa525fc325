// graphql-eslint over schema.graphql (the Relay rules) and the operations (the operation rules).
// Run by check_operations.mjs; by hand, from the repository root:
//   tooling/node_modules/.bin/eslint --config tooling/eslint.config.mjs schema.graphql examples/operations
// Patterns are relative to ESLint's working directory, which the driver sets to a folder holding both.
import path from 'node:path';
import graphqlPlugin from '@graphql-eslint/eslint-plugin';
import { MAX_DEPTH, operationGlobs, schemaPath } from './paths.mjs';

const relative = (file) => path.relative(process.cwd(), file).split(path.sep).join('/');
const schema = schemaPath();
const operations = operationGlobs();

export default [
  {
    files: [relative(schema), ...operations.map(relative)],
    languageOptions: {
      parser: graphqlPlugin.parser,
      parserOptions: { graphQLConfig: { schema, documents: operations } },
    },
    plugins: { '@graphql-eslint': graphqlPlugin },
  },
  {
    files: [relative(schema)],
    rules: {
      '@graphql-eslint/relay-connection-types': 'error',
      '@graphql-eslint/relay-page-info': 'error',
      // Both ways: a connection takes first/after and last/before (issue 18: lists page both ways).
      '@graphql-eslint/relay-arguments': ['error', { includeBoth: true }],
      '@graphql-eslint/relay-edge-types': [
        'error',
        {
          withEdgeSuffix: true,
          shouldImplementNode: true,
          // Off by design: this option flags every list that is not a connection's `edges`, scalar lists
          // included (Run.caveats, ComparisonRow.intervalMs, each connection's own `nodes`), and the
          // workload page's capped lists (Workload.records, comparisons, … take `first`, at most 100):
          // short lists read whole in one query, where a connection would add cursors nobody follows.
          listTypeCanWrapOnlyEdgeType: false,
        },
      ],
    },
  },
  {
    files: operations.map(relative),
    rules: {
      ...graphqlPlugin.configs['flat/operations-recommended'].rules,
      // The server's max_query_depth (kernelindex/settings.py), counted the same way.
      '@graphql-eslint/selection-set-depth': ['error', { maxDepth: MAX_DEPTH }],
    },
  },
];
