"""Ingest: turn external benchmark sources (KernelBench problems, run records) into KernelIndex workloads."""
