"""Which errors a client may read. Validation and input errors are the client's own; anything else
is masked in production (the request id in the response and the log ties them together)."""

from __future__ import annotations

from graphql import GraphQLError


class UserInputError(GraphQLError):
    """Bad arguments: the message says what was wrong."""


def should_mask_error(error: GraphQLError) -> bool:
    original = error.original_error
    if original is None:
        return False  # parse and validation errors
    return not isinstance(original, GraphQLError)
