"""The schema speaks one typed language (issue 18): checked on the built schema, so that a field
added tomorrow is held to the same conventions as today's.

- every enum value and every argument has a description;
- every object with an `id: ID!` implements Node (and `node(id:)` can refetch it: tests/api/test_node.py);
- every connection pages both ways (first/after and last/before);
- no String field documents a fixed set of quoted alternatives: a fixed set is an enum. Display
  text for people may name its alternatives only where an enum field beside it carries the same fact.
"""

from __future__ import annotations

import re

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    get_named_type,
)

from kernelindex.graphql.schema import build_schema
from kernelindex.settings import Settings

# Words for people, next to the enum field that carries the same fact for programs.
DISPLAY_TEXT_WITH_ENUM = {
    "Headline.label": "kind",
    "Implementation.availabilityDetail": "sourceAvailability",
    "Run.reviewStatus": "reviewState",
    "Run.figureDisplay": "figureUnit",
    "EnvironmentRecord.figureDisplay": "figureUnit",
    "ReviewRunResult.reviewStatus": "reviewState",
}
# A description listing alternatives: 'a' or 'b', 'a', 'b' or 'c', or 'a', 'b', 'c'.
QUOTED = r"'[^']{1,40}'"
ALTERNATIVES = re.compile(rf"{QUOTED}(,\s*{QUOTED})*,?\s+or\s+{QUOTED}|{QUOTED}(,\s*{QUOTED}){{2,}}")


def _schema() -> GraphQLSchema:
    return build_schema(Settings())._schema


def _own_types(schema: GraphQLSchema):
    return [t for name, t in sorted(schema.type_map.items()) if not name.startswith("__")]


def _is_string(field: GraphQLField) -> bool:
    named = get_named_type(field.type)
    return isinstance(named, GraphQLScalarType) and named.name == "String"


def _is_connection(field: GraphQLField) -> bool:
    inner = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    return isinstance(inner, GraphQLObjectType) and inner.name.endswith("Connection")


def test_every_enum_value_has_a_description():
    missing = [
        f"{t.name}.{name}" for t in _own_types(_schema()) if isinstance(t, GraphQLEnumType)
        for name, value in t.values.items() if not (value.description or "").strip()
    ]
    assert missing == [], f"enum values without a description: {missing}"


def test_every_argument_has_a_description():
    schema = _schema()
    missing = [
        f"{t.name}.{field_name}({arg_name}:)"
        for t in _own_types(schema) if isinstance(t, (GraphQLObjectType, GraphQLInterfaceType))
        for field_name, field in t.fields.items()
        for arg_name, arg in field.args.items() if not (arg.description or "").strip()
    ]
    assert missing == [], f"arguments without a description: {missing}"


def test_every_object_with_an_id_implements_node():
    schema = _schema()
    node = schema.get_type("Node")
    offenders = []
    for t in _own_types(schema):
        if not isinstance(t, GraphQLObjectType):
            continue
        id_field = t.fields.get("id")
        has_id = id_field is not None and str(id_field.type) == "ID!"
        if (has_id or "databaseId" in t.fields) and node not in t.interfaces:
            offenders.append(t.name)
    assert offenders == [], f"objects with an id (or a databaseId) that do not implement Node: {offenders}"


def test_every_connection_pages_both_ways():
    schema = _schema()
    offenders = []
    connections = 0
    for t in _own_types(schema):
        if not isinstance(t, (GraphQLObjectType, GraphQLInterfaceType)):
            continue
        for name, field in t.fields.items():
            if _is_connection(field):
                connections += 1
                lacking = [a for a in ("first", "after", "last", "before") if a not in field.args]
                if lacking:
                    offenders.append(f"{t.name}.{name} lacks {', '.join(lacking)}")
    assert offenders == []
    assert connections >= 10  # runs ×2, workloads, records, recordFeed, recordHistory, the catalogue's 3, jobs


def test_lists_are_connections_or_capped_by_the_catalogue():
    """A list that grows with the stored data is a connection; the rest are small and fixed
    (a configuration's bindings) or capped lists of a workload page, bounded by the catalogue and
    shown whole (`first`, at most 100). Every list field with arguments takes `first`."""
    schema = _schema()
    offenders = []
    for t in _own_types(schema):
        if not isinstance(t, GraphQLObjectType):
            continue
        for name, field in t.fields.items():
            inner = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
            if isinstance(inner, GraphQLList) and field.args and "first" not in field.args:
                offenders.append(f"{t.name}.{name}")
    assert offenders == []


def test_no_string_field_documents_a_fixed_set():
    schema = _schema()
    offenders = []
    for t in _own_types(schema):
        if not isinstance(t, (GraphQLObjectType, GraphQLInterfaceType)):
            continue
        for name, field in t.fields.items():
            if not _is_string(field) or not ALTERNATIVES.search(field.description or ""):
                continue
            twin = DISPLAY_TEXT_WITH_ENUM.get(f"{t.name}.{name}")
            twin_field = t.fields.get(twin) if twin else None
            if twin_field is None or not isinstance(get_named_type(twin_field.type), GraphQLEnumType):
                offenders.append(f"{t.name}.{name}: {field.description}")
    assert offenders == [], "String fields documented as a fixed set (make them enums):\n" + "\n".join(offenders)


def test_the_fixed_set_check_would_catch_one():
    """The pattern finds the descriptions this test was written against."""
    assert ALTERNATIVES.search("'passed' or 'failed'.")
    assert ALTERNATIVES.search("'mirrored', 'upstream' or 'none'.")
    assert ALTERNATIVES.search("'no_public_source', 'no_install_recipe', 'licence_unknown'")
    assert not ALTERNATIVES.search("'1.39 ms'.")
    assert not ALTERNATIVES.search("Data type, e.g. 'fp32' ('float' when only the kind is declared).")


def test_display_text_exemptions_are_still_needed():
    """Each exemption names a String field that still lists alternatives, beside its enum twin."""
    schema = _schema()
    for path, twin in DISPLAY_TEXT_WITH_ENUM.items():
        type_name, field_name = path.split(".")
        t = schema.get_type(type_name)
        assert isinstance(t, GraphQLObjectType) and field_name in t.fields and twin in t.fields, path
        assert isinstance(get_named_type(t.fields[twin].type), GraphQLEnumType), path
