from typing import Annotated, Literal, Optional, Union

from pydantic import Field

from .base_model import BaseModel
from .fragments import (  # noqa: F401
    HardwareBadge,
    ImplementationBadge,
    JobProgress,
    JobProgressBaselineRun,
    JobProgressRun,
    JobProgressWorkload,
    RunFigures,
    RunFiguresConfiguration,
    RunFiguresEnvironment,
    RunFiguresImplementation,
)


class NodeById(BaseModel):
    node: Optional[
        Annotated[
            Union[
                "NodeByIdNodeNode",
                "NodeByIdNodeEnvironment",
                "NodeByIdNodeHardware",
                "NodeByIdNodeImplementation",
                "NodeByIdNodeJob",
                "NodeByIdNodeRun",
                "NodeByIdNodeWorkload",
            ],
            Field(discriminator="typename__"),
        ]
    ]


class NodeByIdNodeNode(BaseModel):
    typename__: Literal[
        "Node",
        "Protocol",
        "RecordEvent",
        "Source",
        "Submission",
        "WorkloadRecords",
        "WorkloadRevision",
    ] = Field(alias="__typename")
    id: str


class NodeByIdNodeEnvironment(BaseModel):
    typename__: Literal["Environment"] = Field(alias="__typename")
    id: str
    provider: Optional[str]
    torch_version: Optional[str] = Field(alias="torchVersion")
    cuda_version: Optional[str] = Field(alias="cudaVersion")
    gpu: "NodeByIdNodeEnvironmentGpu"


NodeByIdNodeEnvironmentGpu = HardwareBadge


class NodeByIdNodeHardware(HardwareBadge):
    typename__: Literal["Hardware"] = Field(alias="__typename")
    id: str


class NodeByIdNodeImplementation(ImplementationBadge):
    typename__: Literal["Implementation"] = Field(alias="__typename")
    id: str


class NodeByIdNodeJob(JobProgress):
    typename__: Literal["Job"] = Field(alias="__typename")
    id: str


class NodeByIdNodeRun(RunFigures):
    typename__: Literal["Run"] = Field(alias="__typename")
    id: str


class NodeByIdNodeWorkload(BaseModel):
    typename__: Literal["Workload"] = Field(alias="__typename")
    id: str
    slug: str
    title: str


NodeById.model_rebuild()
NodeByIdNodeEnvironment.model_rebuild()
