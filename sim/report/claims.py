"""A published result beside ours (:class:`Claim`) and the study it comes from (:class:`Finding`): the values
``csim findings`` prints, shared by :mod:`sim.report.findings` and :mod:`sim.report.findings_2026`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Claim:
    """One published result: what the study reported, what we measured, and whether the direction holds."""

    statement: str
    theirs: str
    ours: str
    holds: bool
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "holds", bool(self.holds))  # a numpy comparison gives numpy's bool


@dataclass(frozen=True)
class Finding:
    key: str
    title: str
    source: str
    claims: tuple[Claim, ...] = field(default_factory=tuple)


__all__ = ["Claim", "Finding"]
