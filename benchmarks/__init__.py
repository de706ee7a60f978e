"""Benchmark scripts (not tests): ``python -m benchmarks.<name>`` from the repository root."""
