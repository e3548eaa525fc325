"""GraphiQL, served by KernelIndex itself: the page on GET /graphql (a browser's Accept), its scripts and
stylesheet under /graphiql/, and the step that puts them there.

Nothing comes from a CDN, so the page works offline and under a Content-Security-Policy that allows this
server only. The third-party files are GraphiQL's and React's own UMD builds, exactly as published on the
npm registry: the versions are pinned in tooling/package.json and its lockfile (npm checks every
tarball's sha512 from the lockfile), `make graphiql` installs them with `npm ci` and then runs
`python -m kernelindex.web.graphiql vendor tooling/node_modules`, which copies them into
static/graphiql/vendor/ (git-ignored; a wheel built afterwards carries it) with a manifest of versions,
sizes and sha384 digests. The page names each file by its digest (immutable URLs, cached for a year) and
with Subresource Integrity, and the server checks every file against the manifest before serving it.

Without the vendored files the API works as ever and the page says how to install them (503), rather
than the blank "Loading…" of a page whose CDN cannot be reached.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import html
import json
import logging
import os
import string
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

log = logging.getLogger("kernelindex.web")

STATIC_DIR = Path(__file__).resolve().parent / "static" / "graphiql"
VENDOR_DIR = STATIC_DIR / "vendor"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "kernelindex.graphiql-assets/1"
PAGE_TEMPLATE = STATIC_DIR / "index.html"
BOOT_SCRIPT = STATIC_DIR / "boot.js"
EXAMPLE_QUERY = STATIC_DIR / "workload-page.graphql"
# The saved example's variables: the reference page every seeded install has (seeds/, the README).
EXAMPLE_VARIABLES = {"slug": "kernelbench-l3-p9-resnet18"}

ASSETS_PREFIX = "/graphiql/"
INSTALL_HINT = "run `make graphiql` (npm ci in tooling/, then python -m kernelindex.web.graphiql vendor tooling/node_modules)"

# A year: an asset's URL carries its digest, so a URL never names other bytes.
IMMUTABLE = "public, max-age=31536000, immutable"
# This server only; inline styles because GraphiQL's React components set style attributes, data: fonts
# and images because its stylesheet embeds them.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self' data:; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@dataclass(frozen=True)
class VendoredFile:
    """A file of an npm package that the page loads, by the name it is served under."""

    name: str
    package: str
    path: str  # inside the package
    kind: str  # "script" or "stylesheet"


# In loading order: GraphiQL's UMD bundle expects React and ReactDOM as globals.
VENDORED = (
    VendoredFile("react.production.min.js", "react", "umd/react.production.min.js", "script"),
    VendoredFile("react-dom.production.min.js", "react-dom", "umd/react-dom.production.min.js", "script"),
    VendoredFile("graphiql.min.css", "graphiql", "graphiql.min.css", "stylesheet"),
    VendoredFile("graphiql.min.js", "graphiql", "graphiql.min.js", "script"),
)
MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class AssetsMissing(Exception):
    """The vendored files are not there, or not the ones the manifest names: the message says which and what to run."""


def sha384_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha384(data).digest()).decode()


@dataclass(frozen=True)
class Asset:
    name: str
    kind: str
    sha384: str  # base64, as Subresource Integrity writes it
    source: Path
    package: str = ""  # "" for our own boot script
    version: str = ""
    gzip_sha384: str = ""  # of the copy compressed at set-up (source + ".gz"); "": compressed when first served

    @property
    def url(self) -> str:
        # The digest in the path, not the query: every cache keys on the path.
        return f"{ASSETS_PREFIX}{base64.b64decode(self.sha384)[:8].hex()}/{self.name}"


def read_manifest(vendor_dir: Path = VENDOR_DIR) -> list[Asset]:
    """The vendored assets the manifest lists, or AssetsMissing naming the file and what to run."""
    path = vendor_dir / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AssetsMissing(f"GraphiQL's assets are not installed ({path} is missing): {INSTALL_HINT}") from None
    except (OSError, ValueError) as exc:
        raise AssetsMissing(f"{path}: unreadable ({exc}): {INSTALL_HINT}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise AssetsMissing(f"{path}: not a {MANIFEST_FORMAT} manifest: {INSTALL_HINT}")
    listed = {entry.get("name"): entry for entry in manifest.get("assets", []) if isinstance(entry, dict)}
    assets = []
    for wanted in VENDORED:
        entry = listed.get(wanted.name)
        if entry is None or not isinstance(entry.get("sha384"), str) or not isinstance(entry.get("gzip_sha384"), str):
            raise AssetsMissing(f"{path}: no entry for {wanted.name} (made by an older KernelIndex?): {INSTALL_HINT}")
        assets.append(Asset(wanted.name, wanted.kind, entry["sha384"], vendor_dir / wanted.name,
                            wanted.package, str(entry.get("version", "")), entry["gzip_sha384"]))
    return assets


def boot_asset() -> Asset:
    return Asset(BOOT_SCRIPT.name, "script", sha384_b64(BOOT_SCRIPT.read_bytes()), BOOT_SCRIPT)


def render_page(assets: Sequence[Asset], endpoint: str) -> str:
    """The page: the vendored stylesheet and scripts, then ours, and the saved example as JSON data
    (`<` escaped, so that no query text can close the script element)."""
    config = json.dumps({
        "endpoint": endpoint,
        "query": EXAMPLE_QUERY.read_text(encoding="utf-8"),
        "variables": json.dumps(EXAMPLE_VARIABLES, indent=2),
    }).replace("<", "\\u003c")

    def tag(asset: Asset) -> str:
        url, integrity = html.escape(asset.url), html.escape(f"sha384-{asset.sha384}")
        if asset.kind == "stylesheet":
            return f'    <link rel="stylesheet" href="{url}" integrity="{integrity}">'
        return f'    <script src="{url}" integrity="{integrity}"></script>'

    return string.Template(PAGE_TEMPLATE.read_text(encoding="utf-8")).substitute(
        stylesheets="\n".join(tag(a) for a in assets if a.kind == "stylesheet"),
        scripts="\n".join(tag(a) for a in assets if a.kind == "script"),
        config=config,
    )


def missing_page(reason: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>KernelIndex · GraphiQL not installed</title>'
        '</head>\n<body><h1>GraphiQL is not installed on this server</h1>\n'
        f"<p>{html.escape(reason)}</p>\n"
        "<p>The API itself works: POST a query to <code>/graphql</code>, or GET <code>/graphql?query=…</code>.</p>"
        "\n</body></html>\n"
    )


@dataclass(frozen=True)
class _Body:
    plain: bytes
    gzipped: bytes
    media_type: str


class GraphiQLPage:
    """The page and its assets for one app. Files are read when first asked for, not when the app is
    made (tests make many apps), and kept: a few MB per process."""

    def __init__(self, endpoint: str = "/graphql", vendor_dir: Path = VENDOR_DIR, *, show_reasons: bool = True):
        self.endpoint = endpoint
        self.vendor_dir = vendor_dir
        # In production a refusal names no file of the server's (the log does).
        self.show_reasons = show_reasons
        self._assets: dict[str, Asset] | None = None
        self._page: str | None = None
        self._bodies: dict[str, _Body] = {}

    def status(self) -> str | None:
        """None when the page can be served; otherwise why not, and what to run."""
        try:
            read_manifest(self.vendor_dir)
        except AssetsMissing as exc:
            return str(exc)
        return None

    def _load(self) -> tuple[dict[str, Asset], str]:
        if self._assets is None or self._page is None:
            assets = [*read_manifest(self.vendor_dir), boot_asset()]
            self._page = render_page(assets, self.endpoint)
            self._assets = {a.url: a for a in assets}
        return self._assets, self._page

    async def page(self, request: Request) -> Response:
        try:
            _, page = self._load()
        except AssetsMissing as exc:
            log.warning("%s", exc)
            return HTMLResponse(missing_page(self._reason(exc)), status_code=503, headers={"cache-control": "no-store"})
        return HTMLResponse(page, headers={"content-security-policy": CONTENT_SECURITY_POLICY,
                                           "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"})

    async def asset(self, request: Request) -> Response:
        try:
            assets, _ = self._load()
        except AssetsMissing as exc:
            return PlainTextResponse(self._reason(exc), status_code=503, headers={"cache-control": "no-store"})
        asset = assets.get(request.url.path)
        if asset is None:
            return PlainTextResponse(f"no GraphiQL asset at {request.url.path}", status_code=404)
        body = self._bodies.get(asset.url)
        if body is None:
            try:
                body = await run_in_threadpool(_read_checked, asset)
            except AssetsMissing as exc:
                log.error("%s", exc)
                return PlainTextResponse(self._reason(exc), status_code=503, headers={"cache-control": "no-store"})
            self._bodies[asset.url] = body
        headers = {"cache-control": IMMUTABLE, "vary": "Accept-Encoding", "x-content-type-options": "nosniff"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["content-encoding"] = "gzip"
            return Response(body.gzipped, media_type=body.media_type, headers=headers)
        return Response(body.plain, media_type=body.media_type, headers=headers)

    def _reason(self, exc: AssetsMissing) -> str:
        return str(exc) if self.show_reasons else "GraphiQL's assets are missing or damaged on this server (its log says which)."

    def routes(self) -> list[Route]:
        return [Route(ASSETS_PREFIX + "{digest}/{name}", self.asset, methods=["GET"])]


def _read_checked(asset: Asset) -> _Body:
    """An asset's bytes and their gzip, each checked against the manifest's digest: a partial copy or an
    edited file is refused, not served for the browser's integrity check to reject in silence. The
    vendored files were compressed at set-up (gzip -9 of GraphiQL's 3.5 MB bundle takes a second);
    our own small boot script is compressed here."""
    zipped_path = asset.source.with_name(asset.source.name + ".gz")
    try:
        data = asset.source.read_bytes()
        zipped = zipped_path.read_bytes() if asset.gzip_sha384 else gzip.compress(data, mtime=0)
    except OSError as exc:
        raise AssetsMissing(f"{exc.filename or asset.source}: {exc.strerror or exc}: {INSTALL_HINT}") from None
    for path, content, digest in ((asset.source, data, asset.sha384), (zipped_path, zipped, asset.gzip_sha384)):
        if digest and sha384_b64(content) != digest:
            raise AssetsMissing(f"{path}: not the file {MANIFEST_NAME} lists (sha384 differs): {INSTALL_HINT}")
    return _Body(data, zipped, MEDIA_TYPES[asset.source.suffix])


# -- set-up: copying the npm packages' files in ----------------------------------------------------

def vendor(node_modules: Path, vendor_dir: Path = VENDOR_DIR) -> list[dict[str, str | int]]:
    """Copy the files the page loads out of an `npm ci` tree into vendor_dir, with their manifest.

    The manifest is written last, by rename: a copy cut short leaves no manifest, and the server says
    the assets are missing instead of serving half of them."""
    entries: list[dict[str, str | int]] = []
    files: list[tuple[str, bytes]] = []
    for wanted in VENDORED:
        package_dir = node_modules / wanted.package
        source = package_dir / wanted.path
        try:
            meta = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
            data = source.read_bytes()
        except (OSError, ValueError) as exc:
            raise AssetsMissing(f"{source}: cannot read ({exc}); run `npm ci` in {node_modules.parent} first") from None
        zipped = gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: the same bytes every time
        files += [(wanted.name, data), (wanted.name + ".gz", zipped)]
        entries.append({"name": wanted.name, "package": wanted.package, "version": str(meta.get("version", "")),
                        "path": wanted.path, "bytes": len(data), "sha384": sha384_b64(data),
                        "gzip_bytes": len(zipped), "gzip_sha384": sha384_b64(zipped)})
    vendor_dir.mkdir(parents=True, exist_ok=True)
    (vendor_dir / MANIFEST_NAME).unlink(missing_ok=True)
    for name, data in files:
        _write_atomically(vendor_dir / name, data)
    manifest = {"format": MANIFEST_FORMAT, "assets": entries}
    _write_atomically(vendor_dir / MANIFEST_NAME, (json.dumps(manifest, indent=2) + "\n").encode())
    return entries


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would follow the files into a wheel
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelindex.web.graphiql",
        description="Copy GraphiQL's and React's files from an `npm ci` of tooling/ into the package.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    copy = sub.add_parser("vendor", help="copy the files and write their manifest",
                          formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    copy.add_argument("node_modules", type=Path, help="the node_modules folder `npm ci` made in tooling/")
    copy.add_argument("--dest", type=Path, default=VENDOR_DIR, help="where the server reads them")
    sub.add_parser("check", help="exit 1, saying why, unless the server can serve GraphiQL")
    args = parser.parse_args(argv)
    if args.command == "check":
        problem = GraphiQLPage().status()
        print(problem or f"GraphiQL's assets are installed in {VENDOR_DIR}", file=sys.stderr)
        return 1 if problem else 0
    try:
        entries = vendor(args.node_modules, args.dest)
    except AssetsMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    total = sum(int(e["bytes"]) for e in entries)
    print(f"GraphiQL assets in {args.dest}: " + ", ".join(f"{e['package']} {e['version']} {e['name']}" for e in entries)
          + f" ({total:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
