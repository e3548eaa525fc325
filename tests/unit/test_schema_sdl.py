"""schema.graphql is the exported SDL of the code; regenerate with `kernelindex export-schema > schema.graphql`."""

from pathlib import Path

from kernelindex.graphql.schema import export_sdl

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"


def test_schema_file_matches_code():
    assert SCHEMA_FILE.read_text() == export_sdl(), "schema.graphql is out of date: run `make schema`"


def test_every_type_and_field_is_described():
    from graphql import GraphQLObjectType

    from kernelindex.graphql.schema import build_schema

    schema = build_schema()._schema
    missing = []
    for name, gtype in schema.type_map.items():
        if name.startswith("__") or not isinstance(gtype, GraphQLObjectType):
            continue
        if not gtype.description:
            missing.append(name)
        for field_name, field in gtype.fields.items():
            if not field.description:
                missing.append(f"{name}.{field_name}")
    assert missing == []
