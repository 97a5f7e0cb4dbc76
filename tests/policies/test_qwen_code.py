"""The ``qwen-code`` policy (``policies/qwen_code.py``): Gemini CLI's compression at Qwen Code's threshold."""

from __future__ import annotations

from policies.gemini_cli import GeminiCli
from policies.qwen_code import QwenCode
from sim.core.model import ModelConfig
from tests.builders import conv, request_turn, state_of, sys
from tests.policies.reverts import shows_revert_resolution

MODEL = ModelConfig(context_window=100_000, output_reserve=8_192)


def test_threshold_is_qwen_codes() -> None:
    assert QwenCode().config.compression_threshold == 0.7 and GeminiCli().config.compression_threshold == 0.5


def test_compresses_at_0_7_not_at_gemini_clis_0_5() -> None:
    """At 60% of the token limit Gemini CLI compresses and Qwen Code does not; at 70% both do."""
    c = conv(sys("s", id="sys"), *(d for k in range(1, 30) for d in request_turn(k, 2_000)))
    limit = MODEL.input_budget
    st = state_of(QwenCode(), c, MODEL, context=int(0.6 * limit))
    assert QwenCode().decide(st, "auto") is None and GeminiCli().decide(st, "auto") is not None
    st = state_of(QwenCode(), c, MODEL, context=int(0.7 * limit) + 1)
    assert QwenCode().decide(st, "auto") is not None


def test_known_deviation_revert_resolution() -> None:
    assert shows_revert_resolution(QwenCode())
