"""Which errors a client may read, and how the rest are reported.

Errors the client caused (parse, validation, bad arguments, authentication) are shown as they are.
A database outage becomes SERVICE_UNAVAILABLE with HTTP 503. Anything else is an internal error:
in production its message is masked and the request id ties the response to the log line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from kernelindex.db.errors import is_unavailable

log = logging.getLogger("kernelindex.graphql")

UNAVAILABLE_MESSAGE = "The database is unavailable; retry shortly."
INTERNAL_MESSAGE = "Unexpected error."


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
                processed.append(
                    GraphQLError(UNAVAILABLE_MESSAGE, nodes=error.nodes, path=error.path,
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
                processed.append(error)
        result.errors = processed
