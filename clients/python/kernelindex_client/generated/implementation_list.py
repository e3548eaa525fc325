from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import DeployabilityReasonCode
from .fragments import ImplementationBadge, PageCursor


class ImplementationList(BaseModel):
    implementations: "ImplementationListImplementations"


class ImplementationListImplementations(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "ImplementationListImplementationsPageInfo" = Field(alias="pageInfo")
    nodes: list["ImplementationListImplementationsNodes"]


ImplementationListImplementationsPageInfo = PageCursor


class ImplementationListImplementationsNodes(ImplementationBadge):
    source_url: Optional[str] = Field(alias="sourceUrl")
    deployability: "ImplementationListImplementationsNodesDeployability"


class ImplementationListImplementationsNodesDeployability(BaseModel):
    deployable: bool
    words: str
    reasons: list["ImplementationListImplementationsNodesDeployabilityReasons"]


class ImplementationListImplementationsNodesDeployabilityReasons(BaseModel):
    code: DeployabilityReasonCode
    words: str


ImplementationList.model_rebuild()
ImplementationListImplementations.model_rebuild()
ImplementationListImplementationsNodes.model_rebuild()
ImplementationListImplementationsNodesDeployability.model_rebuild()
