from pydantic import Field

from .base_model import BaseModel
from .fragments import JobProgress, PageCursor


class JobList(BaseModel):
    jobs: "JobListJobs"


class JobListJobs(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "JobListJobsPageInfo" = Field(alias="pageInfo")
    edges: list["JobListJobsEdges"]


JobListJobsPageInfo = PageCursor


class JobListJobsEdges(BaseModel):
    cursor: str
    node: "JobListJobsEdgesNode"


JobListJobsEdgesNode = JobProgress
JobList.model_rebuild()
JobListJobs.model_rebuild()
JobListJobsEdges.model_rebuild()
