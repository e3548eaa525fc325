import pytest

from kernelindex.db.urls import DatabaseUrlError, redact, to_async_url, to_libpq_url


@pytest.mark.parametrize(
    "given, expected",
    [
        ("postgresql://u:p@localhost:5432/db", "postgresql+asyncpg://u:p@localhost:5432/db"),
        ("postgres://u@localhost/db", "postgresql+asyncpg://u@localhost/db"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql://user@/db?host=/run/pg", "postgresql+asyncpg://user@/db?host=%2Frun%2Fpg"),
    ],
)
def test_accepted_url_forms(given, expected):
    assert to_async_url(given) == expected


def test_socket_form_round_trips_to_libpq():
    assert to_libpq_url("postgresql+asyncpg://user@/db?host=/run/pg") == "postgresql://user@/db?host=%2Frun%2Fpg"


@pytest.mark.parametrize("bad", ["mysql://u@h/db", "sqlite:///x.db", "postgresql://u@h/"])
def test_refused_url_forms(bad):
    with pytest.raises(DatabaseUrlError):
        to_async_url(bad)


def test_redact_hides_password():
    assert redact("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"
