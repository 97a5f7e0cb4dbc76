"""``--format auto`` for the SWE-agent, mini-swe-agent, OpenHands (events, evaluation output, LLM logs),
tau-bench and kv-trace (token-level traces) importers.

Every sample of these formats (the real ones in ``../shared/recorded`` and the golden inputs) must be
recognised by its own sniffer and by no other of these seven; every other sample (Claude Code, VCR
cassettes, plain message lists, native files) by none of them; and no other registered sniffer
(``openai-chat`` in particular, since these files hold OpenAI ``messages`` lists) may claim them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.formats import SNIFF_BYTES, SNIFFERS, _load, detect
from tests.formats.conftest import GOLDEN, recorded_root

MINE = ("swe-agent", "mini-swe-agent", "openhands-events", "openhands-eval", "openhands-llm", "tau-bench", "kv-trace")
GOLDEN_INPUTS = {
    "swe_agent.traj": "swe-agent",
    "swe_agent_fc.traj": "swe-agent",
    "mini_swe_agent.traj.json": "mini-swe-agent",
    "mini_swe_agent_toolcall.traj.json": "mini-swe-agent",
    "openhands_events.json": "openhands-events",
    "openhands_eval.jsonl": "openhands-eval",
    "openhands_llm.json": "openhands-llm",
    "tau_bench.json": "tau-bench",
    "kv_trace.json": "kv-trace",
}


def _recorded_expected(rel: Path) -> str | None:
    parts = rel.parts
    if parts[0] == "swe-agent" and rel.suffix == ".traj":
        return "swe-agent"
    if parts[:2] == ("openhands", "runtime_trajs"):
        return "openhands-events"
    if parts[:2] == ("openhands", "llm_data") and len(parts) == 4:
        return "openhands-llm"
    if parts[0] == "tau-bench" and rel.suffix == ".json":
        return "tau-bench"
    if parts[0] == "kv-cache-traces" and rel.suffix == ".json":
        return "kv-trace"
    return None


def _samples() -> list[tuple[Path, str | None]]:
    samples = [(p, GOLDEN_INPUTS.get(p.name)) for p in sorted(GOLDEN.iterdir()) if p.is_file()]
    root = recorded_root()
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".json", ".jsonl", ".traj", ".yaml"):
                samples.append((p, _recorded_expected(p.relative_to(root))))
    return samples


SAMPLES = _samples()


def _hits(path: Path) -> set[str]:
    _load()
    head = path.read_bytes()[:SNIFF_BYTES]
    return {name for name, fn in SNIFFERS.items() if fn(path, head)}


@pytest.mark.parametrize(("path", "expected"), SAMPLES, ids=[p.name[-60:] for p, _ in SAMPLES])
def test_each_sample_is_claimed_by_its_own_sniffer_only(path: Path, expected: str | None) -> None:
    mine = _hits(path) & set(MINE)
    assert mine == ({expected} if expected else set())


@pytest.mark.parametrize(
    ("path", "expected"), [s for s in SAMPLES if s[1]], ids=[p.name[-60:] for p, e in SAMPLES if e]
)
def test_auto_detects_own_format(path: Path, expected: str) -> None:
    assert _hits(path) - {expected} == set()
    assert detect(path) == expected


def test_recorded_samples_are_covered() -> None:
    root = recorded_root()
    if not root.is_dir():
        pytest.skip(f"recorded sample not found at {root} (set CSIM_RECORDED to its folder)")
    found = {e for p, e in SAMPLES if e and root in p.parents}
    assert found == set(MINE) - {"mini-swe-agent", "openhands-eval"}  # no recording of these two in the sample


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("big.traj", b'{\n    "environment": "swe_main",\n    "trajectory": [', "swe-agent"),
        ("run.json", b'{"trajectory": [], "history": [{"role": "system", "message_type": "system_prompt"', "swe-agent"),
        ("x.traj.json", b'{\n  "info": {\n    "exit_status": "Submitted"', None),  # no messages in sight
        ("x.traj.json", b'{"info": {}, "messages": [{"role": "system"', "mini-swe-agent"),
        ("x.json", b'{"info": {}, "messages": [], "trajectory_format": "mini-swe-agent-1.1"}', "mini-swe-agent"),
        ("m-1757015025.972.json", b'{"messages": [{"content": [{"type": "text"', "openhands-llm"),
        ("log.json", b'{"messages": [{"role": "user", "content": "hi"}]}', None),
        ("ev.json", b'[{"id": 0, "source": "user", "message": "hi", "action": "message"', "openhands-events"),
        ("t.json", b'[\n  {\n    "task_id": 0,\n    "reward": 1.0,\n    "info": {},\n    "traj": [', "tau-bench"),
        ("t.json", b'[{"role": "user", "content": "traj"}]', None),
        ("e.jsonl", b'{"format":"csim-conversation","meta":{"trajectory_format":"mini-swe-agent-1"}}\n', None),
        ("trace.json", b'{"block_size":64,"tool_tokens":1,"system_tokens":2,"requests":[{"t":0.0,"in', "kv-trace"),
        ("mooncake.jsonl", b'{"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}\n', None),
    ],
)
def test_sniffers_on_heads(name: str, head: bytes, expected: str | None) -> None:
    """Heads cut mid-record, the way ``--format auto`` shows them for long files."""
    _load()
    mine = {n for n in MINE if SNIFFERS[n](Path(name), head)}
    assert mine == ({expected} if expected else set())
