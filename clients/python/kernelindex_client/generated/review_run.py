from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class ReviewRun(BaseModel):
    review_run: "ReviewRunReviewRun" = Field(alias="reviewRun")


class ReviewRunReviewRun(BaseModel):
    ok: bool
    review_status: Optional[str] = Field(alias="reviewStatus")
    error: Optional[str]


ReviewRun.model_rebuild()
