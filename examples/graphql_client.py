"""The examples' one way to ask the KernelIndex API: a POST to /graphql, and paging through a connection.

Standard library only, so the CSV example needs nothing installed. The examples import it from their own
folder (run them as `python examples/<name>.py`: Python puts the script's folder on sys.path).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any


def graphql(api: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    """The `data` of one query; exits with the API's first error message when there is one."""
    request = urllib.request.Request(
        f"{api}/graphql", data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            body = json.load(response)
    except urllib.error.HTTPError as error:
        # A refused query (bad filter value, too costly, ...) comes back as a 4xx whose body still names the
        # error: show that rather than urllib's bare "HTTP Error 400".
        try:
            body = json.load(error)
        except ValueError:
            raise SystemExit(f"API error: HTTP {error.code} from {api}/graphql") from None
    if body.get("errors"):
        raise SystemExit(f"API error: {body['errors'][0]['message']}")
    return body["data"]


def nodes(api: str, query: str, variables: dict[str, Any], connection: str) -> Iterator[dict[str, Any]]:
    """Every node of the top-level connection `connection`, page after page.

    The query must take `$after: String`, pass it to that connection and select
    `pageInfo { hasNextPage endCursor }` and `nodes`.
    """
    after = None
    while True:
        page = graphql(api, query, {**variables, "after": after})[connection]
        yield from page["nodes"]
        if not page["pageInfo"]["hasNextPage"]:
            return
        after = page["pageInfo"]["endCursor"]
