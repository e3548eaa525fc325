"""Persisted queries: Apollo's Automatic Persisted Queries (APQ) over POST and GET, the allow-list of
a production server, and the caching headers of GraphQL GET answers.

APQ, as Apollo Client, urql (persistedExchange) and Relay network layers that follow Apollo speak it:
a request carries `extensions.persistedQuery = {"version": 1, "sha256Hash": "<hex>"}`.
- With no `query`, the stored document for that hash runs. None stored: a GraphQL error with
  `extensions.code = "PERSISTED_QUERY_NOT_FOUND"` and the message "PersistedQueryNotFound", HTTP 200
  in both media types and `Cache-Control: no-store` (as Apollo Server: a client's persisted-query
  link retries with the full query on that answer, and gives up on APQ for good on a 400 or 500).
- With the `query` too, the hash must be the SHA-256 (hex) of the query text exactly as sent
  (`PERSISTED_QUERY_HASH_MISMATCH` otherwise, 400 with application/graphql-response+json); the
  document runs and, once it has run, is stored under its hash.
- GET takes the same parameters: `/graphql?extensions=…&variables=…&operationName=…`; only queries
  run over GET, never a mutation (strawberry's refusal: 400, or 405 with graphql-response+json).

Where documents live: in each server process, in a bounded LRU (`PERSISTED_QUERY_ENTRIES`,
`PERSISTED_QUERY_BYTES`), the way Apollo Server's default in-memory cache works. Another worker of
`serve --workers N`, or a restart, does not know a hash another one learnt: the client gets
PERSISTED_QUERY_NOT_FOUND once and re-sends the full query, which costs one round trip and no
correctness. Nothing is written to the database (that would need a table and a migration).

Registered documents: the files named by `PERSISTED_QUERY_FILES` are read at start-up by every
process and never evicted: a `.graphql` or `.gql` file is one document (its whole text, hashed as
it is); a `.json` file is an Apollo persisted-query manifest (`{"format":
"apollo-persisted-query-manifest", "version": 1, "operations": [{"id", "body", …}]}`) or an object
of `{"<sha256>": "<document>"}` (graphql-codegen's persisted documents with sha256); a folder stands
for those files under it. Every document is parsed and validated against the schema, and every
stated hash checked, at start-up: a file that does not fit stops the server, naming file, line and
key. With `PERSISTED_ONLY=true` (the production allow-list) only registered documents run, named by
hash or sent in full; anything else is `PERSISTED_QUERY_NOT_ALLOWED` (400 with graphql-response+json)
and nothing a client sends is stored.

GET answers: the view marks an answer `Cache-Control: no-store` when it carries errors or read what
the data version does not follow (a fleet job: `reads.volatile`); `CacheableGetMiddleware` gives
every other 200 answer to a GET its ETag (a strong digest of body and media type), `Cache-Control:
public, max-age=CACHE_MAX_AGE_S` and 304 for a matching If-None-Match.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cross_web import HTTPException
from graphql import DocumentNode, GraphQLError, GraphQLSyntaxError, parse
from starlette.datastructures import MutableHeaders
from starlette.types import Message, Scope, Send
from strawberry.http import GraphQLRequestData
from strawberry.types import ExecutionResult

from kernelindex.settings import Settings
from kernelindex.web.http import ConditionalGetMiddleware

# -- the codes (Apollo's names where Apollo has one) -------------------------------------------------
NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
NOT_SUPPORTED = "PERSISTED_QUERY_NOT_SUPPORTED"
HASH_MISMATCH = "PERSISTED_QUERY_HASH_MISMATCH"
NOT_ALLOWED = "PERSISTED_QUERY_NOT_ALLOWED"
# The messages Apollo's clients match on (apollo-link-persisted-queries, urql's persistedExchange).
NOT_FOUND_MESSAGE = "PersistedQueryNotFound"
NOT_SUPPORTED_MESSAGE = "PersistedQueryNotSupported"
# The status each code calls for with application/graphql-response+json (application/json: 200, as
# every GraphQL error). Not found and not supported are 200 there too: Apollo's persisted-query link
# turns APQ off for good on a 400 or 500, and a miss is the protocol's normal first answer.
STATUS = {NOT_FOUND: 200, NOT_SUPPORTED: 200, HASH_MISMATCH: 400, NOT_ALLOWED: 400}

APQ_VERSION = 1
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
DOCUMENT_SUFFIXES = (".graphql", ".gql")
MANIFEST_SUFFIX = ".json"
APOLLO_MANIFEST_FORMAT = "apollo-persisted-query-manifest"

# The Cache-Control of a GET answer no cache may store (the request's state says so: RequestState.no_store).
NO_STORE = "no-store"


def sha256_hex(text: str) -> str:
    """The hash APQ names a document by: SHA-256 of its UTF-8 text, lower-case hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PersistedQueryError(GraphQLError):
    """A persisted-query request refused before execution: its code, and the status it calls for."""

    def __init__(self, code: str, message: str):
        super().__init__(message, extensions={"code": code})
        self.code = code
        self.status = STATUS[code]


