from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import JobProgress


class CancelJob(BaseModel):
    cancel_job: "CancelJobCancelJob" = Field(alias="cancelJob")


class CancelJobCancelJob(BaseModel):
    ok: bool
    already_cancelled: bool = Field(alias="alreadyCancelled")
    was_running: bool = Field(alias="wasRunning")
    error: Optional[str]
    job: Optional["CancelJobCancelJobJob"]


CancelJobCancelJobJob = JobProgress
CancelJob.model_rebuild()
CancelJobCancelJob.model_rebuild()
