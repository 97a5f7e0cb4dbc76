"""Regenerate ``datasets/manifest.toml`` from a recorded sample's ``PROVENANCE.md`` and ``SHA256SUMS``.

Usage (from the project root)::

    .venv/bin/python datasets/make_manifest.py ../shared/recorded > datasets/manifest.toml

The manifest lists, for every public recorded dataset, each file's source repository, commit, path in
that repository, the raw.githubusercontent.com address ``fetch`` downloads it from, its SHA-256, its
licence, the importer format that reads it and its local name (the path inside a mirror folder laid
out like ``../shared/recorded``, and inside the cache). It is a plain script, not part of the package:
the generated TOML is what the code reads (with ``tomllib``).

Commits are written as PROVENANCE.md gives them (12 hex digits, abbreviated); the address uses the
same abbreviated commit. Where PROVENANCE.md maps several repository paths to one local file (two
SWE-agent replays whose shortened names collide), the last row wins (the later copy overwrote the
earlier one) and the others are kept in ``also_listed``; the checksum decides which bytes are right.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

#: Dataset name -> (folder prefix of local names, repository, licence, format, provider, description).
#: A dataset is the files of one repository under one folder; LICENSE files belong to every dataset
#: that shares their folder.
DATASETS: dict[str, dict[str, str]] = {
    "claude-code": {
        "prefix": "claude-code/",
        "repo": "marot/spotter",
        "licence": "MIT",
        "format": "claude-code",
        "provider": "anthropic",
        "description": "Claude Code session transcripts: two long sessions with real compactions, their subagents, "
        "three small sessions; per-response Anthropic usage.",
    },
    "swe-agent": {
        "prefix": "swe-agent/",
        "repo": "SWE-agent/SWE-agent",
        "licence": "MIT",
        "format": "swe-agent",
        "provider": "openai",
        "description": "SWE-agent .traj trajectories (demonstrations and three real GPT-4 runs with token totals).",
    },
    "openhands-events": {
        "prefix": "openhands/runtime_trajs/",
        "repo": "All-Hands-AI/OpenHands",
        "licence": "MIT",
        "format": "openhands-events",
        "provider": "unknown",
        "description": "OpenHands runtime event streams (action/observation events).",
    },
    "openhands-llm": {
        "prefix": "openhands/llm_data/",
        "repo": "OpenHands/software-agent-sdk",
        "licence": "MIT",
        "format": "openhands-llm",
        "provider": "mixed",
        "description": "OpenHands LLM completion logs with tool schemas and the provider's prompt tokens.",
    },
    "tau-bench": {
        "prefix": "tau-bench/",
        "repo": "sierra-research/tau-bench",
        "licence": "MIT",
        "format": "tau-bench",
        "provider": "openai",
        "description": "tau-bench airline: 200 gpt-4o conversations in OpenAI chat form, no usage.",
    },
    "pydantic-ai-cassettes": {
        "prefix": "pydantic-ai-cassettes/",
        "repo": "pydantic/pydantic-ai",
        "licence": "MIT",
        "format": "vcr-cassette",
        "provider": "mixed",
        "description": "pydantic-ai VCR cassettes: recorded Anthropic and OpenAI HTTP exchanges with exact usage.",
    },
}

#: Local files that are not conversations (read by no importer).
NOT_DATA = ("LICENSE",)

#: Files whose format is not their dataset's: OpenHands' ``*-llm-message.json`` fixtures are bare
#: OpenAI-format message lists, not completion logs.
FORMAT_OVERRIDES = {
    "openhands/llm_data/fncall-llm-message.json": "openai-chat",
    "openhands/llm_data/nonfncall-llm-message.json": "openai-chat",
}


@dataclass(frozen=True)
class Row:
    repo: str
    commit: str
    path: str
    local: str


def parse_provenance(text: str) -> list[Row]:
    """The table rows of PROVENANCE.md: ``| repo | commit | `path` | `local` |``."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[2].startswith("`"):
            continue
        rows.append(Row(cells[0], cells[1], cells[2].strip("`"), cells[3].strip("`")))
    return rows


def parse_sums(text: str) -> dict[str, str]:
    """``sha256  ./local/path`` lines as {local path: digest}."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            out[name.strip().removeprefix("./")] = digest
    return out


def raw_url(repo: str, commit: str, path: str) -> str:
    """The raw.githubusercontent.com address of ``path`` at ``commit``; path segments percent-encoded."""
    from urllib.parse import quote

    return f"https://raw.githubusercontent.com/{repo}/{commit}/{quote(path, safe='/')}"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dataset_of(row: Row) -> str | None:
    for name, d in DATASETS.items():
        if row.local.startswith(d["prefix"]) and row.repo == d["repo"]:
            return name
    return None


def render(rows: list[Row], sums: dict[str, str]) -> str:
    by_local: dict[str, list[Row]] = {}
    for r in rows:
        by_local.setdefault(r.local, []).append(r)
    out = [
        "# Public recorded datasets: generated by datasets/make_manifest.py from the recorded sample's",
        "# PROVENANCE.md and SHA256SUMS. Do not edit by hand; regenerate.",
        "# url: what `csim datasets fetch` downloads (raw.githubusercontent.com, commit as PROVENANCE.md gives it).",
        "# local: the file's path inside a mirror folder (--from DIR) and inside the cache.",
        "",
        "version = 1",
        "",
    ]
    for name, d in DATASETS.items():
        out += [
            f"[datasets.{name}]",
            f"description = {_q(d['description'])}",
            f"repo = {_q(d['repo'])}",
            f"licence = {_q(d['licence'])}",
            f"format = {_q(d['format'])}",
            f"provider = {_q(d['provider'])}",
            "",
        ]
        licence_local = d["prefix"].split("/")[0] + "/LICENSE"
        chosen = []
        for local, group in by_local.items():
            last = group[-1]
            if dataset_of(last) == name or local == licence_local:
                chosen.append((local, group))
        for local, group in chosen:
            last = group[-1]
            if local not in sums:
                raise SystemExit(f"{local}: no checksum in SHA256SUMS")
            is_data = Path(local).name not in NOT_DATA
            out += [
                f"[[datasets.{name}.files]]",
                f"local = {_q(local)}",
                f"repo = {_q(last.repo)}",
                f"commit = {_q(last.commit)}",
                f"path = {_q(last.path)}",
                f"url = {_q(raw_url(last.repo, last.commit, last.path))}",
                f"sha256 = {_q(sums[local])}",
                f"licence = {_q(d['licence'])}",
                f"format = {_q(FORMAT_OVERRIDES.get(local, d['format']) if is_data else '')}",
            ]
            if len(group) > 1:
                out.append("also_listed = [" + ", ".join(_q(r.path) for r in group[:-1]) + "]")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "../shared/recorded")
    rows = parse_provenance((root / "PROVENANCE.md").read_text(encoding="utf-8"))
    sums = parse_sums((root / "SHA256SUMS").read_text(encoding="utf-8"))
    sys.stdout.write(render(rows, sums))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
