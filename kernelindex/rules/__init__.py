"""The product's judgement: pure functions, no I/O. The API, the JSON twins, the exports and the
ingest all call these modules; each rule carries a version string that is shown with its results."""

from kernelindex.rules.headroom import HEADROOM_V1
from kernelindex.rules.ranking import RANKING_VERSION
from kernelindex.rules.trust import TRUST_VERSION

POLICY_VERSION = " · ".join((RANKING_VERSION, TRUST_VERSION, HEADROOM_V1))
