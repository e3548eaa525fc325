from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import JobState, SubmissionInputField
from .fragments import JobProgress


class SubmitImplementation(BaseModel):
    submit_implementation: "SubmitImplementationSubmitImplementation" = Field(
        alias="submitImplementation"
    )


class SubmitImplementationSubmitImplementation(BaseModel):
    ok: bool
    created: bool
    problems: list["SubmitImplementationSubmitImplementationProblems"]
    job: Optional["SubmitImplementationSubmitImplementationJob"]
    jobs: list["SubmitImplementationSubmitImplementationJobs"]


class SubmitImplementationSubmitImplementationProblems(BaseModel):
    key: SubmissionInputField
    reason: str


SubmitImplementationSubmitImplementationJob = JobProgress


class SubmitImplementationSubmitImplementationJobs(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    replica: int
    state: JobState


SubmitImplementation.model_rebuild()
SubmitImplementationSubmitImplementation.model_rebuild()
