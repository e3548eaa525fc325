"""history-v1: record events appended as runs beat the record or the holder is withdrawn."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kernelindex.rules.history import HISTORY_VERSION, NEW_RECORD, RESTORED, EventDraft, current_holder_id, next_events
from kernelindex.rules.ranking import order_key
from tests.rules.factories import OBSERVED, run


def _sorted(*runs):
    return sorted(runs, key=order_key)


def test_version():
    assert HISTORY_VERSION == "history-v1"


def test_empty_cohort_without_a_holder_has_no_events():
    assert next_events(None, None, []) == []
    assert current_holder_id([]) is None


def test_the_first_run_sets_the_record():
    (e,) = next_events(None, None, _sorted(run(1, 1.45), run(2, 1.60)))
    assert (e.kind, e.run_id, e.previous_run_id, e.improvement_percent) == (NEW_RECORD, 1, None, None)
    assert e.words == "Record set: 1.45 ms."


def test_a_faster_run_takes_the_record():
    (e,) = next_events(1, 1.45, _sorted(run(1, 1.45), run(2, 1.39)))
    # (1.45 − 1.39) / 1.45 × 100 = 4.1379%
    assert (e.kind, e.run_id, e.previous_run_id) == (NEW_RECORD, 2, 1)
    assert e.improvement_percent == pytest.approx(4.1379, abs=1e-4)
    assert e.words == "New record: 1.39 ms, 4.1% faster than the previous record (1.45 ms)."
    assert e.as_dict() == {"kind": "new_record", "run_id": 2, "previous_run_id": 1,
                           "improvement_percent": e.improvement_percent}


def test_the_holder_still_fastest_gives_no_event():
    assert next_events(1, 1.39, _sorted(run(1, 1.39), run(2, 1.45))) == []


def test_an_equal_time_does_not_take_the_record():
    earlier = run(2, 1.39, observed_at=OBSERVED - timedelta(days=1))  # sorts first in ranking-v1
    assert _sorted(run(1, 1.39), earlier)[0].id == 2
    assert next_events(1, 1.39, _sorted(run(1, 1.39), earlier)) == []


def test_retracting_the_holder_restores_the_next_fastest():
    # holder 2 (1.39 ms) retracted; run 1 at 1.45 ms remains: (1.39 − 1.45) / 1.39 × 100 = −4.3165%
    (e,) = next_events(2, 1.39, _sorted(run(1, 1.45), run(3, 1.60)))
    assert (e.kind, e.run_id, e.previous_run_id) == (RESTORED, 1, 2)
    assert e.improvement_percent == pytest.approx(-4.3165, abs=1e-4)
    assert e.improvement_percent < 0
    assert e.words == "Record holder withdrawn; record restored to 1.45 ms (4.3% slower)."


def test_retracting_the_only_run_empties_the_cohort():
    (e,) = next_events(2, 1.39, [])
    assert (e.kind, e.run_id, e.previous_run_id, e.improvement_percent) == (RESTORED, None, 2, None)
    assert e.words == "Record holder withdrawn; no eligible run remains."
    assert current_holder_id([e]) is None


def test_a_superseding_faster_run_is_a_new_record_not_a_restoration():
    # holder 1 superseded by its re-run 5, faster: a new record against the removed holder
    (e,) = next_events(1, 1.45, _sorted(run(5, 1.40), run(3, 1.60)))
    assert (e.kind, e.run_id, e.previous_run_id) == (NEW_RECORD, 5, 1)
    assert e.improvement_percent == pytest.approx((1.45 - 1.40) / 1.45 * 100)


def test_a_restoration_to_an_equal_time_is_zero_not_positive():
    (e,) = next_events(1, 1.45, [run(2, 1.45)])
    assert e.kind == RESTORED and e.improvement_percent == 0


def test_unsorted_input_still_finds_the_fastest():
    (e,) = next_events(1, 1.45, [run(3, 1.60), run(2, 1.39), run(1, 1.45)])
    assert e.run_id == 2


def test_events_only_append():
    events = []
    events += next_events(current_holder_id(events), None, _sorted(run(1, 1.45)))
    events += next_events(current_holder_id(events), 1.45, _sorted(run(1, 1.45), run(2, 1.39)))
    events += next_events(current_holder_id(events), 1.39, _sorted(run(1, 1.45)))  # run 2 retracted
    events += next_events(current_holder_id(events), 1.45, _sorted(run(1, 1.45)))  # nothing changed
    assert [(e.kind, e.run_id, e.previous_run_id) for e in events] == [
        (NEW_RECORD, 1, None), (NEW_RECORD, 2, 1), (RESTORED, 1, 2),
    ]
    assert current_holder_id(events) == 1
    assert current_holder_id([e.as_dict() for e in events]) == 1


def test_runs_without_a_mean_are_ignored():
    assert next_events(1, 1.45, [run(1, 1.45), run(2, None)]) == []


def test_words_without_the_latencies():
    # An event whose runs' facts are not at hand (the GraphQL field passes None for them) is still worded.
    assert EventDraft(NEW_RECORD, 2, 1, 4.1).words == "New record, 4.1% faster than the previous record."
    assert EventDraft(RESTORED, 1, 2, -3.0).words == "Record holder withdrawn; record restored (3.0% slower)."
    assert EventDraft(RESTORED, 1, 2, None, 1.5).words == "Record holder withdrawn; record restored to 1.50 ms."
