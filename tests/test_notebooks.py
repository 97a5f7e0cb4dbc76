"""Report notebooks: stored without outputs, and ``csim report`` end to end on a small sweep and on one run.

The end-to-end test runs the real command (a sweep, ``csim compare``, then ``csim report``) in
subprocesses and reads the HTML as a reader's browser would get it: each expected figure is a
``<figure id="fig-...">`` holding one embedded PNG, each expected table has its rows.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from sim.report.notebooks import parameterise
from sim.sweep.results import load_results

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CSIM = [sys.executable, "-m", "sim"]

COMPARE_FIGURES = ("cost-retention", "context", "cumulative-cost", "retention", "retention-rounds", "violations")
COMPARE_TABLES = ("compare", "compare-diff", "retention-cost", "violations")
RUN_FIGURES = ("view-size", "compactions")
RUN_TABLES = ("overview", "compactions", "facts-lost", "facts-missed", "run-violations")


def test_there_are_report_notebooks() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"compare", "run"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"
    first = nb.cells[0]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", []), (
        f"{path.name}: the first cell must be the one tagged 'parameters'"
    )
    assert "results = " in first.source


def test_parameters_are_injected_after_the_parameters_cell() -> None:
    nb = nbformat.read(ROOT / "notebooks" / "run.ipynb", as_version=4)
    once = parameterise(nb, {"results": "/x/y", "run_key": "abc"})
    twice = parameterise(once, {"results": "/z", "run_key": None})
    cell = twice.cells[1]
    assert cell.metadata["tags"] == ["injected-parameters"] and len(twice.cells) == len(nb.cells) + 1
    assert "results = '/z'" in cell.source and "run_key = None" in cell.source
    assert nb.cells[1].metadata.get("tags") != ["injected-parameters"], "the stored notebook must not change"


def _csim(*args: str) -> str:
    done = subprocess.run([*CSIM, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, f"csim {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _section(page: str, tag: str, ident: str) -> str:
    m = re.search(rf'<{tag}[^>]*\bid="{ident}"[^>]*>(.*?)</{tag}>', page, re.S)
    assert m, f"no <{tag} id={ident!r}> in the report"
    return m.group(1)


def _assert_figure(page: str, name: str) -> None:
    body = _section(page, "figure", f"fig-{name}")
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', body)
    assert len(images) == 1, f"figure {name!r} should hold one embedded PNG, has {len(images)}"
    alt, data = images[0]
    png = base64.b64decode(data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000, f"figure {name!r} is not a real PNG"
    assert alt.strip(), f"figure {name!r} has no alt text"


def _table_rows(page: str, name: str) -> int:
    body = _section(page, "div", f"table-{name}")
    m = re.search(r"<tbody>(.*?)</tbody>", body, re.S)
    return len(re.findall(r"<tr\b", m.group(1))) if m else 0


def _visible(page: str) -> str:
    """The page without its style sheets and scripts (which mention error classes of their own)."""
    return re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.S)


@pytest.fixture(scope="module")
def sweep_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    results = tmp_path_factory.mktemp("sweep")
    out = tmp_path_factory.mktemp("report")
    # A deliberately broken policy (a user's own, by module:Class) gives violations to report.
    _csim(
        "sweep",
        "--out",
        str(results),
        "--policy",
        "cloudflare-os",
        "-P",
        "trigger_ratio=0.6,0.85",
        "--policy",
        "sliding-window",
        "--policy",
        "tests.broken_policies:ForgetsReverts",
        "--scenario",
        "coding-agent",
        "--seeds",
        "1-2",
        "--window",
        "50000",
        "--quiet",
    )
    _csim("compare", str(results))
    printed = _csim("report", str(results), "--out", str(out))
    assert str(out / "index.html") in printed
    return results, out


def test_sweep_report_has_every_figure_and_table(sweep_report: tuple[Path, Path]) -> None:
    results, out = sweep_report
    runs = load_results(results).runs
    page = (out / "compare.html").read_text(encoding="utf-8")
    for name in COMPARE_FIGURES:
        _assert_figure(page, name)
    for name in COMPARE_TABLES:
        _section(page, "div", f"table-{name}")
    assert _table_rows(page, "compare") == runs["config"].nunique() == 4
    assert _table_rows(page, "compare-diff") == 3  # every configuration but the baseline
    # retention beside cost, by kind and by compaction round: one row per configuration, the rounds it saw
    rounds = _section(page, "div", "table-retention-cost")
    assert _table_rows(page, "retention-cost") == 4 and "round 0 (%)" in rounds and "round 1 (%)" in rounds
    assert "cost per conversation (USD)" in rounds and "artifact (%)" in rounds
    assert _table_rows(page, "violations") >= 1 and "revert-resolution" in _section(page, "div", "table-violations")
    assert "ForgetsReverts" in _section(page, "div", "table-violations")
    assert "--run " in _section(page, "div", "table-violations"), "each violation points to its run"
    shown = _visible(page)
    assert "Traceback" not in shown and "vnd.jupyter.stderr" not in shown, "no errors or warnings in the report"
    assert "report_data" not in shown, "code cells are hidden unless --show-code"


def test_sweep_report_run_page_and_index(sweep_report: tuple[Path, Path]) -> None:
    results, out = sweep_report
    page = (out / "run.html").read_text(encoding="utf-8")
    for name in RUN_FIGURES:
        _assert_figure(page, name)
    for name in RUN_TABLES:
        _section(page, "div", f"table-{name}")
    runs = load_results(results).runs
    # a representative run: the first configuration of the sweep's order that compacts ("cloudflare-os
    # trigger_ratio=0.6"), its median run by compactions, then cost (the lower median of its two seeds)
    first = runs[runs["config"] == "cloudflare-os trigger_ratio=0.6"]
    assert (first["compaction_count"] > 0).any()
    chosen = first.sort_values(["compaction_count", "total_cost_usd", "conversation", "seed"]).iloc[0]
    assert chosen["run_key"] in page, "the run page shows the median run of the first configuration"
    assert "One run in depth: cloudflare-os trigger_ratio=0.6" in page, "named by its configuration"
    assert _table_rows(page, "compactions") == chosen["compaction_count"]
    comps = load_results(results).compactions
    summarised = comps[(comps["run_key"] == chosen["run_key"]) & comps["mode"].str.contains("summar")]
    # each summary the run wrote is shown, with its id; a run that wrote none says so
    assert page.count('class="csim-summary"') == len(summarised)
    if summarised.empty:
        assert "No compaction in this run wrote a summary" in page
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="compare.html"' in index and 'href="run.html"' in index and chosen["run_key"] in index
    executed = nbformat.read(out / "compare.ipynb", as_version=4)
    assert any(c.get("outputs") for c in executed.cells), "the executed notebook is kept beside the HTML"


def test_report_on_one_run_directory(tmp_path: Path) -> None:
    run_dir, out = tmp_path / "run", tmp_path / "report"
    _csim(
        "run",
        "--policy",
        "cloudflare-os",
        "-P",
        "trigger_ratio=0.6",
        "--scenario",
        "coding-agent",
        "--seed",
        "0",
        "--window",
        "50000",
        "--out",
        str(run_dir),
    )
    _csim("report", str(run_dir), "--out", str(out), "--show-code")
    runs = load_results(run_dir).runs
    run_page = (out / "run.html").read_text(encoding="utf-8")
    for name in RUN_FIGURES:
        _assert_figure(run_page, name)
    assert _table_rows(run_page, "compactions") == runs["compaction_count"].iloc[0]
    assert "summary-c1" in run_page, "the summary texts come from the run's log"
    assert "kept in " in run_page, "the run page read the log csim run kept, it did not replay the run"
    assert "run_page" in _visible(run_page), "--show-code keeps the code"
    _assert_figure((out / "compare.html").read_text(encoding="utf-8"), "cost-retention")


def test_a_bad_results_path_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sim.cli.main import main

    assert main(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err and not (tmp_path / "o").exists()


def test_a_failing_cell_names_the_notebook_and_cell(tmp_path: Path) -> None:
    from sim.report.notebooks import NotebookFailed, execute

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("# the broken step\nraise ValueError('boom')"),
        ]
    )
    with pytest.raises(NotebookFailed, match=r"compare\.ipynb failed in cell 1 .*ValueError: boom"):
        execute({"compare": nb}, tmp_path)


def test_figures_are_the_same_bytes_every_time(sweep_report: tuple[Path, Path]) -> None:
    from sim import api
    from sim.report import data as rd
    from sim.report import figures as rf

    data = api.load(sweep_report[0])
    cmap = rf.colours(data.runs["config"])
    conv = rd.choose_conversation(data)
    first = rf.show(rf.fig_context(data, conv, cmap, 50_000), "context", "c")._repr_html_()
    assert first == rf.show(rf.fig_context(data, conv, cmap, 50_000), "context", "c")._repr_html_()
    assert cmap == rf.colours(reversed(data.runs["config"].tolist())), "colours depend on the labels, not their order"


def test_run_page_is_chosen_by_configuration(sweep_report: tuple[Path, Path]) -> None:
    """``--run CONFIG[:CONVERSATION]`` picks that configuration's median run (on that conversation); a run key
    still works; an unknown name lists the configurations."""
    from sim.core.errors import UnknownName
    from sim.report import data as rd

    results, _ = sweep_report
    res = load_results(results)
    runs = res.runs
    mine = runs[runs["config"] == "sliding-window"]
    median = mine.sort_values(["compaction_count", "total_cost_usd", "conversation", "seed"]).iloc[0]
    assert rd.resolve_run(res, "sliding-window") == median["run_key"]
    conv = str(mine["conversation"].iloc[-1])
    one = mine[mine["conversation"] == conv]
    assert rd.resolve_run(res, f"sliding-window:{conv}") == one["run_key"].iloc[0]
    user = "tests.broken_policies:ForgetsReverts"  # a label that holds a colon itself
    assert rd.resolve_run(res, f"{user}:{conv}") in set(runs.loc[runs["config"] == user, "run_key"])
    assert rd.resolve_run(res, str(median["run_key"])) == median["run_key"]
    with pytest.raises(UnknownName, match="sliding-window"):
        rd.resolve_run(res, "sliding-windw")
    assert rd.config_order(res)[:2] == ["cloudflare-os trigger_ratio=0.6", "cloudflare-os trigger_ratio=0.85"]


def test_no_figure_is_taller_than_2000_pixels(sweep_report: tuple[Path, Path]) -> None:
    import base64
    import io
    import re

    from PIL import Image

    _, out = sweep_report
    heights = []
    for page in ("compare.html", "run.html"):
        for data in re.findall(r'src="data:image/png;base64,([^"]+)"', (out / page).read_text(encoding="utf-8")):
            heights.append(Image.open(io.BytesIO(base64.b64decode(data))).size[1])
    assert heights and max(heights) <= 2000, heights


def test_many_compactions_stay_within_bounds() -> None:
    """230 compactions: the compactions figure stays under 2,000 pixels, and at most 24 ids label the view."""
    import matplotlib

    matplotlib.use("Agg")
    from sim.report import run_page as rr

    n = 230
    steps = pd.DataFrame(
        {
            "compaction": [f"c{i + 1}" for i in range(n)],
            "turn": range(10, 10 + 2 * n, 2),
            "mode": "drop",
            "tokens_before": 1000,
            "tokens_after": 500,
            "kept": 10,
            "results_cleared": 0,
            "summarised": 0,
            "dropped_unsummarised": 5,
            "restored": 0,
        }
    )
    fig = rr.fig_compactions(steps)
    assert fig is not None and fig.get_size_inches()[1] * 100 <= 2000
    labelled = [t.get_text() for t in fig.axes[1].get_yticklabels() if t.get_text()]
    assert len(labelled) <= rr.MAX_ROW_LABELS
    assert rr.label_step(n) * rr.MAX_LABELS >= n and rr.label_step(10) == 1
