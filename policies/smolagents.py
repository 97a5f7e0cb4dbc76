"""smolagents (Hugging Face): no compaction at all, only the code agent's observations bounded on entry.

Read: the ``smolagents`` package 1.26.0 on PyPI, files ``smolagents/utils.py`` (``MAX_LENGTH_TRUNCATE_CONTENT``,
``truncate_content``), ``smolagents/agents.py`` (``CodeAgent._step_stream``: the observation it records;
``ToolCallingAgent.process_tool_calls``: ``observation = str(tool_call_result).strip()``, not truncated;
``MultiStepAgent.max_steps``) and ``smolagents/local_python_executor.py`` (``DEFAULT_MAX_LEN_OUTPUT``: the print
logs' own bound); the catalogue ``reference/policy-catalogue.md`` §B22 and §F. ``conformance/smolagents/`` runs the
package's own ``truncate_content`` on scripted outputs and ``tests/conformance/test_conformance_smolagents.py``
compares this policy's bounding with what it returned.

An agent's memory is a list of steps that only grows: every step is rendered into the next prompt (planning
steps render it with ``summary_mode=True``, which leaves the model's own outputs out of the planning prompt only),
nothing is ever summarised, cleared or dropped, and a run stops after ``max_steps`` (20) steps or when the
provider rejects the prompt. The one bound is on what enters the memory: a ``CodeAgent`` step's observation is
"Execution logs:" with the interpreter's print outputs (cut by the executor at ``max_print_outputs_length``,
50,000 characters) and "Last output from code snippet:" with the snippet's value, cut by ``truncate_content`` at
20,000 characters: the first half, a note, the last half.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Literal

from policies.base import Policy, register
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig

# utils.MAX_LENGTH_TRUNCATE_CONTENT: truncate_content's default, what CodeAgent bounds a snippet's output with.
MAX_LENGTH_TRUNCATE_CONTENT = 20_000
# truncate_content's note between the head and the tail ({max_length}: the bound).
NOTE = "\n..._This content has been truncated to stay below {max_length} characters_...\n"


def truncate_content(text: str, max_length: int) -> str:
    """``truncate_content``: a text longer than ``max_length`` characters becomes its first ``max_length // 2``
    characters, the note, and its last ``ceil(max_length / 2)`` characters (``content[-max_length // 2:]``: Python
    floors ``-max_length`` first, so an odd bound gives the tail the extra character). The note comes on top, so
    the result is longer than ``max_length``, whatever the note says."""
    if len(text) <= max_length:
        return text
    head = max_length // 2
    tail = -(-max_length // 2)
    return text[:head] + NOTE.format(max_length=max_length) + text[len(text) - tail :]


Agent = Literal["code", "tool_calling"]


@dataclass(frozen=True)
class SmolagentsConfig:
    """Parameters.

    Attributes:
        agent: which agent class: ``code`` (``CodeAgent``, the one the smolagents docs lead with) bounds each
            observation with ``truncate_content``; ``tool_calling`` (``ToolCallingAgent``) records a tool's output
            as it is, so nothing is bounded.
        max_length: the bound in characters (``MAX_LENGTH_TRUNCATE_CONTENT``, 20,000; smolagents offers no
            setting for it).
    """

    agent: Agent = "code"
    max_length: int = MAX_LENGTH_TRUNCATE_CONTENT

    def __post_init__(self) -> None:
        if self.agent not in ("code", "tool_calling"):
            raise InvalidConfig(f"agent={self.agent!r} must be 'code' or 'tool_calling'")
        if self.max_length < 1:
            raise InvalidConfig(f"max_length={self.max_length!r} must be at least 1")


@register("smolagents")
class Smolagents(Policy[SmolagentsConfig]):
    """smolagents: no compaction; a code agent's tool output over 20,000 characters keeps its first and last 10,000.

    * ``decide``: never. The memory's steps are all sent on every call, however long the run; the prompt grows
      until the provider rejects it (smolagents then fails the step with the provider's error; it has no
      compaction to retry with).
    * ``bound_tool_result``: with ``agent="code"``, a result longer than ``max_length`` characters becomes
      ``truncate_content``'s head, note and tail (:func:`truncate_content`); with ``agent="tool_calling"``, as
      it is.

    Differences: a tool result stands for the whole observation text, to which ``CodeAgent`` applies two bounds
    (the print logs at 50,000 characters, then the snippet's value at 20,000); the log has one output per
    result, so the 20,000 bound is applied to the whole of it. The run's ``max_steps`` is not modelled (the
    conversation sets the run's length). No known deviation: with nothing compacted, no invariant can break.
    """

    Config = SmolagentsConfig

    def bound_tool_result(self, part: Part) -> Part:
        if self.config.agent != "code" or len(part.text) <= self.config.max_length:
            return part
        text = truncate_content(part.text, self.config.max_length)
        return replace(part, text=text, original_bytes=len(part.text.encode("utf-8")))

    def bound_key(self) -> Hashable:
        return ("smolagents", self.config.max_length) if self.config.agent == "code" else None
