"""Which errors a client may read, and how the rest are reported.

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
from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from kernelindex.db.errors import is_unavailable, unavailable_message

log = logging.getLogger("kernelindex.graphql")

UNAVAILABLE_MESSAGE = "The database is unavailable; retry shortly."
INTERNAL_MESSAGE = "Unexpected error."
# graphql-core's did_you_mean: " Did you mean 'a', 'b', or 'c'?" (and "the enum value 'A'?").
_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")


def without_suggestions(error: GraphQLError) -> GraphQLError:
    """The error with any schema suggestion cut from its message."""
    if "Did you mean" not in error.message:
        return error
    return GraphQLError(_SUGGESTION.sub("", error.message), nodes=error.nodes, path=error.path,
                        extensions=error.extensions)


class UserInputError(GraphQLError):
    """Bad arguments: the message says what was wrong."""

    def __init__(self, message: str, **kwargs):
        super().__init__(message, extensions={"code": "BAD_USER_INPUT"}, **kwargs)


def should_mask_error(error: GraphQLError) -> bool:
    original = error.original_error
    if original is None:
        return False  # parse and validation errors
    return not isinstance(original, GraphQLError)


class ErrorPolicy(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        errors = result.errors
        context = self.execution_context.context
        request_id = getattr(context, "request_id", "")
        production = context.settings.is_production if context is not None else True
        processed = []
        for error in errors:
            original = error.original_error
            if original is not None and is_unavailable(original):
                log.warning("database unavailable (request %s): %s", request_id, original)
                response = getattr(context, "response", None)
                if response is not None:
                    response.status_code = 503
                # A known cause (the database server's disk is full, …) is said; a plain outage is not.
                processed.append(
                    GraphQLError(unavailable_message(original) or UNAVAILABLE_MESSAGE, nodes=error.nodes, path=error.path,
                                 extensions={"code": "SERVICE_UNAVAILABLE", "request_id": request_id})
                )
            elif should_mask_error(error):
                log.error("unexpected error (request %s)", request_id, exc_info=original)
                if production:
                    processed.append(
                        GraphQLError(INTERNAL_MESSAGE, nodes=error.nodes, path=error.path,
                                     extensions={"code": "INTERNAL_SERVER_ERROR", "request_id": request_id})
                    )
                else:
                    error.extensions = {**(error.extensions or {}), "code": "INTERNAL_SERVER_ERROR", "request_id": request_id}
                    processed.append(error)
            else:
                processed.append(without_suggestions(error) if production else error)
        result.errors = processed
