"""What a session's workers may take and where they run: the memory and disk budgets (claimed
on the machine-wide ledger), a worker's limits and environment, and a run on the device that
reruns beside the others, or alone, where the GPU ran out of memory."""
from __future__ import annotations


import contextlib


from hackscan.dynamic.budgets import NeverFits, WaitedTooLong
from hackscan.dynamic.gpugate import gpu_memory_in_use, gpu_turn, ran_out_of_gpu_memory
from hackscan.dynamic.builds import cache_root
from hackscan.dynamic.runner import Limits


class Resources:
    """The resource side of a DynamicSession (a mixin: the session's options and budgets)."""

    def memory_budget(self) -> int:
        """Bytes a problem's working set may ever take on this machine: the option where given,
        else the machine's capacity (budgets.memory_capacity: fixed, never what audits beside
        this one left free); how much of it a run holds is claimed on the ledger."""
        return self.budgets.capacity()

    @contextlib.contextmanager
    def disk_budget(self, share: int = 8, need: int | None = None, what: str = "a worker"):
        """Bytes one worker may write (its input sets, its outputs), promised on the machine-wide
        ledger for as long as it runs (budgets.Budgets.disk): 1/share of the disk that is free
        and not promised to a running worker of any hackscan process (a reference, which writes
        every input set of its problem, gets a third; a candidate an eighth), at least 1 GiB,
        waiting for room where less is left. Several full-size problems audited at once, in one
        process or many, then cannot fill the disk between them; each worker also keeps a floor
        free (worker._disk_guard), and a set or output over its budget is skipped with the
        reason. `need`: what the worker can write at most (a candidate: its outputs on every
        planned call), promised instead where it is less, so that the disk a candidate never
        writes stays free for the references beside it."""
        with self.budgets.disk(share, need, what) as n:
            yield n

    def worker_limits(self, output_bytes: int | None = None) -> Limits:
        """A worker's limits. Outputs of a full-size problem go through files: the largest file a
        worker may write is 1 GiB or, for a candidate, twice the reference's outputs where those
        are larger; the reference (the problem's own code, outputs not known in advance) may
        write up to the memory budget."""
        budget = self.memory_budget()
        files = max(1 << 30, budget) if output_bytes is None else max(1 << 30, 2 * output_bytes + (64 << 20))
        return Limits(timeout_s=self.opts.timeout_s, file_bytes=files,
                      memory_bytes=None if self.opts.device == "cuda" else max(budget * 2, 8 << 30),
                      # the session's folder (references' inputs, other candidates' outputs) and
                      # every other build shown empty to the worker
                      hide=(str(self.work), str(cache_root())))

    def run_on_device(self, run, before_rerun=None):
        """`run()` (a worker's run) holding this session's GPU shared with other audits. Where it
        ran out of the GPU's memory beside them, it runs again, first beside them once the
        memory it said it had in use (torch's message: this process's memory and the allocation
        that failed) is free on the machine's ledger, so that only claims that would not fit
        beside it make it wait; alone on the GPU (gpugate: every audit on this GPU waits) only
        where that is not known or it ran out again. The rerun's result says so in its events,
        and each turn's wait is recorded."""
        visible = self.worker_env().get("CUDA_VISIBLE_DEVICES")
        with gpu_turn(self.opts.device, visible=visible) as waited:
            if self.opts.device == "cuda":
                self.budgets.note({"turn": "gpu shared", "waited_s": round(waited(), 3)})
            res = run()
        if self.opts.device != "cuda" or not ran_out_of_gpu_memory(res):
            return res
        first = (res.error or "a call ran out of GPU memory")[:160]
        need = gpu_memory_in_use(res)
        if need is not None:
            try:
                with self.budgets.memory(need, "a rerun after running out of GPU memory", visible), \
                        gpu_turn(self.opts.device, visible=visible):
                    if before_rerun is not None:
                        before_rerun()
                    res = run()
                res.data.setdefault("events", []).append(
                    f"run again beside other audits once {need:,} bytes of GPU memory were free on the machine's "
                    f"ledger, after running out of its memory beside them ({first})")
                if not ran_out_of_gpu_memory(res):
                    return res
            except (NeverFits, WaitedTooLong) as e:
                res.data.setdefault("events", []).append(f"no room for a rerun beside other audits: {e}"[:300])
        with gpu_turn(self.opts.device, alone=True, visible=visible) as waited:
            self.budgets.note({"turn": "gpu alone", "waited_s": round(waited(), 3)})
            if before_rerun is not None:
                before_rerun()
            res = run()
        res.data.setdefault("events", []).append(
            f"run again alone on the GPU after running out of its memory beside other audits ({first})")
        return res

    def worker_env(self) -> dict[str, str]:
        """The variables every worker of this session gets beside the scrubbed environment."""
        env = {"OMP_NUM_THREADS": "1"}
        if self.opts.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif getattr(self._slot, "gpu", None) is not None:
            env["CUDA_VISIBLE_DEVICES"] = self._slot.gpu
        elif self.pinned is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.pinned
        return env

    # ---- one candidate ---------------------------------------------------------
