"""A sweep's spec: policies with parameter lists, sources of conversations, seeds and the run options.

A spec is built in one place, :func:`spec_from_dict`, from a spec file's tables (``datasets/FORMAT-sweep.md``),
whatever it comes from: a TOML file (:func:`load_spec`), ``csim sweep`` flags (:func:`spec_from_flags`), the
Python API's arguments (:func:`sim.api.spec`), a results folder's manifest (:func:`spec_from_normalised`), the demo.
Its :meth:`~SweepSpec.normalised` dict is what a results folder's manifest stores.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.core.config import RunConfig, normalise_run, run_config
from sim.core.errors import FormatError, InvalidConfig, UnknownName
from sim.core.identity import config_label
from sim.core.params import parse_kv, parse_seeds, parse_values

SOURCE_KINDS = ("scenario", "dataset", "conversation")


# -- the spec -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyGrid:
    """One policy and, per parameter, the list of values to try (as strings, coerced by the policy's config)."""

    policy: str
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def settings(self) -> list[dict[str, str]]:
        """Every combination of the parameter values, in the order given."""
        names = [k for k, _ in self.params]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(v for _, v in self.params))]


@dataclass(frozen=True)
class Source:
    """Where conversations come from: a scenario (with parameters), a dataset by name, or a recorded file."""

    kind: str
    name: str
    params: tuple[tuple[str, str], ...] = ()
    format: str = "auto"
    lenient: bool = False
    #: Recordings without facts get probes mined from them (:mod:`sim.formats.probes`); False replays them bare.
    probes: bool = True

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise InvalidConfig(f"source kind {self.kind!r} must be one of {', '.join(SOURCE_KINDS)}")

    @property
    def label(self) -> str:
        """The ``source`` column: scenario name (and its parameters), dataset name, or the file's name."""
        if self.kind == "conversation":
            return Path(self.name).name
        return config_label(self.name, dict(self.params))

    def plain(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.kind == "scenario":
            out["params"] = dict(self.params)
        if self.kind == "conversation":
            out.update(format=self.format, lenient=self.lenient)
        if self.kind == "dataset" and self.lenient:
            out["lenient"] = True
        if self.kind != "scenario" and not self.probes:
            out["probes"] = False
        return out


@dataclass(frozen=True)
class SweepSpec:
    """A sweep's grid: policies with parameter lists, sources of conversations, seeds, and the run config."""

    policies: tuple[PolicyGrid, ...]
    sources: tuple[Source, ...]
    seeds: tuple[int, ...] = (0,)
    run: tuple[tuple[str, Any], ...] = ()
    name: str = ""

    def __post_init__(self) -> None:
        if not self.policies:
            raise InvalidConfig("a sweep needs at least one policy (--policy NAME, or [[policies]] in the spec)")
        if not self.sources:
            raise InvalidConfig(
                "a sweep needs conversations: --scenario, --dataset or --conversation "
                "(or [[scenarios]], [[datasets]], [[conversations]] in the spec)"
            )
        if not self.seeds:
            raise InvalidConfig("a sweep needs at least one seed (e.g. --seeds 0-19)")

    def normalised(self) -> dict[str, Any]:
        """The JSON-able form stored in the manifest; equal specs give equal dicts."""
        return {
            "name": self.name,
            "seeds": list(self.seeds),
            "run": dict(self.run),
            "policies": [{"policy": g.policy, "params": {k: list(v) for k, v in g.params}} for g in self.policies],
            "sources": [s.plain() for s in self.sources],
        }

    def run_config(self) -> RunConfig:
        return run_config(dict(self.run))


# -- reading specs ------------------------------------------------------------------------------------------
def load_spec(path: str | Path) -> SweepSpec:
    """Read a sweep spec (TOML); relative conversation paths are relative to the spec file."""
    import tomllib  # only for a spec file: a replay from the command line does without it

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidConfig(f"sweep spec {str(p)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(str(p), None, f"not valid TOML: {exc}", "see datasets/FORMAT-sweep.md") from None
    return spec_from_dict(data, p.parent, str(p))


_TOP_KEYS = ("sweep", "run", "policies", "scenarios", "datasets", "conversations")


def spec_from_dict(data: Mapping[str, Any], base: Path, where: str = "sweep spec") -> SweepSpec:
    """The spec of a spec file's tables (``datasets/FORMAT-sweep.md``), checked: every other way of giving a
    sweep (flags, the API's arguments, a results folder's manifest, the demo) comes here. Relative paths are
    relative to ``base``; ``where`` names the source in errors."""
    for key in data:
        if key not in _TOP_KEYS:
            raise UnknownName(f"table in {where}", key, _TOP_KEYS)
    head = dict(data.get("sweep", {}))
    for key in head:
        if key not in ("name", "seeds"):
            raise UnknownName(f"key of [sweep] in {where}", key, ("name", "seeds"))

    def entries(table: str, required: str, allowed: Sequence[str]) -> list[dict[str, Any]]:
        items = data.get(table, [])
        if not isinstance(items, list):
            raise InvalidConfig(f"{where}: {table} must be an array of tables ([[{table}]])")
        for i, item in enumerate(items):
            if required not in item:
                raise InvalidConfig(f"{where}: [[{table}]] number {i + 1} has no {required!r}")
            for key in item:
                if key not in allowed:
                    raise UnknownName(f"key of [[{table}]] in {where}", key, allowed)
        return items

    policies = tuple(
        PolicyGrid(str(e["policy"]), tuple((str(k), parse_values(v)) for k, v in e.get("params", {}).items()))
        for e in entries("policies", "policy", ("policy", "params"))
    )
    sources: list[Source] = []
    for e in entries("scenarios", "name", ("name", "params")):
        sources.extend(_scenario_sources(str(e["name"]), e.get("params", {})))
    for e in entries("datasets", "name", ("name", "lenient", "probes")):
        probes = _flag(e, "probes", where)
        sources.append(Source("dataset", str(e["name"]), lenient=bool(e.get("lenient", False)), probes=probes))
    for e in entries("conversations", "path", ("path", "format", "lenient", "probes")):
        path = Path(str(e["path"])).expanduser()
        path = path if path.is_absolute() else (base / path)
        sources.append(
            Source(
                "conversation",
                str(path.resolve()),
                format=str(e.get("format", "auto")),
                lenient=bool(e.get("lenient", False)),
                probes=_flag(e, "probes", where),
            )
        )
    run = dict(data.get("run", {}))
    if isinstance(run.get("calibration"), str):  # relative to the spec file, like the conversations
        cal = Path(run["calibration"]).expanduser()
        run["calibration"] = str((cal if cal.is_absolute() else base / cal).resolve())
    return SweepSpec(
        policies,
        tuple(sources),
        parse_seeds(head.get("seeds", 0)),
        normalise_run(run, where),
        str(head.get("name", "")),
    )


def _scenario_sources(name: str, params: Mapping[str, Any]) -> list[Source]:
    """A scenario with list-valued parameters becomes one source per combination."""
    names = list(params)
    combos = itertools.product(*(parse_values(params[k]) for k in names))
    return [Source("scenario", name, tuple(zip(names, combo, strict=True))) for combo in combos]


def _flag(entry: Mapping[str, Any], key: str, where: str) -> bool:
    """A boolean key of a table entry (default true), refusing anything but true or false."""
    value = entry.get(key, True)
    if not isinstance(value, bool):
        raise InvalidConfig(f"{where}: {key} = {value!r} must be true or false")
    return value


def spec_from_flags(
    policies: Sequence[tuple[str, Sequence[str]]],
    *,
    scenarios: Sequence[tuple[str, Sequence[str]]] = (),
    datasets: Sequence[str] = (),
    conversations: Sequence[str] = (),
    format: str = "auto",
    lenient: bool = False,
    seeds: str | None = None,
    run: Mapping[str, Any] | None = None,
    probes: bool = True,
) -> SweepSpec:
    """The spec of ``csim sweep``'s grid flags: each policy and scenario with its ``NAME=V1,V2`` items (``-P``,
    ``-S``), datasets, recorded files (relative to the working directory), seeds, and the run options given."""
    given = dict(run or {})
    if isinstance(given.get("summariser"), (list, tuple)):  # -R NAME=VALUE, repeated
        given["summariser"] = parse_kv(given["summariser"], "-R")
    data = {
        "sweep": {"seeds": "0" if seeds is None else seeds},
        "run": given,
        "policies": [{"policy": name, "params": parse_kv(items, "-P")} for name, items in policies],
        "scenarios": [{"name": name, "params": parse_kv(items, "-S")} for name, items in scenarios],
        "datasets": [{"name": d, **({} if probes else {"probes": False})} for d in datasets],
        "conversations": [
            {"path": c, "format": format, "lenient": lenient, **({} if probes else {"probes": False})}
            for c in conversations
        ],
    }
    return spec_from_dict(data, Path.cwd(), "flags")


def spec_from_normalised(spec: Mapping[str, Any], refused: Sequence[str] = ()) -> SweepSpec | None:
    """The spec a results folder's manifest stores (:meth:`SweepSpec.normalised`), less the grids of the
    ``refused`` policy references; None when no grid is left."""
    policies = [
        {"policy": g["policy"], "params": dict(g.get("params", {}))}
        for g in spec["policies"]
        if str(g.get("policy")) not in refused
    ]
    if not policies:
        return None
    tables: dict[str, list[dict[str, Any]]] = {"scenarios": [], "datasets": [], "conversations": []}
    for src in spec["sources"]:
        entry = {k: v for k, v in src.items() if k != "kind"}
        if src["kind"] == "conversation":
            entry["path"] = entry.pop("name")
        tables[f"{src['kind']}s"].append(entry)
    data = {"sweep": {"name": spec.get("name", ""), "seeds": list(spec["seeds"])}, "run": dict(spec.get("run", {}))}
    return spec_from_dict({**data, "policies": policies, **tables}, Path.cwd(), "a results folder's manifest")


__all__ = [
    "SOURCE_KINDS",
    "PolicyGrid",
    "Source",
    "SweepSpec",
    "load_spec",
    "spec_from_dict",
    "spec_from_flags",
    "spec_from_normalised",
]
