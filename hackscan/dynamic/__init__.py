"""The dynamic layer: run candidate and reference in separate fresh interpreters on inputs the
candidate has never seen, compare in the auditor, and confirm or refute the static suspects.

Only this package imports torch, and only when dynamic confirmation is asked for."""

# the floating dtypes a problem may be run in (KernelBench's `precision`): every floating input
# and both models cast to it
CAST_DTYPES = ("float32", "float16", "bfloat16", "float64")


def check_dtype(dtype: str | None) -> None:
    if dtype is not None and dtype not in CAST_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(CAST_DTYPES)} or None, not {dtype!r}")
