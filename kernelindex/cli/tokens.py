"""`kernelindex token create|list|revoke`: API tokens for writes.

`create` prints the token once, on stdout (a note on stderr says it will not be shown again): only
its sha256 is stored.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC

from kernelindex.cli.common import CommandError, database_url, say, write_stdout
from kernelindex.db.engine import in_own_transaction
from kernelindex.services import tokens as auth


def _when(value) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if value is not None else "-"


def cmd_token_create(args: argparse.Namespace) -> int:
    try:
        scopes = auth.normalise_scopes(args.scope or [])
    except auth.UnknownScopeError as exc:
        raise CommandError(str(exc)) from exc
    url = database_url()

    async def work(session):
        try:
            row, token = await auth.create_token(session, scopes=scopes, name=args.name or "")
        except (auth.UnknownScopeError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        return row.id, row.display_prefix, token

    token_id, prefix, token = asyncio.run(in_own_transaction(url, work))
    # The transaction has committed: only now show the token.
    try:
        write_stdout(token + "\n")
    except CommandError as exc:
        raise CommandError(f"{exc}: token {token_id} was created but cannot be shown; revoke it "
                           f"(`kernelindex token revoke {token_id}`) and create another") from exc
    say(
        f"created token {token_id} ({prefix}…) with scopes {', '.join(scopes)}. "
        "Copy it now: it will not be shown again (only its hash is stored)."
    )
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    url = database_url()
    rows = asyncio.run(in_own_transaction(url, auth.list_tokens))
    header = ("id", "name", "prefix", "scopes", "created", "revoked", "last used")
    table = [header] + [
        (
            str(r.id),
            r.name or "-",
            r.display_prefix + "…",
            ",".join(r.scopes or []),
            _when(r.created_at),
            _when(r.revoked_at),
            _when(r.last_used_at),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    write_stdout("".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n" for row in table))
    if not rows:
        say("no tokens yet: create one with `kernelindex token create --scope runs:write`")
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    url = database_url()

    async def work(session):
        row, revoked = await auth.revoke_token(session, args.id)
        if row is None:
            raise CommandError(f"no token with id {args.id}")
        return row.display_prefix, revoked, row.revoked_at

    prefix, revoked, revoked_at = asyncio.run(in_own_transaction(url, work))
    if revoked:
        say(f"revoked token {args.id} ({prefix}…): it no longer authenticates")
    else:
        say(f"token {args.id} ({prefix}…) was already revoked at {_when(revoked_at)}")
    return 0
