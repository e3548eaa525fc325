// A frontend's use of the generated modules (generated/schema.ts, generated/graphql.ts), type-checked by tsc in the check:
// the typed documents fix each operation's variables and result, as Apollo Client, urql and graphql-request
// read them. Nothing here runs; a wrong field, variable or type is a compile error.
import type { ResultOf, TypedDocumentNode, VariablesOf } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import {
  CompareRunsDocument,
  JobLiveDocument,
  type RunFiguresFragment,
  SubmitImplementationDocument,
  WorkloadPageDocument,
  WorkloadRunsDocument,
} from './generated/graphql';
import type { RunStatus } from './generated/schema';

// A client's one entry point, typed as those libraries type theirs.
declare function execute<Result, Variables>(
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
): Promise<Result>;

export async function headline(slug: string): Promise<string | null> {
  const data = await execute(WorkloadPageDocument, { slug });
  const top = data.workload?.headline;
  return top ? `${top.label}: ${top.latencyDisplay} ${top.plusMinusDisplay ?? ''}` : null;
}

export async function passedLatencies(workload: string, after: string | null): Promise<number[]> {
  const status: RunStatus = 'PASSED';
  const data = await execute(WorkloadRunsDocument, { workload, status, first: 50, after });
  return data.runs.edges.flatMap(({ node }) => (node.meanMs === null ? [] : [node.meanMs]));
}

export function hardwareOf(run: RunFiguresFragment): string {
  return run.environment.hardware.sku;
}

export async function differingFields(ids: string[]): Promise<string[]> {
  const data = await execute(CompareRunsDocument, { ids });
  return data.compareRuns.differences.map((difference) => difference.label);
}

// A subscription, typed as graphql-ws's client.subscribe is wrapped by those libraries: each `next` is one result.
declare function subscribe<Result, Variables>(
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
  next: (result: Result) => void,
): () => void;

export function followJob(id: string, show: (state: string, reason: string | null) => void): () => void {
  return subscribe(JobLiveDocument, { id }, (data) => {
    if (data.job) show(data.job.state, data.job.reason ?? null);
  });
}

// Type-level checks: each line fails to compile when the generated types say otherwise.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;
export type Checks = [
  Expect<Equal<VariablesOf<typeof WorkloadPageDocument>, { slug: string }>>,
  Expect<Equal<ResultOf<typeof WorkloadRunsDocument>['runs']['totalCount'], number>>,
  Expect<Equal<ResultOf<typeof SubmitImplementationDocument>['submitImplementation']['ok'], boolean>>,
];

// @ts-expect-error a misspelt variable is a type error
void execute(WorkloadPageDocument, { slugg: 'kernelbench-l3-p9-resnet18' });

// The documents are graphql-js documents: what a client sends is their printed text.
export const workloadPageText: string = print(WorkloadPageDocument);
