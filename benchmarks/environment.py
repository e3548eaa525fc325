"""What the machine really is, shaped into the run record's ``environment`` object."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

CATALOGUE_PATH = Path(__file__).resolve().parent.parent / "seeds" / "hardware.json"

PROVIDER_ENV = "KERNELINDEX_PROVIDER"
LABEL_ENV = "KERNELINDEX_LABEL"

# Kept in the record, left out of the fingerprint so that one machine keeps one fingerprint:
# current clocks drift from run to run, and how many GPUs a process sees or whether
# nvidia-smi answered says nothing about the GPU that ran.
VOLATILE_DETAILS = frozenset({"clock_sm_mhz", "clock_mem_mhz", "visible_gpu_count", "nvidia_smi_available"})

NVIDIA_SMI_FIELDS = ("driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm")


def load_catalogue(path: str | Path | None = None) -> dict[str, str]:
    """Driver product name -> catalogue SKU; empty when the catalogue is not there."""
    path = Path(path) if path is not None else CATALOGUE_PATH
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("hardware", [])
    except (OSError, ValueError):
        return {}
    mapping = {}
    for entry in entries:
        for name in entry.get("driver_product_names", []):
            mapping[name] = entry["sku"]
    return mapping


def sku_for_product_name(product_name: str, catalogue: dict[str, str]) -> str | None:
    return catalogue.get(product_name.strip())


def fingerprint(captured: dict[str, Any]) -> str:
    """sha256 of canonical JSON of the captured facts, volatile ones left out."""
    stable = dict(captured)
    details = {k: v for k, v in stable.get("details", {}).items() if k not in VOLATILE_DETAILS and k != "fingerprint"}
    stable["details"] = details
    canonical = json.dumps(stable, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _package_version(*distributions: str) -> str | None:
    for name in distributions:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _triton_version() -> str | None:
    # Reading the distribution metadata avoids importing triton, which takes seconds.
    return _package_version("triton", "pytorch-triton", "pytorch-triton-rocm", "triton-xpu")


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _physical_core_count() -> int | None:
    """Distinct (physical id, core id) pairs in /proc/cpuinfo; None where that file is absent."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    cores = set()
    for block in text.split("\n\n"):
        fields = dict(
            (key.strip(), value.strip())
            for key, _, value in (line.partition(":") for line in block.splitlines())
        )
        if "core id" in fields:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def _usable_cpu_count() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _parse_mhz(value: str) -> int | None:
    value = value.strip()
    if value.endswith("MHz"):
        value = value[: -len("MHz")].strip()
    try:
        return int(float(value))
    except ValueError:
        return None


def query_nvidia_smi(gpu_selector: str | None = None) -> dict[str, Any]:
    """Driver version and clocks from nvidia-smi; empty when it is absent or fails."""
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return {}
    command = [executable, f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}", "--format=csv,noheader"]
    if gpu_selector is not None:
        command += ["-i", gpu_selector]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    if completed.returncode != 0 or not completed.stdout.strip():
        return {}
    values = [v.strip() for v in completed.stdout.strip().splitlines()[0].split(",")]
    if len(values) != len(NVIDIA_SMI_FIELDS):
        return {}
    driver, clock_sm, clock_mem, clock_max_sm = values
    return {
        "driver_version": driver or None,
        "clock_sm_mhz": _parse_mhz(clock_sm),
        "clock_mem_mhz": _parse_mhz(clock_mem),
        "clock_max_sm_mhz": _parse_mhz(clock_max_sm),
    }


