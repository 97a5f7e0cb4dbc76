"""``csim report``: execute the report notebooks on a set of results and export them as HTML.

Each notebook in ``notebooks/`` has a first cell tagged ``parameters`` with defaults, so it opens and
runs in Jupyter as it is. Here a copy gets a cell tagged ``injected-parameters`` right after it (the
convention papermill uses, without depending on papermill), is executed headlessly with nbclient in a
``python3`` kernel of the current interpreter, and exported with nbconvert to one self-contained
HTML file per notebook (figures are PNGs embedded as ``data:`` URIs, code hidden unless asked), plus
``index.html`` linking them. The executed ``.ipynb`` copies are kept beside the HTML.

What is written for a sweep: ``compare.html`` over every run, and ``run.html`` on one run: a representative one,
the median run of the first configuration that compacts (:func:`sim.report.data.representative_run`), unless
``run`` names another (``CONFIG``, ``CONFIG:CONVERSATION`` or a run key: :func:`sim.report.data.resolve_run`). For a
single ``csim run`` directory the same two pages, on its one run.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import nbformat

from sim.core.errors import CsimError, InvalidConfig
from sim.report.data import replayable, representative_run, resolve_run, run_row, user_code
from sim.sweep.results import load_results as load

NOTEBOOKS = ("compare", "run")
TITLES = {"compare": "Policy comparison", "run": "One run in depth"}
TIMEOUT_S = 600


class NotebookFailed(CsimError):
    """A report notebook raised; the message names the notebook, the cell and the error."""


def notebooks_dir() -> Path:
    """``notebooks/`` of this checkout (the package is installed editable; the notebooks are not packaged)."""
    return Path(__file__).resolve().parents[2] / "notebooks"


def parameterise(nb: nbformat.NotebookNode, params: dict[str, Any]) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a cell tagged ``injected-parameters`` after its ``parameters`` cell."""
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
    at = next((i + 1 for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), 0)
    source = "# Parameters injected by csim report\n" + "".join(f"{k} = {v!r}\n" for k, v in params.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    cell.id = "injected-parameters"
    nb.cells.insert(at, cell)
    return nb


def execute(
    notebooks: dict[str, nbformat.NotebookNode], cwd: Path, progress: Callable[[str], None] | None = None
) -> None:
    """Run every cell of each notebook, each in a fresh ``python3`` kernel, the kernels side by side; ``progress``
    is told the name of each notebook as it finishes.

    Raises:
        NotebookFailed: naming the (first) notebook and cell that raised.
    """
    import asyncio

    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    clients = {
        name: NotebookClient(
            nb,
            timeout=TIMEOUT_S,
            kernel_name="python3",
            record_timing=False,
            extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no transport warnings
            resources={"metadata": {"path": str(cwd)}},
        )
        for name, nb in notebooks.items()
    }

    async def one(name: str, client: Any) -> object:
        out = await client.async_execute()
        if progress is not None:
            progress(name)
        return out

    async def run_all() -> list[object]:
        return await asyncio.gather(*(one(n, c) for n, c in clients.items()), return_exceptions=True)

    for name, outcome in zip(clients, asyncio.run(run_all()), strict=True):
        if isinstance(outcome, CellExecutionError):
            raise NotebookFailed(_failure(notebooks[name], name, outcome))
        if isinstance(outcome, DeadKernelError):
            raise NotebookFailed(f"report notebook {name}.ipynb: the kernel died ({outcome})")
        if isinstance(outcome, BaseException):
            raise outcome


def _failure(nb: nbformat.NotebookNode, name: str, exc: Exception) -> str:
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                first = next((ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
                return (
                    f"report notebook {name}.ipynb failed in cell {i} ({first.strip()[:70]!r}): "
                    f"{out.get('ename')}: {out.get('evalue')}"
                )
    return f"report notebook {name}.ipynb failed: {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc}"


def to_html(nb: nbformat.NotebookNode, title: str, show_code: bool) -> str:
    """Self-contained HTML: images inline, no prompts, code only when asked, no scripts fetched from a CDN."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    nb.metadata["title"] = title
    body, _ = exporter.from_notebook_node(nb)
    # Report pages are static: drop scripts that would fetch code from a CDN (require.js, MathJax, mermaid).
    body = re.sub(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>\s*', "", body)
    return re.sub(r"<script[^>]*>(?:(?!</script>).)*https?://cdn(?:(?!</script>).)*</script>\s*", "", body, flags=re.S)


def write_report(
    results_path: str | Path,
    out_dir: str | Path,
    show_code: bool = False,
    run_key: str | None = None,
    notebooks: Path | None = None,
    allow_code: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Execute the report notebooks on ``results_path`` and write ``out_dir``/{compare,run,index}.html.

    Args:
        results_path: a sweep's results directory (``csim sweep --out``) or a ``csim run --out`` directory.
        out_dir: where the HTML (and the executed notebooks) go; created if missing.
        show_code: keep the code cells in the HTML.
        run_key: the run the ``run`` page shows: a run key, ``CONFIG`` or ``CONFIG:CONVERSATION``
            (:func:`sim.report.data.resolve_run`); default: :func:`sim.report.data.representative_run`.
        notebooks: folder of the report notebooks; default: this checkout's ``notebooks/``.
        allow_code: ``module:Class`` policy references the run page may import to replay a run whose log
            the results did not keep. Nothing else a results folder names is ever imported.
        progress: told, as a line of text, when the notebooks start and as each one is executed.

    Returns:
        The path of ``index.html``.

    Raises:
        InvalidConfig: the results cannot be read or ``run_key`` is not in them.
        NotebookFailed: a notebook raised; names the notebook and the cell.
    """
    src = Path(results_path).resolve()
    data = load(src)  # fail here, with the loader's message, rather than inside a kernel
    if data.runs.empty:
        raise InvalidConfig(f"{src} holds no finished runs to report on")
    showable = replayable(data, src, allow_code)  # no import of code the results name, unless allowed
    if run_key is not None:
        run_key = resolve_run(data, run_key)
    if not showable or (run_key is not None and run_key not in showable):
        shown = run_row(data, run_key or representative_run(data))
        flags = " ".join(f"--policy {r}" for r in user_code(data, allow_code))
        raise InvalidConfig(
            f"the run page needs the log of run {shown['run_key']!r} ({shown['config']}), which the results did "
            "not keep, and replaying it means importing code the results name; csim report imports none unless "
            f"told: pass {flags} to allow it, or run the sweep with --keep-logs"
        )
    run_key = run_key or representative_run(data, showable)
    row = run_row(data, run_key)
    folder = notebooks or notebooks_dir()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    params: dict[str, dict[str, Any]] = {
        "compare": {"results": str(src)},
        "run": {"results": str(src), "run_key": run_key, "allow_code": list(allow_code)},
    }
    books: dict[str, nbformat.NotebookNode] = {}
    for name in NOTEBOOKS:
        path = folder / f"{name}.ipynb"
        if not path.is_file():
            raise InvalidConfig(
                f"report notebook {path} is missing (csim report uses the notebooks/ folder of its checkout)"
            )
        books[name] = parameterise(nbformat.read(path, as_version=4), params[name])
    say = progress or (lambda _: None)
    say(f"executing {' and '.join(f'{n}.ipynb' for n in books)} on {row['config']} ({len(data.runs)} runs)")
    try:
        # the caller's folder: an allowed policy module imports as in the sweep
        execute(books, Path.cwd(), (lambda name: say(f"{name}.ipynb executed")) if progress else None)
    finally:
        for name, nb in books.items():  # kept, also when a cell failed: the traceback is in there
            nbformat.write(nb, out / f"{name}.ipynb")
    for name, nb in books.items():
        (out / f"{name}.html").write_text(to_html(nb, TITLES[name], show_code), encoding="utf-8")
    index = out / "index.html"
    index.write_text(_index(data, src, row), encoding="utf-8")
    return index


def _index(data: Any, src: Path, row: Any) -> str:
    r = data.runs
    e = html.escape
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>csim report</title>
<style>body{{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}}code{{background:#f3f3f3}}</style>
</head><body>
<h1>csim report</h1>
<p>Results: <code>{e(str(src))}</code> ({e(data.kind)}): {len(r)} runs, {r["config"].nunique()} configurations,
{r["conversation"].nunique()} conversations.</p>
<ul>
<li><a href="compare.html">Policy comparison</a>: cost against retention with the Pareto frontier, context per
request, cumulative cost, retention by fact kind, age and compaction round (beside cost), invariant violations, and
the comparison table.</li>
<li><a href="run.html">One run in depth</a>: <b>{e(str(row["config"]))}</b> on {e(str(row["conversation"]))}
(seed {row["seed"]}, run key <code>{e(str(row["run_key"]))}</code>, {row["compaction_count"]} compactions):
the view over time, each compaction, the summaries, the facts lost.</li>
</ul>
<p>Another run in depth: <code>csim report {e(str(src))} --run RUN_KEY --out DIR</code>; the executed notebooks
(<a href="compare.ipynb">compare.ipynb</a>, <a href="run.ipynb">run.ipynb</a>) open in Jupyter.</p>
</body></html>
"""


__all__ = ["NOTEBOOKS", "NotebookFailed", "execute", "notebooks_dir", "parameterise", "to_html", "write_report"]
