"""The history of a cohort's record: events appended as runs arrive, are retracted or superseded.

history-v1:
- the standing record holder is the run of the last event (None before the first event, or after
  a "restored" event that left the cohort empty);
- when the fastest eligible run (ranking-v1 order) is strictly faster than the standing record, a
  "new_record" event: run_id the new holder, previous_run_id the old one (None for a cohort's first
  record), improvement_percent = (previous − new) / previous × 100 (None for a first record);
- when the standing holder is no longer eligible (retracted, superseded, held for review) and no
  remaining run beats it, a "restored" event: run_id the fastest remaining run (None when the cohort
  is empty), previous_run_id the removed holder, improvement_percent negative or zero (the record got
  slower) or None (cohort empty). A remaining run faster than the removed holder is a "new_record";
- an equal time never takes the record: the standing holder keeps it;
- events are only ever appended, never edited or deleted;
- the runs that arrived in one write (one import, whatever its batches) are taken in observed order
  (observed_at, then ranking-v1 order): each that beats the standing holder at that point is a
  "new_record", so how an import is cut into batches never changes its events (`events_for`).

revisions-v1 adds "revision_changed": the workload's current revision moved (kernelindex.ingest.
workloads); runs of the previous revision stop counting for records. It names no run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelindex.rules.display import computed, format_change, format_latency
from kernelindex.rules.facts import RunFacts
from kernelindex.rules.ranking import order_key

HISTORY_VERSION = "history-v1"
REVISIONS_VERSION = "revisions-v1"

NEW_RECORD = "new_record"
RESTORED = "restored"
REVISION_CHANGED = "revision_changed"
# A snapshot holding some of the workload's runs was retracted (kernelindex.ingest.snapshots): its
# runs stop counting; the event names no run and keeps the retraction's reason.
SNAPSHOT_RETRACTED = "snapshot_retracted"


@dataclass(frozen=True)
class EventDraft:
    kind: str  # "new_record" or "restored"
    run_id: int | None  # the holder after the event; None when the cohort became empty
    previous_run_id: int | None
    improvement_percent: float | None  # (previous − new) / previous × 100
    mean_ms: float | None = None
    previous_mean_ms: float | None = None

    @property
    def words(self) -> str:
        """'New record: 1.39 ms, 4.1% faster than the previous record (1.45 ms).' and the like."""
        if self.kind == REVISION_CHANGED:
            return "Reference source revised upstream: records now count runs of the new revision only."
        if self.kind == SNAPSHOT_RETRACTED:
            return "A snapshot was retracted: its runs no longer count for records."
        if self.kind == NEW_RECORD:
            if self.previous_run_id is None or self.improvement_percent is None:
                return f"Record set: {format_latency(self.mean_ms)}." if self.mean_ms is not None else "Record set."
            if self.mean_ms is None or self.previous_mean_ms is None:
                # The latencies come from the runs' facts, which a caller may not have (e.g. an event read
                # back from the database whose run is no longer loaded): say what is known rather than fail.
                return f"New record, {format_change(self.improvement_percent)} than the previous record."
            return (
                f"New record: {format_latency(self.mean_ms)}, {format_change(self.improvement_percent)} than the "
                f"previous record ({format_latency(self.previous_mean_ms)})."
            )
        if self.run_id is None:
            return "Record holder withdrawn; no eligible run remains."
        text = "Record holder withdrawn; record restored"
        if self.mean_ms is not None:
            text += f" to {format_latency(self.mean_ms)}"
        if self.improvement_percent is not None:
            # improvement_percent is ≤ 0 here (the record got slower, or stayed): "4.3% slower", never
            # "-0.0% slower"; an equal time reads "the same time" (display-v1, format_change).
            text += f" ({format_change(self.improvement_percent)})"
        return text + "."

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "previous_run_id": self.previous_run_id,
            "improvement_percent": self.improvement_percent,
        }


def improvement_percent(previous_ms: float | None, new_ms: float | None) -> float | None:
    """(previous − new) / previous × 100, as a number for computing (display-v1 `computed`: no binary
    noise, 0.0 rather than -0.0 for an equal time)."""
    if previous_ms is None or new_ms is None or previous_ms == 0:
        return None
    return computed((previous_ms - new_ms) / previous_ms * 100)


def current_holder_id(events: Sequence[Any]) -> int | None:
    """The standing holder after the events so far: the run of the last one (dicts or EventDrafts)."""
    if not events:
        return None
    last = events[-1]
    holder: int | None = last["run_id"] if isinstance(last, dict) else last.run_id
    return holder


def next_events(
    current_holder_id: int | None,
    current_holder_mean: float | None,
    eligible_runs_sorted: Iterable[RunFacts],
) -> list[EventDraft]:
    """The events to append, given the standing holder and the cohort's eligible runs now.

    ``eligible_runs_sorted`` should already be in ranking-v1 order; the fastest is taken by that order
    either way. At most one event is returned: the state is compared, not the path to it.
    """
    eligible = [r for r in eligible_runs_sorted if r.figure is not None]
    top = min(eligible, key=order_key) if eligible else None
    if current_holder_id is None:
        if top is None:
            return []
        return [EventDraft(NEW_RECORD, top.id, None, None, top.figure, None)]

    holder_present = any(r.id == current_holder_id for r in eligible)
    if top is None:
        # The holder cannot be present in an empty cohort: it was removed and nothing remains.
        return [EventDraft(RESTORED, None, current_holder_id, None, None, current_holder_mean)]
    if top.id == current_holder_id:
        return []
    # Without the standing time nothing can be said to beat it.
    beats = current_holder_mean is not None and top.latency_ms < current_holder_mean
    if beats:
        return [EventDraft(NEW_RECORD, top.id, current_holder_id, improvement_percent(current_holder_mean, top.figure),
                           top.figure, current_holder_mean)]
    if holder_present:
        return []  # an equal (or, out of order, slower) top run does not take the record
    return [EventDraft(RESTORED, top.id, current_holder_id, improvement_percent(current_holder_mean, top.figure),
                       top.figure, current_holder_mean)]


def events_for(
    current_holder_id: int | None,
    current_holder_mean: float | None,
    eligible_runs: Iterable[RunFacts],
    arrived_ids: Collection[int] = (),
) -> list[EventDraft]:
    """The events to append after a write whose new runs are `arrived_ids`.

    The arrivals are replayed in observed order against the standing holder, so the events of one
    import do not depend on its batches; what is left (a removed holder, a run that counts again
    after a review) is settled by comparing states, as `next_events` does.
    """
    eligible = list(eligible_runs)
    arrivals = sorted(
        (r for r in eligible if r.id in arrived_ids and r.figure is not None),
        key=lambda r: (r.observed_at, order_key(r)),
    )
    drafts: list[EventDraft] = []
    holder_id, holder_mean = current_holder_id, current_holder_mean
    for run in arrivals:
        if holder_id is None:
            drafts.append(EventDraft(NEW_RECORD, run.id, None, None, run.figure, None))
        elif holder_mean is not None and run.latency_ms < holder_mean:
            drafts.append(EventDraft(NEW_RECORD, run.id, holder_id, improvement_percent(holder_mean, run.figure),
                                     run.figure, holder_mean))
        else:
            # Not faster (or nothing to beat): no event. A holder superseded in this very write is
            # settled by the state comparison below, once every arrival has been seen.
            continue
        holder_id, holder_mean = run.id, run.figure
    return drafts + next_events(holder_id, holder_mean, sorted(eligible, key=order_key))
