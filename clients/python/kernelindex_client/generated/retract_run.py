from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class RetractRun(BaseModel):
    retract_run: "RetractRunRetractRun" = Field(alias="retractRun")


class RetractRunRetractRun(BaseModel):
    ok: bool
    run_id: Optional[str] = Field(alias="runId")
    already_retracted: bool = Field(alias="alreadyRetracted")
    retracted_at: Optional[datetime] = Field(alias="retractedAt")
    reason: Optional[str]
    error: Optional[str]


RetractRun.model_rebuild()
