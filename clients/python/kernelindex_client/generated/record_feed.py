from pydantic import Field

from .base_model import BaseModel
from .fragments import PageCursor, RecordChange


class RecordFeed(BaseModel):
    record_feed: "RecordFeedRecordFeed" = Field(alias="recordFeed")


class RecordFeedRecordFeed(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "RecordFeedRecordFeedPageInfo" = Field(alias="pageInfo")
    edges: list["RecordFeedRecordFeedEdges"]


RecordFeedRecordFeedPageInfo = PageCursor


class RecordFeedRecordFeedEdges(BaseModel):
    cursor: str
    node: "RecordFeedRecordFeedEdgesNode"


RecordFeedRecordFeedEdgesNode = RecordChange
RecordFeed.model_rebuild()
RecordFeedRecordFeed.model_rebuild()
RecordFeedRecordFeedEdges.model_rebuild()
