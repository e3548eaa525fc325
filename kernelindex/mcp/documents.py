"""The GraphQL operations the MCP tools run: planned once, each asking only for what its tool returns.

Every list in them is capped by a variable (the tool's own bound, inside the schema's) or by a capped
field, and every text field the schema caps is capped there: a tool's answer is bounded by its document.
"""

from __future__ import annotations

from kernelindex.mcp.gateway import Document

HARDWARE = "sku shortName family"
IMPLEMENTATION = "slug title framework language licence sourceAvailability sourceUrl availabilityLabel"
CONFIGURATION = "display dtype bindings { axis value }"
SOURCE = "name url licence terms attribution revision revisionDate route"
# A run as a tool shows it: the figure, its interval and trust, where it came from and under what terms.
RUN = f"""
  id databaseId status figure figureUnit figureDisplay meanMs ciHalfWidthMs ciHalfWidthDisplay latencyDisplay
  statisticDisplay numTrials evidence trustLevel trustLabel stale observedDate reviewStatus caveats failureReason
  configuration {{ {CONFIGURATION} }}
  implementation {{ slug title licence }}
  environment {{ label provider hardware {{ {HARDWARE} }} }}
  protocol {{ name version statistic }}
  source {{ {SOURCE} }}
"""

FIND_WORKLOADS = Document("McpFindWorkloads", """
query McpFindWorkloads($first: Int!, $after: String, $suite: String, $level: Int, $family: String, $kind: WorkloadKind,
                       $nameContains: String, $measuredOn: String, $notMeasuredOn: String) {
  workloads(first: $first, after: $after, suite: $suite, level: $level, family: $family, kind: $kind,
            nameContains: $nameContains, measuredOn: $measuredOn, notMeasuredOn: $notMeasuredOn) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { slug title suite level problemNumber family kind eligibleRunCount lastObserved inLatestSnapshot }
  }
}""")

FASTEST = Document("McpFastest", f"""
query McpFastest($workload: String!, $hardware: String!, $first: Int!, $configuration: String, $metric: Metric! = LATENCY) {{
  workload(slug: $workload) {{ slug title suite canonicalConfiguration {{ {CONFIGURATION} }} heldSummary }}
  records(hardware: $hardware, workload: $workload, first: 1) {{
    nodes {{
      records(first: $first, configuration: $configuration, metric: $metric) {{
        label metric figure figureUnit figureDisplay latencyMs latencyDisplay runCount
        implementation {{ {IMPLEMENTATION} }}
        run {{ {RUN} }}
      }}
    }}
  }}
}}""")

COMPARE_RUNS = Document("McpCompareRuns", f"""
query McpCompareRuns($ids: [ID!]!) {{
  compareRuns(ids: $ids) {{
    comparable incomparableBecause
    winner {{ id }}
    differences {{ field label values }}
    runs {{ {RUN} }}
  }}
}}""")

COMPARE_IMPLEMENTATIONS = Document("McpCompareImplementations", f"""
query McpCompareImplementations($workload: String!, $first: Int!) {{
  workload(slug: $workload) {{
    slug title
    implementations(first: $first) {{
      bestLatencyMs bestLatencyDisplay vsBest vsBestDisplay trustLevel evidenceKinds availability
      implementation {{ {IMPLEMENTATION} }}
      bestRun {{ id environment {{ hardware {{ {HARDWARE} }} }} configuration {{ display }} }}
    }}
    comparison {{
      title gpu header protocolName statistic resultCount
      configuration {{ display }}
      rows(first: $first) {{
        rankDisplay latencyMs latencyDisplay intervalMs vsFirstDisplay speedupVsBaseline verdictWithInterval
        trustLevel isBaseline summary
        implementation {{ slug title licence }}
        run {{ id source {{ name licence }} }}
      }}
    }}
  }}
}}""")

SEMANTICS = Document("McpSemantics", f"""
query McpSemantics($workload: String!, $first: Int!) {{
  workload(slug: $workload) {{
    slug title suite level problemNumber family kind description reference
    canonicalConfiguration {{ {CONFIGURATION} }}
    semantics {{
      inputs {{ name dtype shape display }} outputs {{ name dtype shape display }}
      axes {{ name behaviour value expression }} determinism constraints
    }}
    semanticsError
    identity {{ sha256 short version }}
    configurations(first: $first) {{ key canonical metric eligibleRunCount caseKey configuration {{ {CONFIGURATION} }} }}
    roofline {{ summary }}
    floors(first: $first) {{
      method hardware {{ {HARDWARE} }} bytes flops floorNs floorDisplay bound recordMs ratioAbove summary defect
      unavailableReason
    }}
  }}
}}""")

SOURCES = Document("McpSources", """
query McpSources {
  sources { key name kind url licence terms attribution runCount snapshotCount latestRevision latestRevisionDate latestRoute }
}""")

SUBMIT = Document("McpSubmit", """
mutation McpSubmit($input: SubmitImplementationInput!) {
  submitImplementation(input: $input) {
    ok created
    problems { key reason }
    jobs { id databaseId state hardware replica implementationSlug workload { slug } }
  }
}""", writes=True)

JOB = Document("McpJob", f"""
query McpJob($id: ID!) {{
  job(id: $id) {{
    id databaseId state kind reason hardware bindings replica attempts maxAttempts worker
    createdAt startedAt finishedAt durationS implementationSlug
    workload {{ slug }}
    run {{ {RUN} }}
    baselineRun {{ id status meanMs latencyDisplay implementation {{ slug }} }}
  }}
}}""")