class PersistedQueryRefusal(ExecutionResult):
    """The answer to a refused persisted-query request: one error, nothing executed."""

    def __init__(self, error: PersistedQueryError):
        super().__init__(data=None, errors=[error])
        self.error = error


class PersistedQueryFileError(ValueError):
    """A file of registered operations that cannot be used: the message names file, line and key."""


# -- the store ---------------------------------------------------------------------------------------

class DocumentStore:
    """Documents by hash: the registered ones (never evicted) and, for APQ, a bounded LRU of the ones
    clients sent with their hash, by count and by total UTF-8 bytes. One per server process."""

    def __init__(self, registered: Mapping[str, str], max_entries: int, max_bytes: int):
        self.registered = dict(registered)
        self.max_entries = max(0, max_entries)
        self.max_bytes = max(0, max_bytes)
        self._learnt: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0

    @property
    def learns(self) -> bool:
        """Whether APQ registration is on (PERSISTED_QUERY_ENTRIES > 0)."""
        return self.max_entries > 0 and self.max_bytes > 0

    def __len__(self) -> int:
        return len(self._learnt)

    def get(self, digest: str) -> str | None:
        document = self.registered.get(digest)
        if document is not None:
            return document
        document = self._learnt.get(digest)
        if document is not None:
            self._learnt.move_to_end(digest)
        return document

    def put(self, digest: str, document: str) -> None:
        """Remember a document a client sent with its (checked) hash; the least recently used go first."""
        size = len(document.encode("utf-8"))
        if not self.learns or digest in self.registered or size > self.max_bytes:
            return
        previous = self._learnt.pop(digest, None)
        if previous is not None:
            self._bytes -= len(previous.encode("utf-8"))
        self._learnt[digest] = document
        self._bytes += size
        while len(self._learnt) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._learnt.popitem(last=False)
            self._bytes -= len(evicted.encode("utf-8"))


# -- the protocol ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Resolved:
    """A request with its document in place, and the hash to store it under once it has run (None:
    nothing to store)."""

    request: GraphQLRequestData
    store_as: str | None = None


def requested_hash(extensions: Mapping[str, Any] | None) -> str | None:
    """The sha256Hash of `extensions.persistedQuery`, lower case; None without one. A malformed one is
    the client's mistake, refused as the request's others are (400, BAD_REQUEST)."""
    if not extensions or extensions.get("persistedQuery") is None:
        return None
    persisted = extensions["persistedQuery"]
    if not isinstance(persisted, dict):
        raise HTTPException(400, "extensions.persistedQuery must be an object {version: 1, sha256Hash: \"<hex>\"}")
    if persisted.get("version") != APQ_VERSION:
        raise HTTPException(400, f"extensions.persistedQuery.version must be {APQ_VERSION} "
                                 f"(the only version of the protocol), got {json.dumps(persisted.get('version'))[:40]}")
    digest = persisted.get("sha256Hash")
    if not isinstance(digest, str) or not _SHA256_HEX.fullmatch(digest):
        raise HTTPException(400, "extensions.persistedQuery.sha256Hash must be 64 hexadecimal digits (a SHA-256)")
    return digest.lower()


