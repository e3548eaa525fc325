"""The MCP tools: one function per question, each running one planned GraphQL operation
(kernelindex.mcp.documents) through the Gateway and returning its answer, trimmed to what the tool
promises and bounded by its arguments.

The tools decide nothing: what is fastest, how far a figure is trusted, which floor applies, whether a
submission is accepted, is what the GraphQL API answers (its services and rules). They only name the
question, check that their arguments are in range (the input schema says the same), and say an
error's code and message as the API sent them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Annotated, Any, Literal

from graphql import GraphQLSchema
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from kernelindex.graphql.errors import BAD_USER_INPUT, INTERNAL, INTERNAL_MESSAGE
from kernelindex.mcp import documents
from kernelindex.mcp.answers import answer_types, member, typed
from kernelindex.mcp.gateway import Document, Gateway, GatewayError
from kernelindex.rules.identity import canonical_json

log = logging.getLogger("kernelindex.mcp")

# The environment variable a stdio server reads its API token from (over HTTP the request's
# Authorization header carries it, as for /graphql).
TOKEN_VARIABLE = "KERNELINDEX_TOKEN"

# Each tool's bounds: inside the schema's own (page size 100, 20 rows of a comparison by default), and
# small enough that an answer fits an agent's context.
MAX_WORKLOADS = 50
MAX_RECORDS = 10
MAX_CONFIGURATION_CHARS = 4096
MAX_ROWS = 25
MAX_FLOORS = 25
# submitImplementation's own limits (kernelindex.fleet.submissions): said here so that the input schema
# refuses what the mutation would.
MAX_SOURCE_CHARS = 512 * 1024
MAX_REPLICAS = 4

Slug = Annotated[str, Field(min_length=1, max_length=200,
                            description="A workload's slug, e.g. 'kernelbench-l3-p9-resnet18' (find_workloads lists them).")]
HardwareName = Annotated[str, Field(min_length=1, max_length=200,
                                    description="Hardware: a SKU ('NVIDIA H100 SXM5 80GB'), short name ('H100 SXM'), "
                                    "family ('NVIDIA H100': every SKU of it) or driver product name; one that "
                                    "matches nothing is an error listing the close matches.")]


class Tools:
    """The tools, over a Gateway that the server supplies once it has started (`gateway`)."""

    def __init__(self, gateway: Callable[[], Gateway], authorization: Callable[[Context | None], str | None]):
        self._gateway = gateway
        self._authorization = authorization

    async def _run(self, document: Document, variables: dict[str, Any], ctx: Context | None = None) -> dict[str, Any]:
        try:
            return await self._gateway().execute(document, variables, authorization=self._authorization(ctx))
        except GatewayError as exc:
            # The API's code first, so that an agent can tell its mistake (BAD_USER_INPUT, FORBIDDEN) from an outage.
            raise ToolError(str(exc)) from exc
        except Exception as exc:
            # A bug: logged here, and said as GraphQL says one in production (the SDK would send the exception's text).
            log.exception("MCP tool call failed (%s)", document.name)
            raise ToolError(f"{INTERNAL}: {INTERNAL_MESSAGE}") from exc

    async def find_workloads(
        self,
        suite: Annotated[str | None, Field(description="Only this suite, e.g. 'kernelbench'.", max_length=100)] = None,
        name: Annotated[str | None, Field(description="Case-insensitive part of the name, the slug, the suite's own "
                                          "name or an alias, e.g. 'resnet'.", max_length=200)] = None,
        family: Annotated[str | None, Field(description="Operation family the suite states, e.g. "
                                            "'gqa-paged-attention' (case-insensitive).", max_length=200)] = None,
        kind: Annotated[Literal["MODEL", "OPERATOR", "FUSION"] | None,
                        Field(description="A whole model, one operator, or a fusion of a few.")] = None,
        level: Annotated[int | None, Field(description="Level within the suite (KernelBench 1 to 4).", ge=0, le=1000)] = None,
        measured_on: Annotated[str | None, Field(description="Only workloads with an eligible run on this hardware "
                                                 "(SKU, short name, family or product name).", max_length=200)] = None,
        not_measured_on: Annotated[str | None, Field(description="Only workloads with no eligible run on this "
                                                     "hardware.", max_length=200)] = None,
        first: Annotated[int, Field(description=f"How many to return (1 to {MAX_WORKLOADS}).", ge=1, le=MAX_WORKLOADS)] = 20,
        after: Annotated[str | None, Field(description="The next_cursor of a previous answer, for the next page.",
                                           max_length=500)] = None,
    ) -> dict[str, Any]:
        """Find workloads (the computations KernelIndex ranks implementations of) by suite, name, family, kind,
        level, and whether they have been measured on a piece of hardware. Answers total_count, one page of
        workloads (slug, title, suite, level, family, kind, eligible run count, last observed) and next_cursor
        (null on the last page)."""
        data = await self._run(documents.FIND_WORKLOADS, {
            "first": first, "after": after, "suite": suite, "level": level, "family": family, "kind": kind,
            "nameContains": name, "measuredOn": measured_on, "notMeasuredOn": not_measured_on,
        })
        page = data["workloads"]
        info = page["pageInfo"]
        return {"total_count": page["totalCount"], "workloads": page["nodes"],
                "next_cursor": info["endCursor"] if info["hasNextPage"] else None}

    async def fastest_implementation(
        self,
        workload: Slug,
        hardware: HardwareName,
        first: Annotated[int, Field(description=f"How many records to return, one per environment of that hardware, "
                                    f"fastest first (1 to {MAX_RECORDS}).", ge=1, le=MAX_RECORDS)] = 3,
        # The SDK reads a string argument that holds JSON as the JSON's value: a key arrives as its object.
        configuration: Annotated[str | dict[str, Any] | None, Field(
            description="A configuration's key, as workload_semantics lists them (configurations): the records at "
                        "that configuration; omitted: the canonical one.")] = None,
        metric: Annotated[Literal["LATENCY", "MEMORY", "SCORE"], Field(
            description="The metric whose records to return: LATENCY (the headline records), MEMORY (peak memory) "
                        "or SCORE (a source's own score); lower is better for each.")] = "LATENCY",
    ) -> dict[str, Any]:
        """The fastest known implementation of a workload on a piece of hardware: its current records there
        (one per measured environment, fastest first), each with the implementation (and its licence), the
        figure and its 95% interval, the configuration it was measured at (the canonical one unless another
        is asked for), its trust level (REPORTED < REPRODUCIBLE < VERIFIED < REPLICATED), the evidence, and
        the source with its licence and terms. `measured` is false, with no records, when the workload has
        no eligible run on that hardware. An unknown workload, hardware or configuration is an error."""
        key = canonical_json(configuration) if isinstance(configuration, dict) else configuration
        if key is not None and len(key) > MAX_CONFIGURATION_CHARS:
            raise ToolError(f"{BAD_USER_INPUT}: a configuration key is at most {MAX_CONFIGURATION_CHARS} characters")
        data = await self._run(documents.FASTEST, {"workload": workload, "hardware": hardware, "first": first,
                                                   "configuration": key, "metric": metric})
        if data["workload"] is None:
            raise ToolError(f"{BAD_USER_INPUT}: no workload with slug {workload!r} (find_workloads lists them)")
        nodes = data["records"]["nodes"]
        records = nodes[0]["records"] if nodes else []
        return {"workload": data["workload"], "hardware": hardware, "measured": bool(records), "records": records}

    async def compare_runs(
        self,
        run_ids: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]],
                           Field(description="2 to 8 run IDs (a run's `id`, as the other tools return them), in the "
                                 "order to compare them.", min_length=2, max_length=8)],
    ) -> dict[str, Any]:
        """Compare 2 to 8 runs field by field: the fields that differ (configuration, environment, protocol,
        software, source, …), each run in full, and a winner only when all are in one cohort (same workload
        revision, configuration, protocol and environment); otherwise incomparable_because says why."""
        data = await self._run(documents.COMPARE_RUNS, {"ids": run_ids})
        result = data["compareRuns"]
        return {"comparable": result["comparable"], "incomparable_because": result["incomparableBecause"],
                "winner": (result["winner"] or {}).get("id"), "differences": result["differences"], "runs": result["runs"]}

    async def compare_implementations(
        self,
        workload: Slug,
        first: Annotated[int, Field(description=f"How many implementations and ranked rows (1 to {MAX_ROWS}).",
                                    ge=1, le=MAX_ROWS)] = 10,
    ) -> dict[str, Any]:
        """Compare the implementations of a workload: each one's best latency over all hardware with its
        ratio to the best and trust level, and the record's cohort ranked (one environment, configuration
        and protocol: rank, latency, 95% interval, verdict against the baseline, trust level, source)."""
        data = await self._run(documents.COMPARE_IMPLEMENTATIONS, {"workload": workload, "first": first})
        found = data["workload"]
        if found is None:
            raise ToolError(f"{BAD_USER_INPUT}: no workload with slug {workload!r} (find_workloads lists them)")
        return found

    async def workload_semantics(
        self,
        workload: Slug,
        floors: Annotated[int, Field(description=f"How many hardware floors to return (1 to {MAX_FLOORS}).",
                                     ge=1, le=MAX_FLOORS)] = 10,
    ) -> dict[str, Any]:
        """What a workload computes and how fast it could at best run: its description, inputs and outputs
        (dtype, shape), axes, determinism and constraints, canonical configuration and identity, the
        configurations and metrics that hold records (the first `floors` of them; pass a key to
        fastest_implementation), and its roofline floors per hardware (bytes, FLOPs, floor time, which bound binds, the record's ratio above
        the floor). Floors are lower bounds, never measurements."""
        data = await self._run(documents.SEMANTICS, {"workload": workload, "first": floors})
        found = data["workload"]
        if found is None:
            raise ToolError(f"{BAD_USER_INPUT}: no workload with slug {workload!r} (find_workloads lists them)")
        return found

    async def list_sources(self) -> dict[str, Any]:
        """Every source KernelIndex's figures come from, with its licence, terms of use, attribution, run
        count and newest snapshot: what may be done with a figure depends on its source's terms."""
        data = await self._run(documents.SOURCES, {})
        return {"sources": data["sources"]}

    async def submit_kernel(
        self,
        workload: Slug,
        source: Annotated[str, Field(description="The implementation: a Python module defining ModelNew with the "
                                     "reference Model's constructor arguments (KernelBench format). Parsed, never "
                                     "run, here.", min_length=1, max_length=MAX_SOURCE_CHARS)],
        title: Annotated[str, Field(description="What it is, in a few words.", min_length=1, max_length=200)],
        hardware: Annotated[str, Field(description="Where to measure: 'cpu' or a GPU of the catalogue (SKU, short "
                                       "name or product name).", min_length=1, max_length=200)],
        ctx: Context,
        filename: Annotated[str, Field(description="File name, for tracebacks and the record.", min_length=1,
                                       max_length=255)] = "model_new.py",
        licence: Annotated[str | None, Field(description="SPDX licence expression, e.g. 'MIT'.", max_length=200)] = None,
        source_url: Annotated[str | None, Field(description="Where its source lives.", max_length=2000)] = None,
        bindings: Annotated[dict[str, int] | None, Field(description="Configuration overrides of the workload's "
                                                         "variable axes, e.g. {\"batch_size\": 8}.", max_length=16)] = None,
        replicas: Annotated[int, Field(description="Measure on this many distinct machines of that hardware "
                                       "(two that agree: REPLICATED).", ge=1, le=MAX_REPLICAS)] = 1,
    ) -> dict[str, Any]:
        """Submit a kernel to be measured by KernelIndex's workers on the hardware named. Needs an API token
        with the implementations:submit scope (over HTTP: `Authorization: Bearer TOKEN`; over stdio: the
        KERNELINDEX_TOKEN variable). A worker of that hardware runs it in its sandbox, checks it against the
        reference and times it. Answers ok, created (false: the same file for the same workload revision,
        hardware and configuration was submitted before, and its job is returned) and the job(s) to follow
        with follow_job; with ok false, problems name each input at fault and why."""
        data = await self._run(documents.SUBMIT, {"input": {
            "workload": workload, "source": source, "title": title, "hardware": hardware, "filename": filename,
            "licence": licence, "sourceUrl": source_url, "bindings": bindings, "replicas": replicas,
        }}, ctx)
        return data["submitImplementation"]

    async def follow_job(
        self,
        job_id: Annotated[str, Field(description="The job's id (as submit_kernel returns it) or its database id.",
                                     min_length=1, max_length=200)],
    ) -> dict[str, Any]:
        """Where a measurement job stands: QUEUED, RUNNING, PASSED, FAILED or CANCELLED, with its reason,
        attempts and worker; once it ran, the run it produced (figure, interval, trust level, or why it
        failed) and the PyTorch eager baseline measured beside it. Never cached: call again to follow it."""
        data = await self._run(documents.JOB, {"id": job_id})
        if data["job"] is None:
            raise ToolError(f"{BAD_USER_INPUT}: no job with id {job_id!r}")
        return data["job"]


