"""Qwen Code (``QwenLM/qwen-code``): Gemini CLI's chat compression, forked, at Qwen Code's threshold.

Qwen Code is a fork of Gemini CLI and keeps its ``tryCompressChat``; its setting
``chatCompression.contextPercentageThreshold`` (``QwenLM/qwen-code`` PR #601, ``reference/field-2026.md`` §3) sets the
threshold, whose default is the value Gemini CLI had when Qwen Code forked, ``COMPRESSION_TOKEN_THRESHOLD = 0.7``
(quoted from ``packages/core/src/core/client.ts`` in ``google-gemini/gemini-cli`` #12068; Gemini CLI later lowered
its own to 0.5, PR #13517). Everything else is ``gemini-cli``'s model (``policies/gemini_cli.py``), at the same
commit: the 0.3 preserved share, tool-output masking and entry truncation, which Qwen Code's fork carries.
Qwen Code is on npm (``@qwen-code/qwen-code``) but its compression needs its model client; no conformance suite.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.base import register
from policies.gemini_cli import GeminiCli, GeminiCliConfig

CONTEXT_PERCENTAGE_THRESHOLD = 0.7  # COMPRESSION_TOKEN_THRESHOLD at the fork (gemini-cli #12068)


@dataclass(frozen=True)
class QwenCodeConfig(GeminiCliConfig):
    """``GeminiCliConfig`` with Qwen Code's default: ``compression_threshold`` is ``contextPercentageThreshold``
    (0.7); see :class:`policies.gemini_cli.GeminiCliConfig` for the rest."""

    compression_threshold: float = CONTEXT_PERCENTAGE_THRESHOLD


@register("qwen-code")
class QwenCode(GeminiCli):
    """Qwen Code: Gemini CLI's compression at 0.7 of the token limit, keeping the newest 30%; old tool outputs masked.

    The mechanics, differences and the declared ``revert-resolution`` are ``gemini-cli``'s (:class:`GeminiCli`).
    """

    TUNABLE_NATIVE = {
        "compression_threshold": "contextPercentageThreshold: {value} (settings.json)",
        "preserve_fraction": "COMPRESSION_PRESERVE_THRESHOLD = {value} (a source constant, not a setting)",
    }

    Config = QwenCodeConfig
