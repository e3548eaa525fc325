from typing import Optional

from .base_model import BaseModel
from .fragments import JobProgress


class JobFollow(BaseModel):
    job: Optional["JobFollowJob"]


JobFollowJob = JobProgress
JobFollow.model_rebuild()