def described(kind: Any, description: str) -> Any:
    return Annotated[kind, Field(description=description)]


def tool_answers(schema: GraphQLSchema) -> dict[str, Any]:
    """Each tool's answer type (its output schema), from its document's types (kernelindex.mcp.answers)
    and the shape the tool gives them above."""
    found = answer_types(schema, documents.FIND_WORKLOADS)["workloads"]
    fastest = answer_types(schema, documents.FASTEST)
    compared = answer_types(schema, documents.COMPARE_RUNS)["compareRuns"]
    return {
        "find_workloads": typed("FindWorkloadsAnswer", {
            "total_count": described(int, "How many workloads match, in all."),
            "workloads": described(list[member(found, "nodes")], "This page of them."),  # type: ignore[misc]
            "next_cursor": described(str | None, "`after` for the next page; null on the last."),
        }),
        "fastest_implementation": typed("FastestImplementationAnswer", {
            "workload": member(fastest["workload"]),
            "hardware": described(str, "The hardware asked about, as asked."),
            "measured": described(bool, "Whether the workload has an eligible run on that hardware."),
            "records": described(list[member(fastest["records"], "nodes", "records")],  # type: ignore[misc]
                                 "Its records there, one per environment, fastest first."),
        }),
        "compare_runs": typed("CompareRunsAnswer", {
            "comparable": described(bool, "Whether all runs are in one cohort."),
            "incomparable_because": described(str | None, "Why not, when they are not."),
            "winner": described(str | None, "The fastest run's id, when they are comparable."),
            "differences": described(list[member(compared, "differences")], "The fields that differ."),  # type: ignore[misc]
            "runs": described(list[member(compared, "runs")], "The runs, in the order asked."),  # type: ignore[misc]
        }),
        "compare_implementations": member(answer_types(schema, documents.COMPARE_IMPLEMENTATIONS)["workload"]),
        "workload_semantics": member(answer_types(schema, documents.SEMANTICS)["workload"]),
        "list_sources": typed("ListSourcesAnswer", {"sources": answer_types(schema, documents.SOURCES)["sources"]}),
        "submit_kernel": answer_types(schema, documents.SUBMIT)["submitImplementation"],
        "follow_job": member(answer_types(schema, documents.JOB)["job"]),
    }


def stdio_authorization(_: Context | None = None) -> str | None:
    """The Authorization value a stdio server's writes carry: the token in KERNELINDEX_TOKEN, if any."""
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    return f"Bearer {token}" if token else None


def http_authorization(ctx: Context | None) -> str | None:
    """The Authorization header of the HTTP request that carried the call (as /graphql reads it)."""
    headers = ctx.headers if ctx is not None else None
    return headers.get("authorization") if headers is not None else None
