"""Every registered format, corrupted: strict mode raises only FormatError naming the file (and line);
lenient mode never raises for a record-level problem, reports each skip, and keeps what came before.

Each format has one small valid sample under ``tests/golden/formats/`` (the dict below; a format that
is registered without a sample fails :func:`test_every_registered_format_has_a_sample`). Hypothesis
corrupts it two ways: at the byte level (truncated at a random byte, invalid UTF-8 bytes, an empty
file) and at the record level (a field given the wrong type, a key removed, a record duplicated so
its ids repeat, a record dropped so later tool results lose their calls). A 50 MB single line is
tried once per format, outside Hypothesis. "What came before" is checked by importing the records
before the damaged one on their own: each of their (conversation id, message id) pairs must still be
in the lenient import of the damaged file.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.core.errors import FormatError
from sim.formats import FORMATS, ImportResult, read
from sim.formats import _load as load_formats

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "formats"

#: format -> (sample file, where its records are). ``None``: JSONL, one record per line; a tuple of
#: keys: a JSON/YAML document whose records are the list at that path (``()``: the top-level list).
SAMPLES: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "native": ("native.jsonl", None),
    "claude-code": ("claude_code.jsonl", None),
    "codex-rollout": ("codex_rollout.jsonl", None),
    "anthropic-messages": ("anthropic_messages.jsonl", None),
    "openai-chat": ("openai_chat.json", ()),
    "openai-responses": ("openai_responses.json", ("request", "input")),
    "vcr-cassette": ("vcr_cassette.yaml", ("interactions",)),
    "swe-agent": ("swe_agent.traj", ("history",)),
    "mini-swe-agent": ("mini_swe_agent.traj.json", ("messages",)),
    "openhands-events": ("openhands_events.json", ()),
    "openhands-eval": ("openhands_eval.jsonl", None),
    "openhands-llm": ("openhands_llm.json", ("messages",)),
    "tau-bench": ("tau_bench.json", ()),
    "kv-trace": ("kv_trace.json", ("requests",)),
}
#: Records whose damage is document-level by design: native's first line is the file's header.
DOCUMENT_RECORDS = {"native": {0}}
WRONG = [42, "x", None, [], {}, True, 1.5]


def _registered() -> list[str]:
    load_formats()
    return FORMATS.names()


def test_every_registered_format_has_a_sample() -> None:
    missing = sorted(set(_registered()) - set(SAMPLES))
    assert not missing, f"registered formats without a corruption sample in SAMPLES: {missing}"
    for name, (file, _) in SAMPLES.items():
        if name in _registered():
            assert (GOLDEN / file).is_file(), f"sample {file} of {name} is missing"


FORMAT_NAMES = sorted(n for n in SAMPLES if n in _registered())


# --- helpers -------------------------------------------------------------------------------------


def _ids(result: ImportResult) -> set[tuple[str, str]]:
    """(conversation id, message id) of every message, less the aborted results a repair synthesised:
    a prefix cut between a call and its result gets one the whole file does not need."""
    return {(c.id, m.id) for c in result.conversations for m in c.messages if not m.meta.get("synthetic")}


def _load_doc(fmt: str) -> Any:
    text = (GOLDEN / SAMPLES[fmt][0]).read_text(encoding="utf-8")
    return yaml.safe_load(text) if SAMPLES[fmt][0].endswith(".yaml") else json.loads(text)


def _dump_doc(fmt: str, doc: Any) -> bytes:
    if SAMPLES[fmt][0].endswith(".yaml"):
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode("utf-8")
    return json.dumps(doc, indent=1, ensure_ascii=False).encode("utf-8")


def _records(fmt: str, doc: Any) -> list[Any]:
    node = doc
    for key in SAMPLES[fmt][1] or ():
        node = node[key]
    assert isinstance(node, list)
    return node


def _with_records(fmt: str, doc: Any, records: list[Any]) -> Any:
    """A deep copy of ``doc`` whose record list is ``records``."""
    copy = json.loads(json.dumps(doc))
    path = SAMPLES[fmt][1] or ()
    if not path:
        return records
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = records
    return copy


def _write(dirpath: Path, fmt: str, data: bytes) -> Path:
    dirpath.mkdir(parents=True, exist_ok=True)
    p = dirpath / SAMPLES[fmt][0]  # same name as the sample: conversation ids derive from it
    p.write_bytes(data)
    return p


def _strict(path: Path, fmt: str, line_based: bool) -> None:
    """Strict import either succeeds or raises a FormatError naming the file (and line, for JSONL)."""
    try:
        read(path, fmt)
    except FormatError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        if line_based and "empty file" not in str(exc):
            assert exc.line is not None, f"a JSONL problem without its line: {exc}"


def _lenient(path: Path, fmt: str, document_level_ok: bool) -> ImportResult | None:
    try:
        result = read(path, fmt, lenient=True)
    except FormatError:
        if document_level_ok:
            return None
        raise
    for s in result.skipped:
        assert s.path == str(path) and s.reason
    return result


def _prefix_ids(tmp: Path, fmt: str, data: bytes) -> set[tuple[str, str]] | None:
    """The ids an import of the records before the damage yields (None when that prefix is not importable)."""
    try:
        result = read(_write(tmp, fmt, data), fmt, lenient=True)
    except FormatError:
        return None
    if SAMPLES[fmt][1] is not None:
        # A cut document can end in a message the whole one numbers differently: a recorded response
        # appended after the request's messages takes its id from their count. Those are not compared.
        for c in result.conversations:
            result.conversations[result.conversations.index(c)] = replace(c, messages=c.messages[:-1])
    return _ids(result)


# --- byte-level damage ---------------------------------------------------------------------------


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fmt=st.sampled_from(FORMAT_NAMES),
    kind=st.sampled_from(["truncate", "bad-utf8", "empty"]),
    where=st.floats(0, 1, exclude_max=True),
)
def test_byte_damage(tmp_path: Path, fmt: str, kind: str, where: float) -> None:
    sample = (GOLDEN / SAMPLES[fmt][0]).read_bytes()
    line_based = SAMPLES[fmt][1] is None
    cut = int(where * len(sample))
    if kind == "truncate":
        data = sample[:cut]
    elif kind == "bad-utf8":
        data = sample[:cut] + b"\xff\xfe\xc3" + sample[cut:]
    else:
        data = b""
    path = _write(tmp_path / "damaged", fmt, data)
    _strict(path, fmt, line_based)
    damaged_line = data.count(b"\n", 0, cut)  # 0-based index of the damaged line
    document_level = not line_based or not data.strip() or damaged_line in DOCUMENT_RECORDS.get(fmt, set())
    result = _lenient(path, fmt, document_level)
    if result is None or not line_based:
        return
    before = b"".join(sample.splitlines(keepends=True)[:damaged_line])
    expected = _prefix_ids(tmp_path / "prefix", fmt, before) if before.strip() else None
    if expected is not None:
        assert expected <= _ids(result), f"lenient import lost records before line {damaged_line + 1}"


# --- record-level damage -------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (keys and list indexes)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _mutate(record: Any, path: tuple[Any, ...], how: str, wrong: Any) -> Any:
    """``record`` with the value at ``path`` replaced by ``wrong`` or removed (a copy)."""
    copy = json.loads(json.dumps(record))
    if not path:
        return wrong
    node = copy
    for key in path[:-1]:
        node = node[key]
    if how == "remove":
        del node[path[-1]]
    else:
        if type(node[path[-1]]) is type(wrong):
            wrong = "x" if not isinstance(wrong, str) else 42
        node[path[-1]] = wrong
    return copy


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_record_damage(tmp_path: Path, data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(FORMAT_NAMES), label="format")
    line_based = SAMPLES[fmt][1] is None
    if line_based:
        records: list[Any] = [json.loads(x) for x in (GOLDEN / SAMPLES[fmt][0]).read_text("utf-8").splitlines() if x]
        doc = None
    else:
        doc = _load_doc(fmt)
        records = list(_records(fmt, doc))
    i = data.draw(st.integers(0, len(records) - 1), label="record")
    how = data.draw(st.sampled_from(["wrong-type", "remove", "duplicate", "drop"]), label="how")
    damaged = list(records)
    if how == "duplicate":
        damaged.insert(i + 1, records[i])
    elif how == "drop":
        del damaged[i]
    else:
        paths = [p for p in _paths(records[i]) if how == "wrong-type" or (p and not isinstance(p[-1], int))]
        if not paths:
            return
        path = data.draw(st.sampled_from(paths), label="path")
        damaged[i] = _mutate(records[i], path, how, data.draw(st.sampled_from(WRONG), label="wrong"))

    def encode(recs: list[Any]) -> bytes:
        if line_based:
            return b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in recs)
        return _dump_doc(fmt, _with_records(fmt, doc, recs))

    path_ = _write(tmp_path / "damaged", fmt, encode(damaged))
    _strict(path_, fmt, line_based)
    document_level = i in DOCUMENT_RECORDS.get(fmt, set()) or (how == "drop" and i == 0 and line_based)
    result = _lenient(path_, fmt, document_level)
    if result is None or not records[:i]:
        return
    expected = _prefix_ids(tmp_path / "prefix", fmt, encode(records[:i]))
    if expected is not None:
        assert expected <= _ids(result), f"lenient import lost what came before record {i} ({how})"


# --- one huge line -------------------------------------------------------------------------------


#: The 50 MB line is tried on every JSONL format (where it must name its line) and on one document
#: format of each parser (JSON, YAML); more would only repeat the same parser at a cost of seconds.
HUGE_LINE_FORMATS = sorted({n for n in FORMAT_NAMES if SAMPLES[n][1] is None} | {"openai-chat", "vcr-cassette"})


@pytest.mark.parametrize("fmt", HUGE_LINE_FORMATS)
def test_fifty_megabyte_line(tmp_path: Path, fmt: str) -> None:
    """A 50 MB line after the sample: a clear error (strict) or a skip that keeps the rest (lenient)."""
    sample = (GOLDEN / SAMPLES[fmt][0]).read_bytes().rstrip(b"\n")
    n_lines = sample.count(b"\n") + 2
    path = tmp_path / SAMPLES[fmt][0]
    with path.open("wb") as fh:
        fh.write(sample + b"\n" + b'{"x": "' + b"a" * (50 * 1024 * 1024) + b"\n")
    line_based = SAMPLES[fmt][1] is None
    try:
        with pytest.raises(FormatError) as info:
            read(path, fmt)
        assert str(info.value).startswith(str(path))
        if line_based:
            assert info.value.line == n_lines
            result = _lenient(path, fmt, document_level_ok=False)
            assert result is not None
            assert _ids(read(GOLDEN / SAMPLES[fmt][0], fmt)) <= _ids(result)
            assert [s.line for s in result.skipped if "invalid JSON" in s.reason] == [n_lines]
        else:
            _lenient(path, fmt, document_level_ok=True)
    finally:
        path.unlink()


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_sample_is_auto_detected(fmt: str) -> None:
    """``--format auto`` picks each format for its own sample, and no other format claims it."""
    from sim.formats import detect

    assert detect(GOLDEN / SAMPLES[fmt][0]) == fmt
