"""JSON twins: the same content as the GraphQL page query, at a plain URL.

Run through the schema, so their numbers are GraphQL's: every Float rounded by numbers-v1 where it is
completed (kernelindex.graphql.schema.RoundedFloats); nothing here formats a number.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from kernelindex.db.changes import Dependencies
from kernelindex.graphql.context import Context
from kernelindex.graphql.request_state import request_state
from kernelindex.web.response_cache import CacheKey, response_dependencies, root_fields
from kernelindex.web.state import server_state

RUN_FIELDS = """
  id meanMs stdMs minMs maxMs numTrials ciHalfWidthMs latencyDisplay plusMinusDisplay statisticDisplay
  observedAt observedDisplay evidence trustLabel stale caveats status
  configuration { bindings { axis value } dtype display }
  implementation { slug title }
  environment { id provider label hardware { sku family shortName } }
  protocol { name version statistic }
  source { name revision revisionDate licence url }
"""

IMPLEMENTATION_FIELDS = """
  slug title framework language runtimeId role isBaseline licence sourceAvailability sourceUrl installRecipe
  availabilityLabel availabilityDetail installLabel packageLabel runtimeDisplay implementationLine
"""

WORKLOAD_PAGE_QUERY = f"""
query WorkloadPage($slug: String!) {{
  workload(slug: $slug) {{
    slug suite level problemNumber name kind title description sourceSha256
    eligibleRunCount eligibleRunCountDisplay heldRunCount heldSummary lastObserved lastObservedDisplay
    canonicalConfiguration {{ bindings {{ axis value }} dtype display bindingsDisplay }}
    headline {{
      kind label latencyMs ciHalfWidthMs latencyDisplay plusMinusDisplay statisticDisplay
      speedupVsBaseline speedupDisplay evidenceLine caveats
      implementation {{ {IMPLEMENTATION_FIELDS} }}
      run {{ {RUN_FIELDS} }}
    }}
    records {{ label latencyMs latencyDisplay runCount implementation {{ slug title }} run {{ id }} }}
    notMeasured {{ message hardware {{ sku shortName family }} }}
    comparison {{
      title gpu protocolName statistic resultCount resultCountDisplay lastObserved header
      configuration {{ bindings {{ axis value }} dtype display bindingsDisplay }}
      rows {{
        rank rankDisplay isBaseline latencyMs ciHalfWidthMs latencyDisplay plusMinusDisplay vsFirst vsFirstDisplay
        speedupVsBaseline verdict exactConfiguration notes summary trustLabel observedDisplay stale
        implementation {{ {IMPLEMENTATION_FIELDS} }}
        run {{ {RUN_FIELDS} }}
      }}
    }}
    headroom {{
      method bytes bytesDisplay floorNs floorDisplay bound bandwidthGbps recordMs ratioAbove ratioAboveDisplay
      summary boundLine basisLine notes description unavailableReason hardware {{ sku shortName }}
    }}
    implementations {{
      bestLatencyMs bestLatencyDisplay vsBest vsBestDisplay trustLevel availability runtimeDisplay
      implementation {{ {IMPLEMENTATION_FIELDS} }}
    }}
    semantics {{
      inputs {{ name dtype shape display }} outputs {{ name dtype shape display }}
      axes {{ name behaviour value }} determinism constraints
    }}
    identity {{ sha256 short version }}
    sources {{ name revision revisionDate licence url display }}
    policy {{ title version url }}
  }}
}}
"""


def twin_key(slug: str) -> CacheKey:
    """The response-cache key of a workload's JSON twin: the page query under an operation name no
    GraphQL document can have, so it never meets a GraphQL response of the same query."""
    return CacheKey(WORKLOAD_PAGE_QUERY, "#json-twin", json.dumps({"slug": slug}))


async def workload_twin(request: Request, slug: str, version: int | None = None) -> tuple[dict[str, Any] | None, Dependencies]:
    """The page of the workload (None: there is none) and what it read, for the response cache.
    `version`: the data version read before this request's statements (None: the read model is not used)."""
    server = server_state(request)
    state = request_state(request)
    assert state.session is not None  # DatabaseSessionMiddleware gave the twin its session
    state.data_version = version
    context = Context(session=state.session, now=server.clock(), settings=server.settings, state=state,
                      request=request, read_model=server.read_model)
    result = await server.schema.execute(WORKLOAD_PAGE_QUERY, variable_values={"slug": slug}, context_value=context)
    reads = state.reads
    deps = response_dependencies(root_fields(WORKLOAD_PAGE_QUERY, None), reads.workloads, reads.unscoped)
    if result.errors:
        error = result.errors[0]
        code = (error.extensions or {}).get("code")
        status = TWIN_STATUS.get(code) if isinstance(code, str) else None
        if status is not None:
            raise TwinError(status, error.message)
        raise error
    assert result.data is not None  # no errors: the query's data is there
    workload: dict[str, Any] | None = result.data["workload"]
    return workload, deps


# GraphQL error codes that map to an HTTP status of their own; anything else is a 500.
TWIN_STATUS = {"BAD_USER_INPUT": 400, "SERVICE_UNAVAILABLE": 503}


class TwinError(Exception):
    """The twin cannot be served: the slug is unusable (400) or the database is unavailable (503)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message
