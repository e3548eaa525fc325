"""Statement parameters the read and write paths share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import BigInteger, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import BindParameter


def id_array(ids: Iterable[int]) -> BindParameter[Sequence[int]]:
    """One array parameter for `= ANY(...)`: any number of ids in a single bound value."""
    value: Sequence[int] = list(ids)
    return bindparam("ids", value=value, type_=ARRAY(BigInteger), expanding=False)