def _driver_version_from_proc() -> str | None:
    """The kernel module's version, for machines where nvidia-smi is missing."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for token in text.split():
        parts = token.split(".")
        if len(parts) >= 2 and all(part.isdigit() for part in parts):
            return token
    return None


def _tf32_settings() -> dict[str, Any]:
    settings: dict[str, Any] = {}
    with warnings.catch_warnings():
        # Newer torch warns that allow_tf32 is superseded by fp32_precision; both are recorded.
        warnings.simplefilter("ignore")
        settings["cudnn_allow_tf32"] = bool(torch.backends.cudnn.allow_tf32)
        settings["cuda_matmul_allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
        settings["float32_matmul_precision"] = torch.get_float32_matmul_precision()
        for label, backend in (("cuda_matmul_fp32_precision", torch.backends.cuda.matmul),
                               ("cudnn_fp32_precision", torch.backends.cudnn)):
            value = getattr(backend, "fp32_precision", None)
            if value is not None:
                settings[label] = str(value)
    return settings


def _gpu_facts(device: torch.device) -> tuple[str, dict[str, Any], str | None]:
    """(product name, details, driver version) of one CUDA device."""
    # torch's stub types device.index as int, but it is None for a bare torch.device("cuda").
    index = device.index if device.index is not None else torch.cuda.current_device()  # type: ignore[redundant-expr]
    properties = torch.cuda.get_device_properties(index)
    product_name = torch.cuda.get_device_name(index)
    details: dict[str, Any] = {
        "device_type": "cuda",
        "compute_capability": f"{properties.major}.{properties.minor}",
        "sm_count": properties.multi_processor_count,
        "memory_bytes": properties.total_memory,
        "l2_cache_bytes": getattr(properties, "L2_cache_size", None),
        "visible_gpu_count": torch.cuda.device_count(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
    }
    details.update(_tf32_settings())

    # The UUID names the same GPU for nvidia-smi whatever CUDA_VISIBLE_DEVICES renumbered.
    uuid = getattr(properties, "uuid", None)
    if uuid:
        uuid_text = str(uuid)
        selector = uuid_text if uuid_text.startswith("GPU-") else f"GPU-{uuid_text}"
    elif "CUDA_VISIBLE_DEVICES" not in os.environ:
        selector = str(index)
    else:
        selector = None
    smi = query_nvidia_smi(selector)
    if not smi and selector is not None:
        smi = query_nvidia_smi(None)
    details["nvidia_smi_available"] = bool(smi)
    for key in ("clock_sm_mhz", "clock_mem_mhz", "clock_max_sm_mhz"):
        details[key] = smi.get(key)
    driver = smi.get("driver_version") or _driver_version_from_proc()
    return product_name, details, driver


def _cpu_facts() -> tuple[str, dict[str, Any]]:
    product_name = cpu_model_name()
    details: dict[str, Any] = {
        "device_type": "cpu",
        "cpu_model": product_name,
        "machine": platform.machine(),
        "os": platform.system(),
        "logical_cores": os.cpu_count(),
        "physical_cores": _physical_core_count(),
        "usable_cores": _usable_cpu_count(),
        "torch_num_threads": torch.get_num_threads(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    return product_name, details


def capture_environment(
    device: str | torch.device,
    *,
    provider: str | None = None,
    label: str | None = None,
    catalogue_path: str | Path | None = None,
) -> dict[str, Any]:
    """The record's environment object for runs on ``device``.

    provider and label default to $KERNELINDEX_PROVIDER and $KERNELINDEX_LABEL, else null.
    details carries everything else captured plus ``fingerprint``.
    """
    device = torch.device(device)
    provider = provider if provider is not None else os.environ.get(PROVIDER_ENV) or None
    label = label if label is not None else os.environ.get(LABEL_ENV) or None

    if device.type == "cuda":
        product_name, details, driver = _gpu_facts(device)
        details["cpu_model"] = cpu_model_name()
        sku = sku_for_product_name(product_name, load_catalogue(catalogue_path))
    else:
        product_name, details = _cpu_facts()
        driver = None
        # The catalogue lists GPUs only; a CPU is named by its model string.
        sku = None

    hardware: dict[str, str] = {"product_name": product_name}
    if sku:
        hardware = {"sku": sku, "product_name": product_name}

    environment: dict[str, Any] = {
        "hardware": hardware,
        "provider": provider,
        "label": label,
        "software": {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "driver": driver,
            "python": platform.python_version(),
            "triton": _triton_version(),
        },
        "details": details,
    }
    environment["details"]["fingerprint"] = fingerprint(environment)
    return environment


def describe_device(payload: dict[str, Any]) -> dict[str, Any]:
    """Sandbox entry point (``Sandbox.run("benchmarks.environment:describe_device", {...})``): the
    environment object of ``payload["device"]``, so a worker learns its SKU without importing torch or
    touching the device in its own process."""
    return capture_environment(payload.get("device") or "cpu", provider=payload.get("provider"), label=payload.get("label"))
