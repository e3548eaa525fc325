"""Which errors a client may read, the code every error carries, and how the rest are reported.

Every error in a GraphQL response has an `extensions.code` (Apollo Server's names where one exists):

| code | what happened | status with application/graphql-response+json |
|---|---|---|
| GRAPHQL_PARSE_FAILED | the document is not GraphQL | 400 |
| GRAPHQL_VALIDATION_FAILED | the document does not fit the schema (also: introspection off) | 400 |
| QUERY_TOO_COMPLEX | the document is valid but over a limit of this server: depth, aliases, tokens, nesting, repeated fields | 400 |
| QUERY_TOO_COSTLY | the document is over the cost limit (cost.py; the code predates the list, kept for its clients) | 400 |
| BAD_USER_INPUT | a variable, or an argument a resolver checked, has a value that cannot be used | 400 before execution, 200 as a field error |
| UNAUTHENTICATED / FORBIDDEN | a write without a valid token / without the scope (auth.py) | 401 / 403 when no data came back |
| SERVICE_UNAVAILABLE | the database is down or out of disk, memory or connections | 503 when no data came back |
| TIMEOUT | the request ran past REQUEST_TIMEOUT_S (kernelindex.web.http) | 504 |
| INTERNAL_SERVER_ERROR | anything else: a bug; masked in production, tied to the log by request_id | 500 before execution, 200 as a field error |

Requests refused before GraphQL sees them (kernelindex.web) carry BAD_REQUEST (400: not JSON, not an
object, no query, an operation name that names none), NOT_FOUND (404), METHOD_NOT_ALLOWED (405),
NOT_ACCEPTABLE (406), PAYLOAD_TOO_LARGE (413) and UNSUPPORTED_MEDIA_TYPE (415), by their status.

Errors the client caused (parse, validation, bad arguments, authentication) are shown as they are.
A database outage becomes SERVICE_UNAVAILABLE with HTTP 503. Anything else is an internal error:
in production its message is masked and the request id ties the response to the log line.
In production no message suggests schema names ("Did you mean 'referenceSource'?"): validation
omits them (kernelindex.graphql.validation), and those that execution adds when it coerces a
variable's value are cut here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension

from kernelindex.db.errors import is_unavailable, unavailable_message

log = logging.getLogger("kernelindex.graphql")

UNAVAILABLE_MESSAGE = "The database is unavailable; retry shortly."
INTERNAL_MESSAGE = "Unexpected error."
# graphql-core's did_you_mean: " Did you mean 'a', 'b', or 'c'?" (and "the enum value 'A'?").
_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")
# graphql-core's parser stops at a limit (the token limit, nesting too deep for the interpreter)
# with a syntax error ending so: the document may be fine GraphQL, it is too large to read.
_PARSE_LIMIT_SUFFIX = "Parsing aborted."

# -- the codes -------------------------------------------------------------------------------------
PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
QUERY_TOO_COMPLEX = "QUERY_TOO_COMPLEX"
QUERY_TOO_COSTLY = "QUERY_TOO_COSTLY"
BAD_USER_INPUT = "BAD_USER_INPUT"
UNAUTHENTICATED = "UNAUTHENTICATED"
FORBIDDEN = "FORBIDDEN"
SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
TIMEOUT = "TIMEOUT"
INTERNAL = "INTERNAL_SERVER_ERROR"
# Refusals of the HTTP request itself, by status.
HTTP_CODES = {
    400: "BAD_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 406: "NOT_ACCEPTABLE",
    413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE", 503: SERVICE_UNAVAILABLE, 504: TIMEOUT,
}

# The status each code calls for when it stops the request (kernelindex.web.app, for clients of
# application/graphql-response+json; application/json keeps 200 for GraphQL errors).
STATUS = {
    PARSE_FAILED: 400, VALIDATION_FAILED: 400, QUERY_TOO_COMPLEX: 400, QUERY_TOO_COSTLY: 400,
    BAD_USER_INPUT: 400, UNAUTHENTICATED: 401, FORBIDDEN: 403, SERVICE_UNAVAILABLE: 503, TIMEOUT: 504,
    INTERNAL: 500, **{code: status for status, code in HTTP_CODES.items()},
}


def response_status(response: Mapping[str, Any]) -> tuple[int, bool]:
    """(status, executed) of a GraphQL response (as sent: errors as dicts) for a client of
    application/graphql-response+json, per GraphQL over HTTP. Errors without a `path` and no data
    are a request error (not executed): the status their codes call for (400 for the client's
    mistakes, 5xx for the server's), and no `data` entry. Executed with data: 200 whatever the field
    errors (a partial response). Executed without data: 401 or 403 when every error is about the
    token, 503 when the database is out, 200 otherwise (the spec's recommendation for `data: null`)."""
    errors = response.get("errors") or []
    if not errors:
        return 200, True
    codes = [(error.get("extensions") or {}).get("code") for error in errors]
    if not any("path" in error for error in errors) and response.get("data") is None:
        return max(STATUS.get(code or INTERNAL, 500) for code in codes), False
    if response.get("data") is not None:
        return 200, True
    if SERVICE_UNAVAILABLE in codes:
        return 503, True
    if set(codes) <= {UNAUTHENTICATED, FORBIDDEN}:
        return (401 if UNAUTHENTICATED in codes else 403), True
    return 200, True


def code_of(error: GraphQLError) -> str | None:
    return (error.extensions or {}).get("code")


def with_code(error: GraphQLError, code: str, **extensions: Any) -> GraphQLError:
    """The error with `extensions.code` set (and other extensions added); the error itself when it
    has a code already. A new error: errors from the validation and parser caches are shared."""
    if code_of(error) is not None:
        return error
    return GraphQLError(error.message, nodes=error.nodes, source=error.source, positions=error.positions,
                        path=error.path, original_error=error.original_error,
                        extensions={**(error.extensions or {}), "code": code, **extensions})


def without_suggestions(error: GraphQLError) -> GraphQLError:
    """The error with any schema suggestion cut from its message."""
    if "Did you mean" not in error.message:
        return error
    return GraphQLError(_SUGGESTION.sub("", error.message), nodes=error.nodes, path=error.path,
                        extensions=error.extensions)


class UserInputError(GraphQLError):
    """Bad arguments: the message says what was wrong."""

    def __init__(self, message: str, **kwargs):
        super().__init__(message, extensions={"code": BAD_USER_INPUT}, **kwargs)


def should_mask_error(error: GraphQLError) -> bool:
    original = error.original_error
    if original is None:
        return False  # parse and validation errors
    return not isinstance(original, GraphQLError)


def _client_code(error: GraphQLError) -> str:
    """The code of an error that is the client's to read and has none yet."""
    if isinstance(error, GraphQLSyntaxError):
        return QUERY_TOO_COMPLEX if error.message.endswith(_PARSE_LIMIT_SUFFIX) else PARSE_FAILED
    if error.path is None:
        # Validation errors carry their code (validation.py); what is left before any field ran is
        # a variable's value that cannot be coerced to its type.
        return BAD_USER_INPUT
    # A field error from graphql-core itself (a value that does not serialize): the server's fault.
    return INTERNAL


def reported(error: GraphQLError, *, production: bool, request_id: str, response: Any = None) -> GraphQLError:
    """The error as the client sees it: with its code, an outage said as one (status 503 on
    `response`), an unexpected error logged and, in production, masked."""
    original = error.original_error
    if original is not None and is_unavailable(original):
        log.warning("database unavailable (request %s): %s", request_id, original)
        if response is not None:
            response.status_code = 503
        # A known cause (the database server's disk is full, …) is said; a plain outage is not.
        return GraphQLError(unavailable_message(original) or UNAVAILABLE_MESSAGE, nodes=error.nodes, path=error.path,
                            extensions={"code": SERVICE_UNAVAILABLE, "request_id": request_id})
    if should_mask_error(error):
        log.error("unexpected error (request %s)", request_id, exc_info=original)
        if production:
            return GraphQLError(INTERNAL_MESSAGE, nodes=error.nodes, path=error.path,
                                extensions={"code": INTERNAL, "request_id": request_id})
        error.extensions = {**(error.extensions or {}), "code": INTERNAL, "request_id": request_id}
        return error
    error = with_code(error, _client_code(error))
    return without_suggestions(error) if production else error


def reported_all(errors: Sequence[GraphQLError], *, production: bool, request_id: str,
                 response: Any = None) -> list[GraphQLError]:
    return [reported(e, production=production, request_id=request_id, response=response) for e in errors]


class ErrorPolicy(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        report_errors(self.execution_context.result, self.execution_context.context)


def report_errors(result: Any, context: Any) -> None:
    """An operation's errors as the client sees them (reported), in its result: ErrorPolicy's, at the end
    of every operation strawberry runs, and kernelindex.graphql.plan's execute_ready's."""
    if result is None or not result.errors:
        return
    result.errors = reported_all(
        result.errors,
        production=context.settings.is_production if context is not None else True,
        request_id=getattr(context, "request_id", ""),
        response=getattr(context, "response", None),
    )
