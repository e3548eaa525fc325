// What the frontend checks read: the schema and the operations, from the environment when the driver
// (check_operations.mjs) is given others, else the repository's own. Shared by eslint.config.mjs and
// codegen.mjs so that the three tools always check the same files.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TOOLING = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.dirname(TOOLING);
export const DEFAULT_SCHEMA = path.join(ROOT, 'schema.graphql');
export const DEFAULT_OPERATIONS = [path.join(ROOT, 'examples', 'operations', '*.graphql')];

// The server's limits (kernelindex/settings.py): max_query_depth, max_aliases, max_query_tokens. Both
// graphql-inspector and graphql-eslint count depth as the server does (kernelindex/graphql/limits.py):
// `{ workload { slug } }` is 1, every field with a selection set adds one, leaves add none.
export const MAX_DEPTH = 8;
export const MAX_ALIASES = 15;
export const MAX_TOKENS = 2000;

export const schemaPath = () => process.env.KI_SCHEMA || DEFAULT_SCHEMA;
export const operationGlobs = () =>
  process.env.KI_OPERATIONS ? JSON.parse(process.env.KI_OPERATIONS) : DEFAULT_OPERATIONS;
