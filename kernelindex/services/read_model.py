"""The read model: what a workload's page and list rows are computed from (its WorkloadPage, the rows
its comparisons show, its latest measurements, the measurements of the subjects it shows), computed
once per version of that workload and then served from this process's memory.

Why: an executed page spent most of its time building these values (the SQL, SQLAlchemy's rows, the
cohort bests walked into records), and a list of 100 workloads 60% of its time, although they change
only when that workload's runs, flags, reviews or revisions change, or the catalogue does. The
response cache (kernelindex.web.response_cache) keeps whole answers; this keeps the parts, so an
answer that is not in the response cache (another selection, another page size, the JSON twin, a
list that a write to another workload invalidated) is still executed without reading them again.

Exact with respect to the data, as the response cache is, and by the same means
(kernelindex.db.changes): every request that uses the read model reads the data version first
(shared with the response cache's read), each new version's changes evict the workloads they touched
(a change to an existing catalogue row, a new hardware row or "everything" evicts all; a new row of
another catalogue table evicts only the workloads whose new runs name it, which the same change
names), and a value computed at version V is stored only if no change after V touched its workload
or the catalogue rows every page reads (a slow page finishing after a write does
not bring back what the write replaced). A request with no version (the reader failed) computes its
values and stores none.

Values are immutable (frozen dataclasses, ORM rows nobody changes) and shared by every request that
reads them: loaders return them as they are. Bounded by workload count, least recently used out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelindex.db.changes import Change, ChangeHistory
from kernelindex.services.workload_page import WorkloadPage, page_dependencies

# What every page read besides its own workload's rows: a change that touches it evicts them all.
EVERY_PAGE = page_dependencies(())

# A value the read model holds besides the page: its kind (one per loader) and the loader's key.
ValueKey = tuple[str, Hashable]
# What `value` answers for a value not kept (None is a value: a revision that does not exist).
MISSING: Any = object()


@dataclass
class _Entry:
    page: WorkloadPage
    values: dict[ValueKey, Any] = field(default_factory=dict)


class ReadModel:
    """Per workload (by id): its page, and the other values computed for it, at the newest version
    seen. `revision_ids` maps each stored page's current revision to its workload, so a value keyed by
    revision (a cohort, a subject) finds the workload whose writes change it."""

    def __init__(self, max_workloads: int):
        self.max_workloads = max_workloads
        self._history = ChangeHistory()
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._workload_of_revision: dict[int, int] = {}
        self.hits = 0  # pages served from memory
        self.misses = 0  # pages computed
        self.value_hits = 0  # other values served from memory
        self.value_misses = 0
        self.invalidated = 0  # workloads dropped because their data changed
        self.flushes = 0  # times every workload was dropped (changes not known, catalogue rows, everything)
        self.not_stored = 0  # values computed before a change to what they read
        self.lru_evictions = 0

    @property
    def enabled(self) -> bool:
        return self.max_workloads > 0

    def __len__(self) -> int:
        return len(self._entries)

    # -- versions --------------------------------------------------------------------------------

    def advance(self, version: int, changes: Sequence[Change] | None) -> None:
        """A newer data version, with the changes since the previous one (None: not known)."""
        applied = self._history.advance(version, changes)
        if applied is None:
            self._flush()
            return
        for change in applied:
            # Every page holds catalogue rows (those its runs name, and every hardware row); a new
            # row elsewhere is named only by new runs, which their own workloads' changes carry.
            if change.touches(EVERY_PAGE):
                self._flush()
                continue
            for workload in change.workloads:
                if self._remove(workload):
                    self.invalidated += 1

    def _flush(self) -> None:
        if self._entries:
            self.invalidated += len(self._entries)
            self.flushes += 1
        self._entries.clear()
        self._workload_of_revision.clear()

    def _remove(self, workload_id: int) -> bool:
        entry = self._entries.pop(workload_id, None)
        if entry is None:
            return False
        revision = entry.page.workload.current_revision_id
        if revision is not None and self._workload_of_revision.get(revision) == workload_id:
            del self._workload_of_revision[revision]
        return True

    def _current(self, workload_id: int, version: int) -> _Entry | None:
        if self._history.observe(version):
            self._flush()
        entry = self._entries.get(workload_id)
        if entry is not None:
            self._entries.move_to_end(workload_id)
        return entry

    def _storable(self, workload_id: int, version: int) -> bool:
        if self._history.observe(version):
            self._flush()
        if self._history.still_holds(version, page_dependencies((workload_id,))):
            return True
        self.not_stored += 1
        return False

    # -- pages -----------------------------------------------------------------------------------

    def page(self, workload_id: int, version: int) -> WorkloadPage | None:
        """The workload's page as of the newest version seen (`version` at least), or None."""
        entry = self._current(workload_id, version)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry.page

    def put_page(self, workload_id: int, version: int, page: WorkloadPage) -> bool:
        """Keep a page computed by a request that read `version`; False when it is not kept."""
        if not self.enabled or not self._storable(workload_id, version):
            return False
        self._remove(workload_id)
        self._entries[workload_id] = _Entry(page)
        revision = page.workload.current_revision_id
        if revision is not None:
            self._workload_of_revision[revision] = workload_id
        while len(self._entries) > self.max_workloads:
            self._remove(next(iter(self._entries)))
            self.lru_evictions += 1
        return True

    # -- other values ----------------------------------------------------------------------------

    def workload_of_revision(self, revision_id: int) -> int | None:
        """The workload whose stored page has this revision as its current one."""
        return self._workload_of_revision.get(revision_id)

    def value(self, workload_id: int, key: ValueKey, version: int) -> Any:
        """A value kept for the workload, or `MISSING`."""
        entry = self._current(workload_id, version)
        found = MISSING if entry is None else entry.values.get(key, MISSING)
        if found is MISSING:
            self.value_misses += 1
        else:
            self.value_hits += 1
        return found

    def put_value(self, workload_id: int, key: ValueKey, version: int, value: Any) -> bool:
        """Keep a value computed for the workload by a request that read `version`, next to its page
        (a workload without a stored page keeps nothing: the page is what a write evicts)."""
        if not self._storable(workload_id, version):
            return False
        entry = self._entries.get(workload_id)
        if entry is None:
            return False
        entry.values[key] = value
        return True

    # -- metrics ---------------------------------------------------------------------------------

    def metrics(self) -> dict[str, int]:
        return {
            "hits": self.hits, "misses": self.misses, "value_hits": self.value_hits,
            "value_misses": self.value_misses, "invalidated": self.invalidated, "flushes": self.flushes,
            "not_stored": self.not_stored, "lru_evictions": self.lru_evictions, "workloads": len(self._entries),
        }


# name: (type, help), for /metrics. Counters only grow; gauges are the state now.
METRICS = {
    "hits": ("counter", "Workload pages served from the read model."),
    "misses": ("counter", "Workload pages computed (not in the read model, or changed)."),
    "value_hits": ("counter", "Comparison rows and measurements served from the read model."),
    "value_misses": ("counter", "Comparison rows and measurements computed."),
    "invalidated": ("counter", "Workloads dropped from the read model because their data changed."),
    "flushes": ("counter", "Times every workload was dropped (a change to catalogue rows every page reads, or changes unknown)."),
    "not_stored": ("counter", "Values not kept: a change to what they read arrived while they were computed."),
    "lru_evictions": ("counter", "Workloads dropped to stay within the bound."),
    "workloads": ("gauge", "Workloads now in the read model."),
}
