"""A candidate and its reference read once, into an immutable record of their bytes and hashes:
the candidate, the C++/CUDA sources and helper modules beside it (what its build and import
read), the reference and its helper modules. Every stage after the read works from the record
(written into a private folder of the auditor's), never from the submitter's paths again: a file
that changes or vanishes mid-audit can neither raise later nor give a different answer than the
one checked first, and a record whose candidate differs from what the static pass read is
refused, since its findings were about other bytes."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from hackscan.inputs.siblings import HELPERS_LIST, helper_files, sibling_sources


class Changed(Exception):
    """The submission's files are not what an earlier stage read."""


@dataclass(frozen=True)
class FileRecord:
    name: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def sha256_of(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _read(path: Path) -> FileRecord:
    return FileRecord(path.name, path.read_bytes())


@dataclass(frozen=True)
class PairRecord:
    candidate: FileRecord
    sources: tuple[FileRecord, ...]              # C++/CUDA beside the candidate
    candidate_helpers: tuple[FileRecord, ...]    # modules an adapted candidate imports (HELPERS_LIST)
    reference: FileRecord | None
    reference_helpers: tuple[FileRecord, ...] = ()

    @classmethod
    def read(cls, cand_path: Path, ref_path: Path | None) -> PairRecord:
        """Every file of the pair, read now (OSError where one cannot be)."""
        helpers = {p.name for p in helper_files(cand_path)}
        sibs = [p for p in sibling_sources(cand_path) if p.name != cand_path.name]
        return cls(_read(cand_path), tuple(_read(p) for p in sibs if p.name not in helpers),
                   tuple(_read(p) for p in sibs if p.name in helpers),
                   _read(ref_path) if ref_path is not None else None,
                   tuple(_read(p) for p in helper_files(ref_path)) if ref_path is not None else ())

    def check(self, candidate_sha256: str | None, reference_sha256: str | None) -> None:
        """Raise Changed where the candidate or reference is not what the static pass read."""
        for what, want, got in (("candidate", candidate_sha256, self.candidate.sha256),
                                ("reference", reference_sha256, self.reference.sha256 if self.reference else None)):
            if want is not None and got != want:
                raise Changed(f"the {what} changed between the static pass and the dynamic audit "
                              f"(sha256 {want[:12]} then {str(got)[:12]}): its findings were about other bytes; "
                              "audit it again")

    def write(self, folder: Path) -> tuple[Path, Path | None]:
        """The record as files in `folder` (the candidate with its sources and helpers, the
        reference with its helpers apart): the paths every later stage reads."""
        cand = _write_beside(folder / "candidate", self.candidate, self.sources, self.candidate_helpers)
        if self.reference is None:
            return cand, None
        return cand, _write_beside(folder / "reference", self.reference, (), self.reference_helpers)


def _write_beside(d: Path, main: FileRecord, others: tuple[FileRecord, ...], helpers: tuple[FileRecord, ...]) -> Path:
    d.mkdir(parents=True)
    for f in (main, *others, *helpers):
        (d / f.name).write_bytes(f.data)
    if helpers:
        (d / HELPERS_LIST).write_text("".join(f.name + "\n" for f in helpers))
    return d / main.name
