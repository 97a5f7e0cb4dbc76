"""The source files of a TypeScript system that no registry ships, at a pinned commit, for a generator to run.

The two seed systems (cloudflare/cloudflare-os, danieljvdm/effect-agent) publish no npm package: their compaction
code lives only in their repositories. Their generators (``conformance/cloudflare-os/``, ``conformance/effect-agent/``)
run that code itself under node, from the files this module writes into the generator's own folder under
``.venv-conformance/`` (outside the repository's tracked files; nothing of it is committed). Standard library only.

Where the files come from, in order: the git directory named by an environment variable (the generator says which,
e.g. ``EFFECT_AGENT_GIT=/path/to/effect-agent/.git``), holding the pinned commit; else a clone of the repository
from GitHub into ``.venv-conformance/<package>/repo.git`` (needs the network).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout


def _has_commit(git_dir: Path, commit: str) -> bool:
    probe = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
    )
    return probe.returncode == 0


def git_dir_for(repo: str, commit: str, env_var: str, cache: Path) -> Path:
    """A git directory holding ``commit`` of GitHub repository ``repo`` (``owner/name``): ``$env_var``'s, else a
    clone under ``cache``. Exits with what to do when neither works."""
    given = os.environ.get(env_var)
    if given:
        path = Path(given)
        if not _has_commit(path, commit):
            sys.exit(f"{env_var}={given} does not hold commit {commit} of {repo}: fetch it there, or unset {env_var}")
        return path
    clone = cache / "repo.git"
    if not (clone.is_dir() and _has_commit(clone, commit)):
        url = f"https://github.com/{repo}.git"
        print(f"cloning {url} into {clone} (set {env_var} to a local git directory to skip this)", file=sys.stderr)
        try:
            if not clone.is_dir():
                subprocess.run(["git", "clone", "--bare", "--filter=blob:none", url, str(clone)], check=True)
            subprocess.run(["git", f"--git-dir={clone}", "fetch", "origin", commit], check=True)
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            sys.exit(f"could not get {repo}@{commit} ({exc}): set {env_var} to a git directory that holds it")
    return clone


def write_sources(repo: str, commit: str, files: Sequence[str], env_var: str, cache: Path) -> dict[str, Path]:
    """Write each of ``files`` (paths in the repository) at ``commit`` under ``cache/src/``; their local paths."""
    git_dir = git_dir_for(repo, commit, env_var, cache)
    out: dict[str, Path] = {}
    for name in files:
        target = cache / "src" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_git(git_dir, "show", f"{commit}:{name}"))
        out[name] = target
    return out


def project_python(root: Path) -> str:
    """The project's own Python (with ``sim`` importable) for the step that builds a generator's cases from the
    project's scenarios: ``$CSIM_PYTHON``, else ``.venv/bin/python`` (what ``make install`` makes)."""
    given = os.environ.get("CSIM_PYTHON")
    if given:
        return given
    venv = root / ".venv" / "bin" / "python"
    if venv.exists():
        return str(venv)
    sys.exit("no project Python: run `make install`, or set CSIM_PYTHON to a Python that can import sim")


def run_cases(here: Path, root: Path, env: Path, large: bool) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A seed generator's run: check ``here/package.json``'s node packages are installed in ``env``, write the pinned
    sources, build the cases with ``here/make_cases.py`` (the project's Python, ``--large`` when asked) and answer
    them with ``here/decide.mjs`` under node; ``(package.json, cases, answers)``."""
    meta = json.loads((here / "package.json").read_text())
    for name in meta["dependencies"]:
        if not (env / "node_modules" / name).is_dir():
            sys.exit(f"{env}/node_modules/{name} is missing: run `make conformance` (npm install into {env})")
    src = meta["csim"]
    write_sources(src["repository"], src["commit"], src["files"], src["git_env"], env)
    made = subprocess.run(
        [project_python(root), str(here / "make_cases.py"), *(["--large"] if large else [])],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    proc = subprocess.run(
        ["node", str(here / "decide.mjs"), str(env)], input=made.stdout, capture_output=True, text=True
    )
    if proc.returncode:
        sys.exit(f"decide.mjs failed:\n{proc.stderr}")
    return meta, json.loads(made.stdout), json.loads(proc.stdout)


def dump_lines(golden: dict[str, object]) -> str:
    """A golden file as compact JSON with one line per top-level key and per item of a top-level list, so that a
    regenerated file's diff names the cases that changed."""
    lines = ["{"]
    items = list(golden.items())
    for k, (key, value) in enumerate(items):
        end = "," if k < len(items) - 1 else ""
        head = json.dumps(key) + ":"
        if isinstance(value, list) and value:
            lines.append(head + "[")
            lines.extend(
                json.dumps(x, ensure_ascii=False, separators=(",", ":")) + ("," if j < len(value) - 1 else "")
                for j, x in enumerate(value)
            )
            lines.append("]" + end)
        else:
            lines.append(head + json.dumps(value, ensure_ascii=False, separators=(",", ":")) + end)
    lines.append("}")
    return "\n".join(lines) + "\n"
