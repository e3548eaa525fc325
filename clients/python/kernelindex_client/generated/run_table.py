from pydantic import Field

from .base_model import BaseModel
from .fragments import PageCursor, RunRow


class RunTable(BaseModel):
    runs: "RunTableRuns"


class RunTableRuns(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "RunTableRunsPageInfo" = Field(alias="pageInfo")
    nodes: list["RunTableRunsNodes"]


RunTableRunsPageInfo = PageCursor
RunTableRunsNodes = RunRow
RunTable.model_rebuild()
RunTableRuns.model_rebuild()
