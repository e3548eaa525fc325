from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import JobState


class JobFilter(BaseModel):
    """Which jobs: every filter given must hold."""

    states: Optional[list[JobState]] = None
    "Only jobs in these states."
    hardware: Optional[str] = None
    "Only jobs for this hardware ('cpu' or a catalogue name)."
    workload: Optional[str] = None
    "Only jobs of this workload (slug)."
    submission: Optional[int] = None
    "Only the jobs of this submission (database id)."


class SubmitImplementationInput(BaseModel):
    """An implementation to measure: a KernelBench candidate module (a ModelNew class taking the reference Model's constructor arguments; plain PyTorch, Triton, or torch.utils.cpp_extension.load_inline)."""

    workload: str
    "Slug of the workload it implements (its current revision is measured)."
    source: str
    "The module's Python source: at most 512 KiB, parsed (never run) within bounds of time, nesting and size."
    title: str
    "What it is, in a few words (at most 200 characters of visible text; control, escape and bidi characters are refused)."
    hardware: str
    "Where to measure: 'cpu' or a GPU of the catalogue (SKU, short name or product name)."
    filename: str = "model_new.py"
    "File name, for tracebacks and the record: a path's last part is kept (at most 255 characters, one line of visible text)."
    licence: Optional[str] = None
    "SPDX licence expression, e.g. 'MIT' or 'Apache-2.0 OR MIT' (at most 200 characters); omitted when none is stated."
    source_url: Optional[str] = Field(alias="sourceUrl", default=None)
    "Where its source lives (http or https)."
    bindings: Optional[Any] = None
    'Configuration overrides of the workload\'s variable axes, e.g. {"batch_size": 8}: each an axis of the workload, each value a positive integer below 2**31.'
    replicas: int = 1
    "Measurements on distinct machines of that hardware (1 to 4); two that agree make the run Replicated."
