from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import CompareField
from .fragments import RunFigures


class CompareRuns(BaseModel):
    compare_runs: "CompareRunsCompareRuns" = Field(alias="compareRuns")


class CompareRunsCompareRuns(BaseModel):
    comparable: bool
    incomparable_because: Optional[str] = Field(alias="incomparableBecause")
    runs: list["CompareRunsCompareRunsRuns"]
    winner: Optional["CompareRunsCompareRunsWinner"]
    differences: list["CompareRunsCompareRunsDifferences"]


CompareRunsCompareRunsRuns = RunFigures


class CompareRunsCompareRunsWinner(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")


class CompareRunsCompareRunsDifferences(BaseModel):
    field: CompareField
    label: str
    values: list[Optional[str]]
    differs: bool


CompareRuns.model_rebuild()
CompareRunsCompareRuns.model_rebuild()
