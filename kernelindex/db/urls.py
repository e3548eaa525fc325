"""Turning the URLs people write into the ones SQLAlchemy and asyncpg want."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


class DatabaseUrlError(ValueError):
    pass


def to_async_url(url: str) -> str:
    """Accept postgresql://, postgres:// and postgresql+asyncpg:// (Unix-socket form included)."""
    parts = urlsplit(url)
    scheme = parts.scheme
    if scheme in ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+asyncpg"):
        scheme = "postgresql+asyncpg"
    else:
        raise DatabaseUrlError(
            f"KERNELINDEX_DATABASE_URL must be a postgresql:// or postgresql+asyncpg:// URL, got scheme {parts.scheme!r}"
        )
    if not parts.path.strip("/"):
        raise DatabaseUrlError("KERNELINDEX_DATABASE_URL names no database (expected …/dbname)")
    query = parse_qsl(parts.query, keep_blank_values=True)
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def to_libpq_url(url: str) -> str:
    """The plain postgresql:// form (for psql and asyncpg.connect)."""
    parts = urlsplit(to_async_url(url))
    return urlunsplit(("postgresql", parts.netloc, parts.path, parts.query, parts.fragment))


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url
