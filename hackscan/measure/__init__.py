"""Fair performance measurement: statistics of repeated timings, the
physical floor an operation cannot beat, and KernelBench-compatible summaries. The timing harness
that produces the samples runs inside the worker (hackscan/dynamic/worker/measurement.py)."""
