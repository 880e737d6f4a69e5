"""The worker: runs ONE model (the candidate or the reference) in its own fresh interpreter.

The runner copies this package into a scratch folder as `_hsworker/`, with `_entry.py` beside it
as `_worker.py`, and runs `python -I _worker.py JOBDIR` there. The package imports nothing from
hackscan (tests/test_layers.py checks it), so the audited code never shares an interpreter with
the auditor; it reads its instructions from JOBDIR/job.json and writes tensors and
JOBDIR/result.json.

Everything it reports is, for a candidate, untrusted: the candidate can patch anything in this
process. The auditor therefore only trusts what it can check itself (output tensors loaded with
`weights_only=True` and compared against a reference computed in another process); in-process
observations (checksums, state snapshots, types) are evidence, captured before the candidate is
imported where that matters.

Modules, each one part of the work: `driver` (the job from start to result), `steps` (the plan's
steps in a table by op), `inputs` (visible and hidden sets from the problem's generator),
`models` (construction, perturbation, high precision, state), `instrumentation` (counting
launches, graph replays, extension calls and builds), `profiler`, `measurement` (`--measure`),
`evidence` (global state, identities, isolation), `tensorfiles` (outputs and sets on disk) and
`common`. A new probe that needs a new kind of call adds one step function to `steps.STEPS`.
"""