class PersistedQueries:
    """APQ and the allow-list for one server process."""

    def __init__(self, store: DocumentStore, *, persisted_only: bool):
        self.store = store
        self.persisted_only = persisted_only

    def resolve(self, request: GraphQLRequestData) -> Resolved:
        """The request with its document, or a PersistedQueryError (or a 400 for a malformed extension)."""
        digest = requested_hash(request.extensions)
        query = request.query
        if digest is None:
            if self.persisted_only and query is not None and sha256_hex(query) not in self.store.registered:
                raise PersistedQueryError(NOT_ALLOWED, "This server runs registered operations only "
                                                       "(KERNELINDEX_PERSISTED_ONLY): this document is not one of them.")
            return Resolved(request)
        if query is None:
            document = self.store.get(digest)
            if document is not None:
                return Resolved(replace(request, query=document))
            if self.persisted_only:
                raise PersistedQueryError(NOT_ALLOWED, "This server runs registered operations only "
                                                       f"(KERNELINDEX_PERSISTED_ONLY): no operation is registered "
                                                       f"under sha256 {digest}.")
            if not self.store.learns:
                raise PersistedQueryError(NOT_SUPPORTED, NOT_SUPPORTED_MESSAGE)
            raise PersistedQueryError(NOT_FOUND, NOT_FOUND_MESSAGE)
        actual = sha256_hex(query)
        if actual != digest:
            raise PersistedQueryError(HASH_MISMATCH, "extensions.persistedQuery.sha256Hash is not the SHA-256 of the "
                                                     f"query text as sent: that is {actual}, the request says {digest}.")
        if self.persisted_only:
            if digest not in self.store.registered:
                raise PersistedQueryError(NOT_ALLOWED, "This server runs registered operations only "
                                                       "(KERNELINDEX_PERSISTED_ONLY): this document is not one of them.")
            return Resolved(request)
        return Resolved(request, store_as=None if digest in self.store.registered else digest)

    def ran(self, resolved: Resolved, result: ExecutionResult) -> None:
        """Store a document sent with its hash once it has run: a document that did not parse or
        validate (no data) is not kept, so the store holds only operations of this schema."""
        if resolved.store_as is not None and resolved.request.query is not None and result.data is not None:
            self.store.put(resolved.store_as, resolved.request.query)


# -- registered documents, from files ----------------------------------------------------------------

Validate = Callable[[DocumentNode], Sequence[GraphQLError]]


def _line_of(text: str, needle: str) -> int:
    """The line where `needle` first appears in `text` (1 when it does not): for errors in JSON files,
    whose decoder keeps no positions."""
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _check_document(document: str, where: str, validate: Validate | None) -> None:
    """Parse (and validate) one registered document; `where` is 'file' or 'file: key', and an
    error's own line and column (within the document) follow it."""
    try:
        node = parse(document)
    except GraphQLSyntaxError as exc:
        line, column = (exc.locations[0].line, exc.locations[0].column) if exc.locations else (1, 1)
        raise PersistedQueryFileError(f"{where}: line {line} column {column}: not GraphQL: {exc.message}") from None
    errors = validate(node) if validate is not None else ()
    if errors:
        first = errors[0]
        at = f"line {first.locations[0].line} column {first.locations[0].column}: " if first.locations else ""
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise PersistedQueryFileError(f"{where}: {at}does not fit the schema: {first.message}{more}")


