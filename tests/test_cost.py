"""Cost: the fast path agrees with genai-prices, which stays the source of truth."""

import pytest
from genai_prices import Usage, calc_price
from hypothesis import given
from hypothesis import strategies as st

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
