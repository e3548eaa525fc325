// graphql-codegen: schema.graphql and the operations → one TypeScript module of schema types, operation
// result/variable types and typed documents (TypedDocumentNode), as a frontend's build makes it. The
// driver (check_operations.mjs) runs it, then tsc over the module and consumer.ts. By hand, in tooling/:
//   node_modules/.bin/graphql-codegen --config codegen.ts
import path from 'node:path';
import type { CodegenConfig } from '@graphql-codegen/cli';
import { operationGlobs, schemaPath, TOOLING } from './paths.mjs';

const generated = process.env.KI_GENERATED || path.join(TOOLING, 'generated');

const shared = {
  // Every custom scalar of the schema has a type here: a new one fails the check until it is named.
  strictScalars: true,
  scalars: {
    Date: { input: 'string', output: 'string' },
    DateTime: { input: 'string', output: 'string' },
    JSON: { input: 'unknown', output: 'unknown' },
  },
  // Enums as string unions: they erase to nothing (isolatedModules, no runtime object to import).
  enumsAsTypes: true,
  useTypeImports: true,
};

const config: CodegenConfig = {
  schema: schemaPath(),
  // An operation file that matches nothing or a document that does not validate is an error, not a warning.
  ignoreNoDocuments: false,
  errorsOnly: false,
  silent: false,
  generates: {
    // The schema's types (enums, inputs, objects): the `typescript` plugin.
    [path.join(generated, 'schema.ts')]: { plugins: ['typescript'], config: shared },
    // The operations' result and variable types and their typed documents, on the schema's types (since
    // typescript-operations 6 the operations file imports them rather than declaring its own).
    [path.join(generated, 'graphql.ts')]: {
      documents: operationGlobs(),
      plugins: ['typescript-operations', 'typed-document-node'],
      config: { ...shared, importSchemaTypesFrom: path.join(generated, 'schema.ts'), namespacedImportName: 'Schema' },
    },
  },
};

export default config;
