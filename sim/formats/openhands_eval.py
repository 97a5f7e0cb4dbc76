"""Importer of OpenHands evaluation output (``output.jsonl``: one evaluated instance per line).

Every OpenHands benchmark run (SWE-bench and the others under ``evaluation/benchmarks``) writes its results
with ``update_progress``: one ``EvalOutput.model_dump_json()`` per line. ``EvalOutput``
(``evaluation/utils/shared.py``) holds, in this order, ``instance_id``, ``test_result`` (what the scorer
needs, e.g. ``git_patch``), ``instruction``, ``metadata`` (``EvalMetadata``: ``agent_class``,
``llm_config``, ``max_iterations``, ...), ``history``, ``metrics``, ``error`` and ``instance``. The
``history`` is ``[event_to_dict(e) for e in state.history]``: the same action and observation events that an
OpenHands event stream holds (``openhands/events/serialization/event.py``), ``tool_call_metadata`` with
each reply's LiteLLM ``model_response`` included; the older form, a list of ``[action, observation]`` pairs,
is still allowed by the type. ``metrics`` is ``Metrics.get()`` (``openhands/llm/metrics.py``), via
``get_metrics``: ``accumulated_cost``, ``accumulated_token_usage``, ``costs``, ``response_latencies``,
``condenser`` and ``token_usages``, one ``TokenUsage`` per completion call with ``prompt_tokens`` (the whole
prompt, as LiteLLM reports it), ``completion_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
``context_window`` and ``response_id`` (``LLM._post_completion`` in ``openhands/llm/llm.py``). Facts read from
``All-Hands-AI/OpenHands`` at commit 156d0686c46aafb0fa9d291da6421fb6f64dddc0 (2025-11-28), whose
``evaluation/benchmarks/multi_swe_bench/examples/output.jsonl`` shows the layout.

The mapping: each line is one conversation, id ``instance_id``. Its ``history`` is read by
:func:`sim.formats.openhands_events.events_conversation`, the OpenHands event importer's own code (pairs
are flattened into one list, an empty ``null`` observation dropped); ``instruction`` is not added, since
the run's first user message in ``history`` already holds it (``run_infer`` sends it as that message). A
reply whose model response id has a ``metrics.token_usages`` entry takes its usage from there: uncached
input is ``prompt_tokens`` less the cache reads and writes (as :func:`sim.formats.usage.chat_usage` reads
LiteLLM usage); a reply without one keeps the ``model_response.usage`` the event carries. Usages that
match no reply (a condenser's calls, a plain-text reply whose event does not keep its response) are
counted in meta, never guessed onto a reply. An instance without history (one that failed before it ran,
as ``log_skipped_maximum_retries_exceeded`` writes) gives no conversation and is listed as skipped in
both modes; so is every line of the scored copy that SWE-bench's ``eval_infer.py`` writes beside it
(``output.swebench_eval.jsonl``: ``EvalOutput`` lines with a ``test_result.report`` and no history).
Problems name the file, the line and the instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.core.conversation import Conversation, Usage
from sim.formats import FORMATS, ImportResult, Skipped, sniffer
from sim.formats._common import BadRecord, Issues, check, clip, get, read_jsonl, shown
from sim.formats._json_records import compact_head
from sim.formats.openhands_events import events_conversation

_EXPECTED = "OpenHands evaluation output: one JSON object per line with 'instance_id', 'history' (events) and 'metrics'"
_COUNTS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens")


@FORMATS.register(
    "openhands-eval", "OpenHands evaluation output.jsonl (one instance per line: history events, metrics)"
)
def read(path: Path, *, lenient: bool = False) -> ImportResult:
    """Read every instance of an OpenHands ``output.jsonl`` as one conversation each."""
    path = Path(path)
    issues = Issues(path, lenient)
    result = ImportResult(skipped=issues.skipped)
    first_line: dict[str, int] = {}
    for line, raw in read_jsonl(path, issues, _EXPECTED):
        with issues.record(line, f"line {line}"):
            check(raw, dict, f"line {line}")
            iid = get(raw, "instance_id", (str, int), f"line {line}")
            label = f"instance {str(iid)!r}"
            if str(iid) in first_line:
                raise BadRecord(f"{label} appears again (first on line {first_line[str(iid)]})")
            first_line[str(iid)] = line
            conv = _instance(raw, str(iid), label, line, issues)
            if conv is not None:
                result.conversations.append(conv)
    if not first_line and not issues.skipped:
        raise issues.fatal(1, "no instance in the file", _EXPECTED)
    return result


def _instance(raw: dict[str, Any], iid: str, label: str, line: int, issues: Issues) -> Conversation | None:
    history = get(raw, "history", list, label, None)
    error = raw.get("error") if isinstance(raw.get("error"), str) else None
    if not history:
        why = f"{label} has no history" + (f" (its error: {clip(error, 120)})" if error else "")
        issues.skipped.append(Skipped(issues.path, line, why))
        return None
    events = _flatten(history, label)
    metrics = get(raw, "metrics", dict, label, {})
    usages, no_id = _token_usages(metrics, label, line, issues)
    meta: dict[str, Any] = {"source": "openhands-eval", "instance_id": iid, "token_usages_without_id": no_id}
    meta.update(_summary(raw, metrics, error))
    return events_conversation(
        events, iid, issues, lambda _k: line, label=f"{label} ", line=line, usage_by_response=usages, meta=meta
    )


def _flatten(history: list[Any], label: str) -> list[Any]:
    """The events of ``history``; the old ``[action, observation]`` pairs become two events (a ``null``
    observation, which the old format paired with actions that had none, is dropped)."""
    if not all(isinstance(h, list) for h in history):
        return history
    events: list[Any] = []
    for k, pair in enumerate(history):
        if len(pair) != 2:
            raise BadRecord(f"{label} history[{k}] should be an [action, observation] pair, got {shown(pair)}")
        action, observation = pair
        events.append(action)
        if not (isinstance(observation, dict) and observation.get("observation") == "null"):
            events.append(observation)
    return events


def _token_usages(metrics: dict[str, Any], label: str, line: int, issues: Issues) -> tuple[dict[str, Usage], int]:
    """``metrics.token_usages`` by response id (the first entry of an id), and how many entries have no id."""
    out: dict[str, Usage] = {}
    no_id = 0
    for k, raw in enumerate(get(metrics, "token_usages", list, f"{label} metrics", [])):
        what = f"{label} metrics.token_usages[{k}]"
        with issues.record(line, what):
            check(raw, dict, what)
            counts = {}
            for key in _COUNTS:
                counts[key] = get(raw, key, int, what, 0)
                if counts[key] < 0:
                    raise BadRecord(f"{what} {key!r} is negative ({counts[key]})")
            prompt, read_, write = counts["prompt_tokens"], counts["cache_read_tokens"], counts["cache_write_tokens"]
            if read_ > prompt:
                raise BadRecord(f"{what} has cache_read_tokens {read_} above prompt_tokens {prompt}")
            uncached = prompt - read_ - write if prompt - read_ - write >= 0 else prompt - read_
            usage = Usage(uncached, counts["completion_tokens"], read_, write)
            rid = get(raw, "response_id", str, what, "")
            if not rid or rid == "unknown":  # LLM._post_completion writes 'unknown' for a response without id
                no_id += 1
            elif rid not in out:
                out[rid] = usage
    return out, no_id


def _summary(raw: dict[str, Any], metrics: dict[str, Any], error: str | None) -> dict[str, Any]:
    """What the instance's line says about the run, beyond its events: small values only."""
    out: dict[str, Any] = {}
    cost = metrics.get("accumulated_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        out["accumulated_cost"] = cost
    total = metrics.get("accumulated_token_usage")
    if isinstance(total, dict):
        out["recorded_totals"] = {
            k: v for k, v in sorted(total.items()) if k in _COUNTS and isinstance(v, int) and not isinstance(v, bool)
        }
    metadata = raw.get("metadata")
    if isinstance(metadata, dict):
        if isinstance(metadata.get("agent_class"), str):
            out["agent_class"] = metadata["agent_class"]
        llm = metadata.get("llm_config")
        if isinstance(llm, dict) and isinstance(llm.get("model"), str):
            out["model_name"] = llm["model"]
    test_result = raw.get("test_result")
    if isinstance(test_result, dict):
        out["test_result_keys"] = sorted(str(k) for k in test_result)
        report = test_result.get("report")
        if isinstance(report, dict) and isinstance(report.get("resolved"), bool):
            out["resolved"] = report["resolved"]
    if error:
        out["error"] = clip(error, 200)
    return out


@sniffer("openhands-eval")
def sniff(path: Path, head: bytes) -> bool:
    """A line that is an object opening with ``instance_id`` (``EvalOutput``'s first field) and holding its
    ``test_result`` (the second) or a ``history`` list. SWE-bench predictions (``instance_id``,
    ``model_patch``) have neither."""
    first = compact_head(head.lstrip().split(b"\n", 1)[0])
    if not first.startswith(b'{"instance_id":'):
        return False
    return b'"test_result":' in first or b'"history":[' in first
