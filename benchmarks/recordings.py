"""Generated recordings with usage, for benchmarks at a user's scale (the shared recordings hold a handful).

``write_trajectories(folder, n)`` writes ``n`` mini-swe-agent trajectories (``*.traj.json``, the format
:mod:`sim.formats.mini_swe_agent` reads): a system prompt, a task, then 20 to 60 steps of a thought with a bash
command and its observation (prose, Python source or JSON), each reply with the usage a provider would have
reported. They are shaped as that importer documents the files: each observation with ``extra.raw_output`` and
``returncode`` beside it, each reply with the LiteLLM response in ``extra.response``. The provider's count is made
up, not measured: its own characters-per-token for each kind of text, a few tokens of framing per message and a
system prompt of its own per conversation, with 0.5% noise; enough for the calibration to have something to fit
(the figures are not the point, the time is). Seeded: the same ``n`` and ``seed`` give the same bytes.

    python benchmarks/recordings.py FOLDER N [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

#: The prose the texts are drawn from, a word at a time.
PROSE = (
    "the test fails because parser returns none when input is empty so we check the branch that handles "
    "whitespace and make sure the widget keeps its state after reload then run the suite again to confirm"
)
WORDS = tuple(PROSE.split(" "))
NAMES = ("parse", "widget", "state", "reload", "token", "buffer", "config", "render", "index", "cache")
#: The made-up provider's characters per token, by kind, and its framing per message.
CHARS_PER_TOKEN = {"prose": 4.1, "code": 3.2, "json": 2.9}
FRAMING = 7


def _prose(rng: np.random.Generator, words: int) -> str:
    return " ".join(str(w) for w in rng.choice(WORDS, size=words)).capitalize() + "."


def _code(rng: np.random.Generator, lines: int) -> str:
    out = []
    for i in range(lines):
        a, b = (str(x) for x in rng.choice(NAMES, size=2))
        out.append(f"    {a}_{i} = {b}.get({i}, {a!r})  # {b}" if i % 3 else f"def {a}_{b}(x, y={i}):")
    return "\n".join(out)


def _json(rng: np.random.Generator, items: int) -> str:
    body = [
        {"name": str(rng.choice(NAMES)), "line": int(rng.integers(1, 900)), "ok": bool(i % 2)} for i in range(items)
    ]
    return json.dumps({"results": body, "count": items})


def _observation(rng: np.random.Generator) -> tuple[str, str, str]:
    """The kind of a command's output, the output, and the observation the model is sent."""
    kind = str(rng.choice(("prose", "code", "json"), p=(0.3, 0.5, 0.2)))
    size = int(rng.integers(5, 60))
    text = {"prose": lambda: _prose(rng, 4 * size), "code": lambda: _code(rng, size), "json": lambda: _json(rng, size)}
    output = text[kind]()
    return kind, output, f"<returncode>0</returncode>\n<output>\n{output}\n</output>"


def _response(name: str, step: int, thought: str, prompt: int) -> dict:
    """The LiteLLM ``ModelResponse`` mini-swe-agent saves with each reply (``extra.response``), shaped as its
    trajectories hold it: the reply again in ``choices``, and the usage with its cache fields."""
    usage = {
        "completion_tokens": len(thought) // 4,
        "prompt_tokens": prompt,
        "total_tokens": prompt + len(thought) // 4,
        "completion_tokens_details": None,
        "prompt_tokens_details": {"audio_tokens": None, "cached_tokens": 0},
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {"content": thought, "role": "assistant", "tool_calls": None, "function_call": None}
    return {
        "id": f"chatcmpl-{name}-{step}",
        "created": 1750000000 + step,
        "model": "claude-sonnet-4-20250514",
        "object": "chat.completion",
        "system_fingerprint": None,
        "choices": [{"finish_reason": "stop", "index": 0, "message": message}],
        "usage": usage,
    }


def trajectory(rng: np.random.Generator, name: str) -> dict:
    """One trajectory: messages with usage on each reply (see the module docstring)."""
    hidden = int(rng.integers(1_500, 4_000))  # what the provider counts that the transcript does not show
    messages: list[dict] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": f"<pr_description>\n{_prose(rng, 60)}\n</pr_description>"},
    ]
    provider = hidden + sum(len(m["content"]) / CHARS_PER_TOKEN["prose"] + FRAMING for m in messages)
    for step in range(int(rng.integers(20, 61))):
        thought = f"THOUGHT: {_prose(rng, int(rng.integers(8, 40)))}\n\n```bash\ngrep -rn {rng.choice(NAMES)} src/\n```"
        prompt = int(provider * (1 + rng.normal(0, 0.005)))
        messages.append(
            {"role": "assistant", "content": thought, "extra": {"response": _response(name, step, thought, prompt)}}
        )
        kind, output, observation = _observation(rng)  # with the raw output beside it, as trajectories keep it
        messages.append({"role": "user", "content": observation, "extra": {"raw_output": output, "returncode": 0}})
        provider += len(thought) / CHARS_PER_TOKEN["prose"] + len(observation) / CHARS_PER_TOKEN[kind] + 2 * FRAMING
    config = {"model": {"model_name": "anthropic/claude-sonnet-4-20250514", "model_kwargs": {"temperature": 0.0}}}
    stats = {"instance_cost": 0.0, "api_calls": step + 1}
    info = {
        "exit_status": "Submitted",
        "submission": "",
        "model_stats": stats,
        "mini_version": "1.9.0",
        "config": config,
    }
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1", "instance_id": name}


def write_trajectories(folder: Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` trajectories in ``folder`` (created), one file each; the same ``n`` and ``seed``, the same bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        rng = np.random.default_rng([seed, i])
        path = folder / f"task-{i:04d}.traj.json"
        path.write_text(json.dumps(trajectory(rng, f"task-{i:04d}"), indent=1) + "\n", encoding="utf-8")
        out.append(path)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    paths = write_trajectories(args.folder, args.n, args.seed)
    print(f"wrote {len(paths)} trajectories to {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
