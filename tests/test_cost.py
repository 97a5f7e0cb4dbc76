"""Cost: the fast path agrees with genai-prices, which stays the source of truth."""

import json
from importlib.metadata import version
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from hypothesis import given
from hypothesis import strategies as st

from sim.core import cost
from sim.core.cost import Pricer
from sim.core.errors import UnknownName


@given(st.integers(0, 400_000), st.integers(0, 32_000))
def test_fast_path_matches_library(inp: int, out: int) -> None:
    pricer = Pricer("claude-sonnet-4-5", "anthropic")
    expected = float(
        calc_price(
            Usage(input_tokens=inp, output_tokens=out), model_ref="claude-sonnet-4-5", provider_id="anthropic"
        ).total_price
    )
    assert pricer.cost(inp, out) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_sonnet_list_price() -> None:
    # $3 per million input, $15 per million output below the 200K tier.
    assert Pricer("claude-sonnet-4-5", "anthropic").cost(1_000_000 // 10, 10_000) == pytest.approx(0.3 + 0.15)


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(UnknownName, match="genai-prices"):
        Pricer("no-such-model", "anthropic")


def _fresh_cache() -> None:
    for f in (cost._kept, cost._entry, cost._model_info):
        f.cache_clear()


def test_what_is_read_of_a_model_is_kept_for_the_next_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept file names the installed table's version and holds the model once priced; a damaged file, or a
    folder that cannot be written, only means the table is read again: the prices are the same."""
    monkeypatch.setenv("CSIM_CACHE", str(tmp_path / "cache"))
    _fresh_cache()
    want = Pricer("claude-sonnet-4-5", "anthropic").cost(120_000, 900, 80_000, 10_000, 5_000)
    path = cost.price_cache()
    assert path is not None and path.parent == tmp_path / "cache" and version("genai-prices") in path.name
    assert "anthropic:claude-sonnet-4-5" in json.loads(path.read_text())
    _fresh_cache()
    monkeypatch.setattr(cost, "_model_info", None)  # the next process: the table is not read at all
    assert Pricer("claude-sonnet-4-5", "anthropic").cost(120_000, 900, 80_000, 10_000, 5_000) == want
    monkeypatch.undo()
    for damage in ("{not json", '{"anthropic:claude-sonnet-4-5": {"periods": 3}}'):
        monkeypatch.setenv("CSIM_CACHE", str(tmp_path / "cache"))
        path.write_text(damage)
        _fresh_cache()
        assert Pricer("claude-sonnet-4-5", "anthropic").cost(120_000, 900, 80_000, 10_000, 5_000) == want
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("CSIM_CACHE", str(tmp_path / "a-file"))  # cannot hold a folder
    _fresh_cache()
    assert Pricer("claude-sonnet-4-5", "anthropic").cost(120_000, 900, 80_000, 10_000, 5_000) == want
    _fresh_cache()
