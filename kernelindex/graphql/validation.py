"""Document validation: cached, bounded, every error with its code, and in production without schema
suggestions.

graphql-core's rules suggest names from the schema in their messages ("Cannot query field
'referenceSourc' on type 'Workload'. Did you mean 'referenceSource'?"): with introspection off in
production, that would still let a client map the schema by guessing. graphql-core omits them with
`hide_suggestions`, which strawberry's validation does not pass; this extension validates in its
place (strawberry skips its own once an extension has), with the same two rules strawberry adds,
and caches the result like strawberry's ValidationCache (keyed by schema, document and rules).
Values coerced during execution (a variable's enum value) can still carry a suggestion: ErrorPolicy
removes those in production.

Bounds. Errors are listed up to MAX_VALIDATION_ERRORS, then one more says validation stopped there:
counting the rest would cost the time the limit is there to save (each error costs about 0.4 ms, and
the token limit allows documents with 2,000 of them). graphql-core's check that fields of one name
can be merged compares them pairwise under a budget of its own (500,000 units, about a second and
a half for 600 repeats of one field); when it ran out, graphql-core aborted the whole validation
with nothing but "Validation aborted." (a document of 900 repeats of an unknown field said only
that). Here the budget is FIELD_MERGE_BUDGET (no query of ours spends any: only fields repeated
under one response name are compared), and running out of it is one QUERY_TOO_COMPLEX error while
every other rule goes on reporting.

One operation. With no operationName, GraphQL's GetOperation takes the document's operation only if
it holds exactly one, and otherwise is a request error; strawberry runs the first one instead.
OneOperation refuses such a document the way an operationName that names none is refused (HTTP 400,
BAD_REQUEST), before anything is validated or run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import DocumentNode, GraphQLError, GraphQLSchema, OperationDefinitionNode, validate
from graphql.validation import ASTValidationRule, OverlappingFieldsCanBeMergedRule, ValidationContext
from graphql.validation.validate import ValidationAbortedError
from strawberry.extensions import SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

from kernelindex.graphql.errors import QUERY_TOO_COMPLEX, VALIDATION_FAILED, with_code
from kernelindex.graphql.identity import kept_by_identity

CACHE_SIZE = 512
MAX_VALIDATION_ERRORS = 100
# Units of graphql-core's merge check (a comparison of two fields costs 2): about 10,000 comparisons,
# tens of milliseconds.
FIELD_MERGE_BUDGET = 20_000
# graphql-core's message when it reaches max_errors (the other aborts say only "Validation aborted.").
_ERROR_LIMIT_MESSAGE = "Too many validation errors"


def too_many_errors_error(limit: int) -> GraphQLError:
    return GraphQLError(
        f"Validation stopped after {limit} errors; the document has more. Fix these and send it again.",
        extensions={"code": VALIDATION_FAILED, "validation": {"listed": limit, "complete": False}},
    )


def too_complex_to_validate_error(what: str) -> GraphQLError:
    return GraphQLError(f"The document is too complex to validate: {what}. Ask for less in one request.",
                        extensions={"code": QUERY_TOO_COMPLEX})


class BoundedFieldMerging(OverlappingFieldsCanBeMergedRule):
    """graphql-core's rule that fields of one response name can be merged, under FIELD_MERGE_BUDGET;
    out of budget it reports once and stops checking, instead of aborting every rule."""

    def __init__(self, context: ValidationContext) -> None:
        super().__init__(context)
        self.rule_context.remaining_complexity_budget = FIELD_MERGE_BUDGET
        self.exhausted = False

    def enter_selection_set(self, *args: Any) -> None:
        if self.exhausted:
            return
        try:
            super().enter_selection_set(*args)
        except ValidationAbortedError:
            if self.rule_context.remaining_complexity_budget >= 0:
                raise  # not the budget: the error limit, reached while this rule reported
            self.exhausted = True
            self.report_error(too_complex_to_validate_error(
                "too many fields of the same name to check that they can be merged"))


def _coded(error: GraphQLError) -> GraphQLError:
    if isinstance(error, ValidationAbortedError):
        if error.message.startswith(_ERROR_LIMIT_MESSAGE):
            return too_many_errors_error(MAX_VALIDATION_ERRORS)
        # graphql-core's other aborts: fragments nested past the interpreter's recursion limit, or
        # shared by the operations more than its fragment budget allows.
        return too_complex_to_validate_error("its fragments nest or are shared too much")
    return with_code(error, VALIDATION_FAILED)


def _validate(
    schema: GraphQLSchema, document: DocumentNode, rules: tuple[type[ASTValidationRule], ...], hide_suggestions: bool
) -> list[GraphQLError]:
    return _validate_kept(document, schema, rules, hide_suggestions)


# Kept by the document's identity (kernelindex.graphql.identity): graphql-core hashes a DocumentNode by
# walking every node of it (a page's query: some 600 of them, each request). The parser cache
# (ParserCache) gives the same object for the same query text, so a query seen before is found; a
# document parsed anew is validated anew.
@kept_by_identity(CACHE_SIZE)
def _validate_kept(
    document: DocumentNode, schema: GraphQLSchema, rules: tuple[type[ASTValidationRule], ...], hide_suggestions: bool
) -> list[GraphQLError]:
    bounded = tuple(BoundedFieldMerging if rule is OverlappingFieldsCanBeMergedRule else rule for rule in rules)
    errors = validate(
        schema, document, (*bounded, MaybeNullValidationRule, OneOfInputValidationRule),
        max_errors=MAX_VALIDATION_ERRORS, hide_suggestions=hide_suggestions,
    )
    return [_coded(error) for error in errors]


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


class SeveralOperationsError(CannotGetOperationTypeError):
    """A document of several operations sent without operationName: strawberry's views answer it as
    they answer an unknown operation name, with HTTP 400 and this reason."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(None)
        self.names = names

    def as_http_error_reason(self) -> str:
        shown = ", ".join(self.names[:5]) + (", …" if len(self.names) > 5 else "")
        return (f"the document holds {len(self.names)} operations ({shown}): name the one to run in operationName "
                "(GraphQL runs an unnamed request only when its document has one operation)")


class OneOperation(SchemaExtension):
    def on_parse(self) -> Iterator[None]:
        yield
        ctx = self.execution_context
        document = ctx.graphql_document
        # strawberry keeps the request's operationName only here; ctx.operation_name falls back to the
        # first operation's name, which is the choice the specification does not allow.
        if document is None or ctx._provided_operation_name is not None:
            return
        names = [d.name.value if d.name else "an anonymous one" for d in document.definitions
                 if isinstance(d, OperationDefinitionNode)]
        if len(names) > 1:
            raise SeveralOperationsError(names)
