"""The dynamic layer: run candidate and reference in separate fresh interpreters on inputs the
candidate has never seen, compare in the auditor, and confirm or refute the static suspects.

Only this package imports torch, and only when dynamic confirmation is asked for."""
