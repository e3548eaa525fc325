#!/usr/bin/env node
// The frontend check (`make frontend`, `npm run check --prefix tooling`): what a frontend team's own tools
// say of schema.graphql and the operations in examples/operations/*.graphql.
//
//   graphql-eslint      the schema against the Relay rules; the operations against the operation rules
//   graphql-inspector   `validate`: the operations against the schema, failing on deprecated fields and on
//                       the server's depth, alias and token limits
//   graphql-codegen     typescript + typescript-operations + typed-document-node, then tsc --noEmit over
//                       the generated modules (and consumer.ts, for the repository's own operations)
//
// Usage: node tooling/check_operations.mjs [--schema FILE] [OPERATION_FILE_OR_FOLDER ...]
// Every tool runs (the first three side by side), each one's own messages are shown under its name, naming
// the file and line; the exit status is 0 when all accept, 1 when any refuses, 2 when the check cannot run.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_OPERATIONS, DEFAULT_SCHEMA, MAX_ALIASES, MAX_DEPTH, MAX_TOKENS, ROOT, TOOLING } from './paths.mjs';

const BIN = path.join(TOOLING, 'node_modules', '.bin');
const INSTALL = 'run `make frontend` (npm ci in tooling/), or `npm ci --prefix tooling`';

function fail(message) {
  console.error(`check_operations: ${message}`);
  process.exit(2);
}

function parseArguments(argv) {
  let schema = DEFAULT_SCHEMA;
  const given = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--schema') schema = path.resolve(argv[++i] ?? fail('--schema needs a file'));
    else if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: check_operations.mjs [--schema FILE] [OPERATION_FILE_OR_FOLDER ...]');
      process.exit(0);
    } else given.push(path.resolve(argv[i]));
  }
  return { schema, given };
}

// Folders become their *.graphql files; the default is examples/operations/*.graphql.
function operationFiles(given) {
  const pointers = given.length ? given : DEFAULT_OPERATIONS.map((glob) => path.dirname(glob));
  const files = [];
  for (const pointer of pointers) {
    if (!existsSync(pointer)) fail(`${pointer}: no such file or folder`);
    if (statSync(pointer).isDirectory()) {
      const inside = readdirSync(pointer).filter((name) => name.endsWith('.graphql')).sort();
      if (!inside.length) fail(`${pointer}: no .graphql files in it`);
      files.push(...inside.map((name) => path.join(pointer, name)));
    } else files.push(pointer);
  }
  return files;
}

// The deepest folder holding every file: ESLint lints only files under its working directory.
function commonFolder(files) {
  let folder = path.dirname(files[0]);
  const holds = (file) => path.relative(folder, file).split(path.sep)[0] !== '..';
  while (!files.every(holds) && path.dirname(folder) !== folder) folder = path.dirname(folder);
  return folder;
}

function run(name, command, args, options) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ name, code: 127, output: `${error.message}\n`, seconds: 0 }));
    child.on('close', (code) => resolve({ name, code: code ?? 1, output, seconds: (Date.now() - started) / 1000 }));
  });
}

function report({ name, code, output, seconds }) {
  const verdict = code === 0 ? 'ok' : `FAILED (exit ${code})`;
  console.log(`\n== ${name}: ${verdict}, ${seconds.toFixed(1)} s`);
  // codegen's progress lines (❯, ✔) say nothing once the outcome is known, and it prints each failed
  // task (✖ …) twice: its errors are shown once.
  const lines = output.split('\n').filter((line) => !/^\s*[❯✔]\s/.test(line));
  const blocks = [];
  for (const line of lines) {
    if (/^\s*✖\s/.test(line) || !blocks.length) blocks.push([line]);
    else blocks[blocks.length - 1].push(line);
  }
  const shown = [...new Set(blocks.map((block) => block.join('\n').trim()))].join('\n').trim();
  if (shown && (code !== 0 || name !== 'graphql-codegen')) console.log(shown);
}

async function main() {
  const { schema, given } = parseArguments(process.argv.slice(2));
  if (!existsSync(schema)) fail(`${schema}: no such schema file`);
  for (const tool of ['eslint', 'graphql-inspector', 'graphql-codegen', 'tsc']) {
    if (!existsSync(path.join(BIN, tool))) fail(`${tool} is not installed in tooling/node_modules: ${INSTALL}`);
  }
  const files = operationFiles(given);
  const own = given.length === 0;
  // The repository's operations generate into tooling/generated (git-ignored), where consumer.ts reads
  // them; others into a folder of their own under it, removed afterwards (inside tooling/, so that tsc
  // finds the packages the generated modules import).
  mkdirSync(path.join(TOOLING, 'generated'), { recursive: true });
  const generated = own ? path.join(TOOLING, 'generated') : mkdtempSync(path.join(TOOLING, 'generated', 'check-'));
  const env = { ...process.env, KI_SCHEMA: schema, KI_OPERATIONS: JSON.stringify(files), KI_GENERATED: generated, FORCE_COLOR: '0' };
  const shown = (file) => (file.startsWith(ROOT + path.sep) ? path.relative(ROOT, file) : file);
  console.log(`schema: ${shown(schema)}\noperations (${files.length}): ${files.map(shown).join(' ')}`);

  try {
    const results = await Promise.all([
      run('graphql-eslint', path.join(BIN, 'eslint'),
        ['--config', path.join(TOOLING, 'eslint.config.mjs'), '--max-warnings', '0', '--no-error-on-unmatched-pattern',
          schema, ...files],
        { cwd: commonFolder([schema, ...files]), env }),
      run('graphql-inspector validate', path.join(BIN, 'graphql-inspector'),
        ['validate', files.length === 1 ? files[0] : `{${files.join(',')}}`, schema, '--deprecated',
          '--maxDepth', String(MAX_DEPTH), '--maxAliasCount', String(MAX_ALIASES), '--maxTokenCount', String(MAX_TOKENS)],
        { cwd: ROOT, env }),
      run('graphql-codegen', path.join(BIN, 'graphql-codegen'), ['--config', path.join(TOOLING, 'codegen.ts')],
        { cwd: TOOLING, env }),
    ]);
    const codegen = results[2];
    if (codegen.code === 0) {
      let project = path.join(TOOLING, 'tsconfig.json');
      if (!own) {
        // Another set of operations: its generated modules alone, under the same compiler options.
        project = path.join(generated, 'tsconfig.json');
        writeFileSync(project, JSON.stringify({ extends: path.join(TOOLING, 'tsconfig.json'), files: ['schema.ts', 'graphql.ts'] }));
      }
      results.push(await run('tsc --noEmit', path.join(BIN, 'tsc'), ['-p', project, '--pretty', 'false'], { cwd: TOOLING, env }));
    } else {
      results.push({ name: 'tsc --noEmit', code: 1, output: 'not run: graphql-codegen generated nothing', seconds: 0 });
    }
    results.forEach(report);
    const failed = results.filter((result) => result.code !== 0).map((result) => result.name);
    console.log(failed.length ? `\nfrontend check FAILED: ${failed.join(', ')}` : '\nfrontend check passed');
    return failed.length ? 1 : 0;
  } finally {
    if (!own) rmSync(generated, { recursive: true, force: true });
  }
}

process.exitCode = await main();
