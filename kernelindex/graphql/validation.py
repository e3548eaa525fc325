"""Document validation: cached, and in production without schema suggestions.

graphql-core's rules suggest names from the schema in their messages ("Cannot query field
'referenceSourc' on type 'Workload'. Did you mean 'referenceSource'?"): with introspection off in
production, that would still let a client map the schema by guessing. graphql-core omits them with
`hide_suggestions`, which strawberry's validation does not pass; this extension validates in its
place (strawberry skips its own once an extension has), with the same two rules strawberry adds,
and caches the result like strawberry's ValidationCache (keyed by schema, document and rules).
Values coerced during execution (a variable's enum value) can still carry a suggestion: ErrorPolicy
removes those in production.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from graphql import DocumentNode, GraphQLError, GraphQLSchema, validate
from graphql.validation import ASTValidationRule
from strawberry.extensions import SchemaExtension
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

CACHE_SIZE = 512


@lru_cache(maxsize=CACHE_SIZE)
def _validate(
    schema: GraphQLSchema, document: DocumentNode, rules: tuple[type[ASTValidationRule], ...], hide_suggestions: bool
) -> list[GraphQLError]:
    return validate(
        schema, document, (*rules, MaybeNullValidationRule, OneOfInputValidationRule), hide_suggestions=hide_suggestions
    )


class Validation(SchemaExtension):
    def __init__(self, hide_suggestions: bool) -> None:
        super().__init__()
        self.hide_suggestions = hide_suggestions

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        if ctx.graphql_document is not None and ctx.validation_rules:
            ctx.pre_execution_errors = _validate(
                ctx.schema._schema, ctx.graphql_document, tuple(ctx.validation_rules), self.hide_suggestions
            )
        yield
