"""API tokens: writes need one, sent as `Authorization: Bearer ki_…`.

A token is `ki_` followed by 32 random bytes (URL-safe base64). Only its sha256 is stored, with the
first characters for display (`display_prefix`); the token itself is shown once, when created.
Each token carries scopes; a mutation asks for the one it needs (`require_scope`).

Nothing here commits: the caller (the request middleware, or the CLI's transaction) owns the
transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from kernelindex.db.models import ApiToken

TOKEN_PREFIX = "ki_"
TOKEN_RANDOM_BYTES = 32
DISPLAY_PREFIX_LENGTH = 10
# "ki_" + 43 characters of URL-safe base64. Anything far longer is not a token of ours: it is refused
# without hashing or a database lookup.
MAX_TOKEN_LENGTH = 200
MAX_NAME_LENGTH = 200

SCOPE_RUNS_WRITE = "runs:write"
SCOPE_RUNS_RETRACT = "runs:retract"
SCOPE_RUNS_REVIEW = "runs:review"
SCOPE_IMPLEMENTATIONS_SUBMIT = "implementations:submit"
SCOPE_JOBS_CANCEL = "jobs:cancel"
KNOWN_SCOPES: dict[str, str] = {
    SCOPE_RUNS_REVIEW: "review a run held as suspicious (reviewRun)",
    SCOPE_RUNS_WRITE: "submit run records (submitRuns)",
    SCOPE_RUNS_RETRACT: "retract a run or a suite snapshot with its runs (retractRun, retractSnapshot)",
    SCOPE_IMPLEMENTATIONS_SUBMIT: "submit an implementation to be measured by the fleet (submitImplementation), and "
                                  "cancel the jobs it queued (cancelJob)",
    SCOPE_JOBS_CANCEL: "cancel any fleet job, queued or running (cancelJob): the fleet operator's",
}

INVALID_TOKEN_MESSAGE = "invalid or revoked API token"
MISSING_TOKEN_MESSAGE = "this operation needs an API token: send the header 'Authorization: Bearer ki_…'"
MALFORMED_HEADER_MESSAGE = "malformed Authorization header: expected 'Authorization: Bearer ki_…'"

_BEARER = re.compile(r"\A[ \t]*bearer[ \t]+(\S+)[ \t]*\Z", re.IGNORECASE)


class AuthenticationError(Exception):
    """No usable token: missing, malformed, unknown or revoked. The message is for the client."""

    def __init__(self, message: str = INVALID_TOKEN_MESSAGE):
        super().__init__(message)
        self.message = message


class PermissionDeniedError(Exception):
    """A valid token without the scope the operation needs. The message is for the client."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UnknownScopeError(ValueError):
    """A scope name that is not in KNOWN_SCOPES."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_RANDOM_BYTES)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def display_prefix(token: str) -> str:
    return token[:DISPLAY_PREFIX_LENGTH]


def normalise_scopes(scopes: Iterable[str]) -> list[str]:
    """The scopes, de-duplicated in the order given; UnknownScopeError for any unknown one or none at all."""
    out: list[str] = []
    for scope in scopes:
        scope = scope.strip()
        if scope not in KNOWN_SCOPES:
            known = ", ".join(KNOWN_SCOPES)
            raise UnknownScopeError(f"unknown scope {scope[:60]!r}: known scopes are {known}")
        if scope not in out:
            out.append(scope)
    if not out:
        raise UnknownScopeError(f"a token needs at least one scope ({', '.join(KNOWN_SCOPES)})")
    return out


async def create_token(session: AsyncSession, *, scopes: Iterable[str], name: str = "") -> tuple[ApiToken, str]:
    """A new token row and the token text. The text is not stored anywhere: show it once."""
    checked = normalise_scopes(scopes)
    name = (name or "").strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"token name is {len(name)} characters; the most is {MAX_NAME_LENGTH}")
    if "\x00" in name:
        raise ValueError("token name must not contain NUL characters")
    token = generate_token()
    row = ApiToken(name=name, token_sha256=hash_token(token), display_prefix=display_prefix(token), scopes=checked)
    session.add(row)
    await session.flush()
    return row, token


async def list_tokens(session: AsyncSession) -> list[ApiToken]:
    return list((await session.scalars(select(ApiToken).order_by(ApiToken.id))).all())


async def revoke_token(session: AsyncSession, token_id: int, *, now: datetime | None = None) -> tuple[ApiToken | None, bool]:
    """(row, newly revoked). Row None: no such token. Revoking a revoked token changes nothing."""
    row = await session.get(ApiToken, token_id)
    if row is None:
        return None, False
    if row.revoked_at is not None:
        return row, False
    row.revoked_at = now or utc_now()
    await session.flush()
    return row, True


def token_from_header(authorization_header: str | None) -> str:
    """The bearer token in an Authorization header; AuthenticationError when missing or malformed."""
    if authorization_header is None or not authorization_header.strip():
        raise AuthenticationError(MISSING_TOKEN_MESSAGE)
    if len(authorization_header) > MAX_TOKEN_LENGTH + 64:
        raise AuthenticationError(INVALID_TOKEN_MESSAGE)
    match = _BEARER.match(authorization_header)
    if match is None:
        raise AuthenticationError(MALFORMED_HEADER_MESSAGE)
    return match.group(1)


async def authenticate(
    session: AsyncSession, authorization_header: str | None, *, now: datetime | None = None
) -> ApiToken:
    """The live token the header names, with last_used_at set; AuthenticationError otherwise.

    Unknown and revoked tokens get the same message: a client cannot tell which.
    """
    token = token_from_header(authorization_header)
    if not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_LENGTH:
        raise AuthenticationError(INVALID_TOKEN_MESSAGE)
    digest = hash_token(token)
    row = (await session.scalars(select(ApiToken).where(ApiToken.token_sha256 == digest))).one_or_none()
    # The lookup is by hash (an index probe, not a string comparison of secrets); compare again in
    # constant time for good measure.
    if row is None or not hmac.compare_digest(row.token_sha256, digest) or row.revoked_at is not None:
        raise AuthenticationError(INVALID_TOKEN_MESSAGE)
    used_at = now or utc_now()
    await session.execute(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=used_at))
    set_committed_value(row, "last_used_at", used_at)  # already written: not dirty
    return row


def has_scope(token: ApiToken, scope: str) -> bool:
    return scope in (token.scopes or [])


def require_scope(token: ApiToken, scope: str) -> None:
    if scope not in KNOWN_SCOPES:
        raise ValueError(f"unknown scope {scope!r}")  # a programming error, not the client's
    if not has_scope(token, scope):
        raise PermissionDeniedError(f"this token lacks the {scope} scope")
