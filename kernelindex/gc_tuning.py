"""The process's garbage collector, tuned once for a long-lived process that makes many short-lived
objects: the server (kernelindex.web.app's lifespan) and the ingest commands (kernelindex.cli.ingest,
kernelindex.cli.sources).

Both free their garbage by reference counting (a request's as it finishes, a decoded record's once
written); what CPython's collector adds is a walk of every tracked object each time 700 more are alive
than at the last collection. A request in flight or a batch of 5,000 records being written keeps far more
than that alive, so at the default the server ran a collection every ~20 requests and a full one (4–7 ms,
the event loop waiting) once or twice a second, and an ingest spent ~40% of checking its records in the
collector (helper check24's profile, issue 24: 50,000 lines checked in 1.98–2.39 s, 1.48–1.51 s tuned).
"""

from __future__ import annotations

import gc

# Collection of the youngest generation once this many more container objects are alive than at the
# last one (CPython's default: 700). At 10,000 a collection is rare (measured: 3 in a 60 s soak of the
# server) and memory stays bounded by the threshold; perf/soak.py checks the server's memory does not grow.
GC_YOUNG_THRESHOLD = 10_000

_tuned = False


def tune_gc() -> None:
    """Once per process: move the objects alive now (modules, the schema, whatever the process imported:
    ~160,000 of them in the server) out of every later collection, and collect young objects less often.
    A full collection walks every object it still tracks while the event loop waits; with torch imported
    (the CLI used to pull it in) that was ~150 ms every ~15 s under load."""
    global _tuned
    if not _tuned:
        _tuned = True
        gc.collect()
        gc.freeze()
        _, middle, old = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)
