"""The results loader: a sweep directory and a ``csim run`` directory come back in the same shape."""

from __future__ import annotations

import gzip
import json
from hashlib import sha256
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.cli.main import main
from sim.core.config import normalise_run
from sim.core.errors import InvalidConfig
from sim.core.identity import config_label
from sim.sweep.driver import run_sweep
from sim.sweep.parts import TABLES, part_name
from sim.sweep.results import load_results, read_table, stored_log, write_parquet
from sim.sweep.spec import PolicyGrid, Source, SweepSpec

ARGS = [
    "--policy",
    "cloudflare-os",
    "-P",
    "trigger_ratio=0.5",
    "--scenario",
    "coding-agent",
    "-S",
    "turns=12",
    "-S",
    "huge_prob=0",
    "--window",
    "12000",
]


def test_csim_run_writes_the_sweep_of_its_one_configuration(tmp_path: Path) -> None:
    assert main(["run", *ARGS, "--seed", "0", "--out", str(tmp_path / "run")]) == 0
    one = load_results(tmp_path / "run")
    spec = SweepSpec(
        (PolicyGrid("cloudflare-os", (("trigger_ratio", ("0.5",)),)),),
        (Source("scenario", "coding-agent", (("turns", "12"), ("huge_prob", "0"))),),
        (0,),
        normalise_run({"window": 12000}, "test"),
    )
    run_sweep(spec, tmp_path / "sweep", workers=1, progress=False)
    many = load_results(tmp_path / "sweep")
    assert one.kind == many.kind == "sweep"
    assert one.runs["config"].tolist() == ["cloudflare-os trigger_ratio=0.5"]
    for name in TABLES:  # the same runs, the same keys: csim run is that sweep
        pd.testing.assert_frame_equal(getattr(one, name), getattr(many, name), obj=name)
    assert len(one.compactions) == int(one.runs["compaction_count"].iloc[0]) > 0
    assert stored_log(tmp_path / "run", one.runs["run_key"].iloc[0]) is not None  # csim run keeps its logs
    assert stored_log(tmp_path / "sweep", many.runs["run_key"].iloc[0]) is None  # a sweep only when asked


def test_a_table_file_is_json_that_pandas_reads_and_the_same_frame(tmp_path: Path) -> None:
    """A part's table is a gzipped JSON object of columns (no pandas or pyarrow to write it), which pandas reads
    as it is; a folder an older csim wrote with Parquet tables still loads, equal."""
    assert main(["run", *ARGS, "--seed", "0", "--out", str(tmp_path / "run")]) == 0
    now = load_results(tmp_path / "run")
    (part,) = (tmp_path / "run" / "parts").iterdir()
    direct = pd.DataFrame(json.loads(gzip.decompress((part / "requests.json.gz").read_bytes())))
    assert direct["context_tokens"].tolist() == now.requests["context_tokens"].tolist()
    listing = {}
    for table in [*TABLES, "logs"]:  # the same part as csim 0.1 wrote it: Parquet, a listing without file names
        path, frame = part / f"{table}.parquet", read_table(part, table)
        write_parquet(frame, path)
        data = path.read_bytes()
        listing[table] = {"rows": len(frame), "bytes": len(data), "sha256": sha256(data).hexdigest()}
    for table in listing:
        (part / f"{table}.json.gz").unlink()
    (part / "part.json").write_text(json.dumps({"tables": listing}))
    old = load_results(tmp_path / "run")
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(old, name), getattr(now, name), obj=name)
    assert stored_log(tmp_path / "run", now.runs["run_key"].iloc[0]) is not None


def test_an_old_run_directory_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(InvalidConfig, match="older csim run"):
        load_results(tmp_path)


def test_an_empty_sweep_has_typed_empty_frames(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": "sweep", "spec": {}, "total_runs": 0}))
    res = load_results(tmp_path)
    for name, cols in TABLES.items():
        frame = getattr(res, name)
        assert frame.empty and {c: str(t) for c, t in frame.dtypes.items()} == {c: str(t) for c, t in cols.items()}


def test_what_is_not_results_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="does not exist"):
        load_results(tmp_path / "missing")
    with pytest.raises(InvalidConfig, match="holds no manifest.json"):
        load_results(tmp_path)


@given(
    st.lists(st.text(alphabet="0123456789abcdef", min_size=4, max_size=8), min_size=1, max_size=6, unique=True),
    st.randoms(use_true_random=False),
)
def test_a_part_is_named_by_its_runs_in_any_order(keys: list[str], rnd: object) -> None:
    shuffled = list(keys)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert part_name(shuffled) == part_name(keys)
    assert part_name(keys + ["zzzz"]) != part_name(keys)


def test_labels_sort_parameters_and_spell_values_plainly() -> None:
    assert config_label("p", {"b": 0.8, "a": None, "c": True}) == "p a=unset b=0.8 c=true"
    assert config_label("none", {}) == "none"


def test_a_kept_log_reads_back_and_a_damaged_one_names_its_line() -> None:
    from policies import make_policy
    from sim.core.errors import FormatError
    from sim.core.log import decode_log, encode_log
    from sim.replay.engine import run
    from sim.scenarios import scenario_conversation

    res = run(make_policy("cloudflare-os"), scenario_conversation("support-chat", 0, {"turns": "20"}))
    header, events = decode_log(encode_log(res.log, {"run_key": "k"}), "test")
    assert header["run_key"] == "k" and len(events) == len(res.log)
    assert [e["kind"] for e in events] == [e.kind for e in res.log]
    with pytest.raises(FormatError, match="^test:2: not a JSON event"):
        decode_log(encode_log(res.log).replace("\n", "\n{oops\n", 1), "test")
    with pytest.raises(FormatError, match="schema_version"):
        decode_log('{"format":"csim-log","schema_version":1}\n', "test")
