"""Depth and alias limits that cost time linear in the size of the document.

strawberry's QueryDepthLimiter and MaxAliasesLimiter walk a fragment again at every spread of it.
Fragments that each spread the one before twice (F1 { ...F0 ...F0 }, F2 { ...F1 ...F1 }, …) make
that walk exponential: 18 such lines, a 700-byte query well inside the token limit, took a second
of the event loop's time, 30 would take an hour. Here each fragment is measured once and its figure
reused at every spread: the depth is the deepest path through it, the alias count is summed with
multiplicity (a fragment spread twice counts twice), exactly as strawberry counts them.

Their errors carry QUERY_TOO_COMPLEX, not GRAPHQL_VALIDATION_FAILED: the document fits the schema
and is refused for a limit of this server (a setting), so the client's remedy is to ask for less in
one request (split it, fewer aliases), not to correct it; it is the family of QUERY_TOO_COSTLY.
Both are validation as the GraphQL-over-HTTP spec counts it (400 for its media type).
"""

from __future__ import annotations

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    ValidationContext,
    ValidationRule,
)

from kernelindex.graphql.errors import QUERY_TOO_COMPLEX

_SHOWN_LIMIT = 10**9


class _Measure:
    """Depth and alias count of selection sets, each fragment measured once (memoised by name)."""

    def __init__(self, document: DocumentNode) -> None:
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.memo: dict[str, tuple[int, int]] = {}
        self.in_progress: set[str] = set()

    def of(self, owner) -> tuple[int, int]:
        """(depth, aliases) of the selections under `owner`; fields without selections add no depth,
        introspection fields (`__schema`, `__type`, …) are not counted, as in strawberry."""
        depth = aliases = 0
        selection_set = getattr(owner, "selection_set", None)
        for selection in selection_set.selections if selection_set else ():
            if isinstance(selection, FieldNode):
                if selection.alias:
                    aliases += 1
                if selection.selection_set is not None:
                    inner_depth, inner_aliases = self.of(selection)
                    aliases += inner_aliases
                    if not selection.name.value.startswith("__"):
                        depth = max(depth, 1 + inner_depth)
            elif isinstance(selection, InlineFragmentNode):
                inner_depth, inner_aliases = self.of(selection)
                depth, aliases = max(depth, inner_depth), aliases + inner_aliases
            elif isinstance(selection, FragmentSpreadNode):
                inner_depth, inner_aliases = self.fragment(selection.name.value)
                depth, aliases = max(depth, inner_depth), aliases + inner_aliases
        return depth, aliases

    def fragment(self, name: str) -> tuple[int, int]:
        if name in self.memo:
            return self.memo[name]
        fragment = self.fragments.get(name)
        if fragment is None or name in self.in_progress:
            return 0, 0  # unknown fragments and cycles are reported by the standard rules
        self.in_progress.add(name)
        try:
            self.memo[name] = self.of(fragment)
        finally:
            self.in_progress.discard(name)
        return self.memo[name]


def _operations(document) -> list[tuple[str, OperationDefinitionNode]]:
    return [
        (d.name.value if d.name else "anonymous", d) for d in document.definitions if isinstance(d, OperationDefinitionNode)
    ]


def depth_limit_rule(max_depth: int) -> type[ValidationRule]:
    class DepthLimit(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            measure = _Measure(context.document)
            for name, operation in _operations(context.document):
                depth, _ = measure.of(operation)
                if depth > max_depth:
                    context.report_error(
                        GraphQLError(f"'{name}' exceeds maximum operation depth of {max_depth}", [operation],
                                     extensions={"code": QUERY_TOO_COMPLEX, "limit": {"depth": max_depth}})
                    )

    return DepthLimit


def alias_limit_rule(max_aliases: int) -> type[ValidationRule]:
    class AliasLimit(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            measure = _Measure(context.document)
            total = sum(measure.of(operation)[1] for _, operation in _operations(context.document))
            if total > max_aliases:
                shown = f"{total}" if total < _SHOWN_LIMIT else f"more than {_SHOWN_LIMIT}"
                context.report_error(GraphQLError(f"{shown} aliases found. Allowed: {max_aliases}",
                                                  extensions={"code": QUERY_TOO_COMPLEX, "limit": {"aliases": max_aliases}}))

    return AliasLimit
