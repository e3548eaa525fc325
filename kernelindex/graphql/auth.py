"""Writes need an API token with a scope: the request's token checked, and a failure reported as a
GraphQL error the client reads (UNAUTHENTICATED or FORBIDDEN, never masked)."""

from __future__ import annotations

from graphql import GraphQLError

from kernelindex.db.models import ApiToken
from kernelindex.graphql.context import Context
from kernelindex.graphql.errors import FORBIDDEN, UNAUTHENTICATED
from kernelindex.services.tokens import AuthenticationError, PermissionDeniedError, authenticate, has_scope, require_scope


async def token_with_scope(context: Context, scope: str, *or_scopes: str) -> ApiToken:
    """The live token the request's Authorization header names (or, without an HTTP request, the
    context's `authorization`: an MCP tool's), when it grants `scope` (or one of `or_scopes`: the
    caller then asks has_scope which, when they grant different rights)."""
    request = context.request
    header = request.headers.get("authorization") if request is not None else context.authorization
    try:
        token = await authenticate(context.session, header, now=context.now)
        if not any(has_scope(token, other) for other in or_scopes):
            require_scope(token, scope)
    except AuthenticationError as exc:
        raise GraphQLError(exc.message, extensions={"code": UNAUTHENTICATED}) from exc
    except PermissionDeniedError as exc:
        if or_scopes:
            exc.message = f"this token lacks the {' or the '.join((scope, *or_scopes))} scope"
        raise GraphQLError(exc.message, extensions={"code": FORBIDDEN}) from exc
    return token


def forbidden(message: str) -> GraphQLError:
    """A token that authenticates but may not do this particular thing."""
    return GraphQLError(message, extensions={"code": FORBIDDEN})
