"""The product's judgement: pure functions, no I/O. The API, the JSON twins, the exports and the
ingest all call these modules; each rule carries a version string that is shown with its results."""

from kernelindex.rules.compare import COMPARE_VERSION
from kernelindex.rules.deployability import DEPLOYABILITY_VERSION
from kernelindex.rules.headroom_v1 import HEADROOM_V1
from kernelindex.rules.headroom_v2 import ROOFLINE_VERSION
from kernelindex.rules.history import HISTORY_VERSION
from kernelindex.rules.plausibility import PLAUSIBILITY_VERSION
from kernelindex.rules.providers import PROVIDERS_VERSION
from kernelindex.rules.ranking import RANKING_VERSION
from kernelindex.rules.stats import STATS_VERSION
from kernelindex.rules.ties import TIES_VERSION
from kernelindex.rules.trust_labels import TRUST_VERSION
from kernelindex.rules.trust_ladder import EVIDENCE_VERSION

POLICY_VERSION = " · ".join((
    RANKING_VERSION, TIES_VERSION, STATS_VERSION, TRUST_VERSION, EVIDENCE_VERSION, HEADROOM_V1, ROOFLINE_VERSION,
    PLAUSIBILITY_VERSION, HISTORY_VERSION, DEPLOYABILITY_VERSION, COMPARE_VERSION, PROVIDERS_VERSION,
))