def _documents_of_json(path: Path, text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PersistedQueryFileError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    pairs: list[tuple[str, str, Any, Any]] = []  # (key for the error, needle for its line, hash, document)
    if isinstance(data, dict) and data.get("format") == APOLLO_MANIFEST_FORMAT:
        version_line, operations_line = _line_of(text, '"version"'), _line_of(text, '"operations"')
        if data.get("version") != 1:
            raise PersistedQueryFileError(f"{path}:{version_line}: version: an {APOLLO_MANIFEST_FORMAT} of version 1 "
                                          "is expected")
        operations = data.get("operations")
        if not isinstance(operations, list):
            raise PersistedQueryFileError(f"{path}:{operations_line}: operations: a list is expected")
        for i, operation in enumerate(operations):
            if not isinstance(operation, dict):
                raise PersistedQueryFileError(f"{path}:{operations_line}: operations[{i}]: an object "
                                              "{id, body, name, type} is expected")
            digest = operation.get("id")
            pairs.append((f"operations[{i}].id", json.dumps(digest), digest, operation.get("body")))
    elif isinstance(data, dict):
        pairs = [(key, json.dumps(key), key, body) for key, body in data.items()]
    else:
        raise PersistedQueryFileError(f"{path}:1: an {APOLLO_MANIFEST_FORMAT} or an object of "
                                      "{\"<sha256>\": \"<document>\"} is expected")
    documents: dict[str, str] = {}
    for key, needle, digest, body in pairs:
        line = _line_of(text, needle)
        if not isinstance(body, str) or not body.strip():
            raise PersistedQueryFileError(f"{path}:{line}: {key}: its document must be non-empty GraphQL text")
        if not isinstance(digest, str) or not _SHA256_HEX.fullmatch(digest):
            raise PersistedQueryFileError(f"{path}:{line}: {key}: {json.dumps(digest)[:80]} is not a SHA-256 "
                                          "(64 hexadecimal digits)")
        actual = sha256_hex(body)
        if digest.lower() != actual:
            raise PersistedQueryFileError(f"{path}:{line}: {key}: {digest} is not the SHA-256 of its document "
                                          f"(that is {actual}); APQ names a document by the SHA-256 of its text")
        documents[actual] = body
    return documents


def document_files(paths: Iterable[Path]) -> list[Path]:
    """The files the paths name: a folder stands for its .graphql, .gql and .json files (recursively,
    in name order)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*")
                                if p.is_file() and p.suffix.lower() in (*DOCUMENT_SUFFIXES, MANIFEST_SUFFIX)))
        elif path.is_file():
            files.append(path)
        else:
            raise PersistedQueryFileError(f"{path}: no such file or folder (KERNELINDEX_PERSISTED_QUERY_FILES)")
    return files


def load_documents(paths: Iterable[Path], validate: Validate | None = None) -> dict[str, str]:
    """Every registered document by its SHA-256, checked (PersistedQueryFileError naming file, line
    and key otherwise)."""
    documents: dict[str, str] = {}
    for path in document_files(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise PersistedQueryFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise PersistedQueryFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        if path.suffix.lower() == MANIFEST_SUFFIX:
            found = _documents_of_json(path, text)
            for digest, body in found.items():
                _check_document(body, f"{path}:{_line_of(text, digest)}: {digest[:12]}…", validate)
        elif path.suffix.lower() in DOCUMENT_SUFFIXES:
            if not text.strip():
                raise PersistedQueryFileError(f"{path}:1: an empty document")
            _check_document(text, str(path), validate)
            found = {sha256_hex(text): text}
        else:
            raise PersistedQueryFileError(f"{path}: not a file of operations (.graphql, .gql, or a .json manifest)")
        documents.update(found)
    return documents


def persisted_queries(settings: Settings, validate: Validate | None = None) -> PersistedQueries:
    """The process's persisted queries from its settings: the registered documents read and checked
    now, so that a bad file stops the server at start-up."""
    files = [Path(p) for p in settings.persisted_query_files]
    if settings.persisted_only and not files:
        raise PersistedQueryFileError("KERNELINDEX_PERSISTED_ONLY=true needs KERNELINDEX_PERSISTED_QUERY_FILES "
                                      "(a JSON list of files or folders of operations): with none registered, every "
                                      "request would be refused")
    registered = load_documents(files, validate)
    if settings.persisted_only and not registered:
        raise PersistedQueryFileError(f"KERNELINDEX_PERSISTED_QUERY_FILES names no operations ({', '.join(map(str, files))})")
    store = DocumentStore(registered, settings.persisted_query_entries, settings.persisted_query_bytes)
    return PersistedQueries(store, persisted_only=settings.persisted_only)


# -- GET answers: ETag and Cache-Control, except where the view said no-store -------------------------

class CacheableGetMiddleware(ConditionalGetMiddleware):
    """kernelindex.web.http.ConditionalGetMiddleware (ETag, `Cache-Control: public, max-age`, 304 for
    a matching If-None-Match on a 200 GET answer), except for an answer its route marked
    `Cache-Control: no-store` (a GraphQL answer with errors, or one that read a fleet job): that one
    goes out as it is, with no validator, so neither a CDN nor a browser keeps it."""

    async def _finish(self, scope: Scope, start: Message, body: bytes, send: Send) -> None:
        headers = MutableHeaders(scope=start)
        if NO_STORE in headers.get("cache-control", ""):
            headers["content-length"] = str(len(body))
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        await super()._finish(scope, start, body, send)
