import platform
import re

import pytest
import torch

from benchmarks.environment import (
    capture_environment,
    cpu_model_name,
    fingerprint,
    load_catalogue,
    sku_for_product_name,
)

gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_cpu_capture_names_the_cpu_and_no_sku(monkeypatch):
    monkeypatch.delenv("KERNELINDEX_PROVIDER", raising=False)
    monkeypatch.delenv("KERNELINDEX_LABEL", raising=False)
    environment = capture_environment("cpu")
    assert environment["hardware"] == {"product_name": cpu_model_name()}
    assert environment["hardware"]["product_name"]
    assert environment["provider"] is None and environment["label"] is None
    software = environment["software"]
    assert software["torch"] == torch.__version__
    assert software["python"] == platform.python_version()
    assert software["cuda"] == torch.version.cuda
    details = environment["details"]
    assert details["device_type"] == "cpu"
    assert details["logical_cores"] >= 1
    assert re.fullmatch(r"[0-9a-f]{64}", details["fingerprint"])


def test_cpu_fingerprint_is_stable_between_captures():
    assert capture_environment("cpu")["details"]["fingerprint"] == capture_environment("cpu")["details"]["fingerprint"]


def test_provider_and_label_come_from_options_or_the_environment(monkeypatch):
    monkeypatch.setenv("KERNELINDEX_PROVIDER", "example-cloud")
    environment = capture_environment("cpu", label="rack-7")
    assert environment["provider"] == "example-cloud"
    assert environment["label"] == "rack-7"
    assert capture_environment("cpu", provider="other")["provider"] == "other"
    # the label is part of the fingerprint: two pools are two machines
    assert environment["details"]["fingerprint"] != capture_environment("cpu")["details"]["fingerprint"]


def test_fingerprint_ignores_current_clocks_but_not_the_hardware():
    captured = {
        "hardware": {"product_name": "NVIDIA H200"},
        "software": {"torch": "2.13.0"},
        "details": {"sm_count": 132, "clock_sm_mhz": 1980, "clock_mem_mhz": 3201, "clock_max_sm_mhz": 1980},
    }
    reference = fingerprint(captured)
    throttled = {**captured, "details": {**captured["details"], "clock_sm_mhz": 1410, "clock_mem_mhz": 2619}}
    assert fingerprint(throttled) == reference
    other = {**captured, "details": {**captured["details"], "sm_count": 114}}
    assert fingerprint(other) != reference
    # an existing fingerprint field does not feed into the next one
    assert fingerprint({**captured, "details": {**captured["details"], "fingerprint": "x"}}) == reference


def test_catalogue_maps_driver_names_to_skus():
    catalogue = load_catalogue()
    assert sku_for_product_name("NVIDIA H200", catalogue) == "NVIDIA H200 SXM 141GB"
    assert sku_for_product_name("NVIDIA H100 80GB HBM3", catalogue) == "NVIDIA H100 SXM5 80GB"
    assert sku_for_product_name("NVIDIA GeForce RTX 9999", catalogue) is None


def test_a_missing_catalogue_maps_nothing(tmp_path):
    assert load_catalogue(tmp_path / "absent.json") == {}


@gpu
@needs_cuda
def test_cuda_capture_reports_the_gpu():
    environment = capture_environment("cuda")
    name = torch.cuda.get_device_name(0)
    assert environment["hardware"]["product_name"] == name
    expected_sku = sku_for_product_name(name, load_catalogue())
    assert environment["hardware"].get("sku") == expected_sku
    details = environment["details"]
    assert details["sm_count"] == torch.cuda.get_device_properties(0).multi_processor_count
    assert details["l2_cache_bytes"] > 0
    assert "cudnn_allow_tf32" in details and "float32_matmul_precision" in details
    assert environment["software"]["cuda"] == torch.version.cuda
    assert capture_environment("cuda")["details"]["fingerprint"] == details["fingerprint"]
