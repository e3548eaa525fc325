import pytest
import torch

from benchmarks.timing import CpuTimer, make_timer, resolve_device

gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_cpu_timer_runs_warmup_then_discards_the_first_timed_trial():
    calls = []
    timer = make_timer("cpu")
    assert isinstance(timer, CpuTimer)
    samples = timer.measure(lambda: calls.append(1), warmup=3, trials=7)
    assert len(calls) == 3 + 7 + 1
    assert len(samples) == 7
    assert all(sample > 0 for sample in samples)


def test_cpu_timer_reports_milliseconds():
    import time

    samples = make_timer("cpu").measure(lambda: time.sleep(0.002), warmup=0, trials=3)
    assert all(1.5 < sample < 200 for sample in samples)


def test_compile_time_is_the_wall_time_of_one_call():
    import time

    result, elapsed_ms = make_timer("cpu").wall_time_ms(lambda: time.sleep(0.003) or "done")
    assert result == "done"
    assert elapsed_ms >= 2.5


def test_cpu_protocol_object():
    protocol = make_timer("cpu").protocol(warmup=2, trials=10)
    assert protocol["name"] == "kernelindex-cpu-perf-counter"
    assert protocol["version"] == "1"
    assert protocol["l2_flush"] is False
    assert (protocol["warmup"], protocol["trials"], protocol["statistic"]) == (2, 10, "mean")


def test_trial_counts_are_checked():
    with pytest.raises(ValueError):
        make_timer("cpu").measure(lambda: None, warmup=0, trials=0)
    with pytest.raises(ValueError):
        make_timer("cpu").measure(lambda: None, warmup=-1, trials=1)


def test_device_resolution_falls_back_to_the_cpu():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device(None).type == expected
    assert resolve_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError):
            resolve_device("cuda")


@gpu
@needs_cuda
def test_cuda_timer_flushes_twice_the_l2_and_times_with_events():
    timer = make_timer("cuda")
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    assert timer.flush_bytes == 2 * l2_bytes
    protocol = timer.protocol(warmup=1, trials=5)
    assert protocol["name"] == "kernelindex-cuda-events" and protocol["l2_flush"] is True
    a = torch.randn(1 << 20, device="cuda")
    samples = timer.measure(lambda: a * 2, warmup=2, trials=5)
    assert len(samples) == 5 and all(sample > 0 for sample in samples)


def test_running_stats_match_the_whole_sample_at_every_step():
    import statistics

    from benchmarks.stats import relative_half_width
    from benchmarks.timing import RunningStats

    running = RunningStats()
    assert running.relative_half_width() is None
    samples = [1.25, 0.75, 1.5, 1.0, 1.125, 0.875]
    for count, sample in enumerate(samples, start=1):
        running.add(sample)
        seen = samples[:count]
        assert running.count == count and running.mean == pytest.approx(statistics.fmean(seen))
        if count == 1:
            assert running.relative_half_width() is None
        else:
            assert running.relative_half_width() == pytest.approx(relative_half_width(seen))
    zeros = RunningStats()
    zeros.add(0.0)
    zeros.add(0.0)
    assert zeros.relative_half_width() is None  # no interval around a mean of zero
