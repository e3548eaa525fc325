from enum import Enum


class AxisBehaviour(str, Enum):
    VARIABLE = "VARIABLE"
    CONSTANT = "CONSTANT"
    DERIVED = "DERIVED"


class CompareField(str, Enum):
    HARDWARE = "HARDWARE"
    PROVIDER = "PROVIDER"
    TORCH_VERSION = "TORCH_VERSION"
    CUDA_VERSION = "CUDA_VERSION"
    DRIVER_VERSION = "DRIVER_VERSION"
    PYTHON_VERSION = "PYTHON_VERSION"
    TRITON_VERSION = "TRITON_VERSION"
    PROTOCOL_NAME = "PROTOCOL_NAME"
    PROTOCOL_VERSION = "PROTOCOL_VERSION"
    BINDINGS = "BINDINGS"
    DTYPE = "DTYPE"
    SOURCE_NAME = "SOURCE_NAME"
    SOURCE_REVISION = "SOURCE_REVISION"
    WORKLOAD_REVISION = "WORKLOAD_REVISION"


class DeployabilityReasonCode(str, Enum):
    NO_PUBLIC_SOURCE = "NO_PUBLIC_SOURCE"
    NO_INSTALL_RECIPE = "NO_INSTALL_RECIPE"
    LICENCE_UNKNOWN = "LICENCE_UNKNOWN"


class Determinism(str, Enum):
    DETERMINISTIC = "DETERMINISTIC"
    NONDETERMINISTIC = "NONDETERMINISTIC"
    UNSPECIFIED = "UNSPECIFIED"


class Evidence(str, Enum):
    REPORTED = "REPORTED"
    MEASURED = "MEASURED"


class FigureUnit(str, Enum):
    MS = "MS"
    MB = "MB"
    S = "S"


class FloorBound(str, Enum):
    MEMORY = "MEMORY"
    COMPUTE = "COMPUTE"


class FlopClass(str, Enum):
    CONV = "CONV"
    MATMUL = "MATMUL"
    OTHER = "OTHER"


class HeadlineKind(str, Enum):
    BASELINE_UNBEATEN = "BASELINE_UNBEATEN"
    FASTEST = "FASTEST"


class ImplementationRole(str, Enum):
    BASELINE = "BASELINE"
    CANDIDATE = "CANDIDATE"


class JobKind(str, Enum):
    SUBMISSION = "SUBMISSION"
    SWEEP = "SWEEP"


class JobState(str, Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    PASSED = "PASSED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class MathPrecision(str, Enum):
    FP32 = "FP32"
    TF32 = "TF32"
    FP16 = "FP16"
    BF16 = "BF16"


class Metric(str, Enum):
    LATENCY = "LATENCY"
    MEMORY = "MEMORY"
    SCORE = "SCORE"


class RecordEventKind(str, Enum):
    NEW_RECORD = "NEW_RECORD"
    RESTORED = "RESTORED"
    REVISION_CHANGED = "REVISION_CHANGED"
    SNAPSHOT_RETRACTED = "SNAPSHOT_RETRACTED"


class ReviewDecision(str, Enum):
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


class ReviewState(str, Enum):
    NEEDS_REVIEW = "NEEDS_REVIEW"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


class RunFlagCode(str, Enum):
    BELOW_FLOOR = "BELOW_FLOOR"
    IMPLAUSIBLE_SPEEDUP = "IMPLAUSIBLE_SPEEDUP"


class RunOrder(str, Enum):
    NEWEST = "NEWEST"
    FASTEST = "FASTEST"
    RECENTLY_OBSERVED = "RECENTLY_OBSERVED"


class RunStatus(str, Enum):
    PASSED = "PASSED"
    FAILED = "FAILED"


class SourceAvailability(str, Enum):
    MIRRORED = "MIRRORED"
    UPSTREAM = "UPSTREAM"
    NONE = "NONE"


class SubmissionInputField(str, Enum):
    WORKLOAD = "WORKLOAD"
    FILE = "FILE"
    TITLE = "TITLE"
    HARDWARE = "HARDWARE"
    SOURCE_URL = "SOURCE_URL"
    LICENCE = "LICENCE"
    BINDINGS = "BINDINGS"
    REPLICAS = "REPLICAS"


class TrustLevel(str, Enum):
    REPORTED = "REPORTED"
    REPRODUCIBLE = "REPRODUCIBLE"
    VERIFIED = "VERIFIED"
    REPLICATED = "REPLICATED"


class WorkloadKind(str, Enum):
    MODEL = "MODEL"
    OPERATOR = "OPERATOR"
    FUSION = "FUSION"


class WorkloadOrder(str, Enum):
    SUITE_LEVEL_PROBLEM = "SUITE_LEVEL_PROBLEM"
    NAME = "NAME"
    SLUG = "SLUG"
