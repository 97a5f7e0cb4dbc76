"""The smolagents policy (``policies/smolagents.py``): no compaction, a code agent's outputs bounded on entry.

Each test names the ``smolagents`` 1.26.0 code it checks. The conformance suite
(``tests/conformance/test_conformance_smolagents.py``) compares the bounding with smolagents' own
``truncate_content``.
"""

from __future__ import annotations

import pytest

from policies import make_policy
from policies.smolagents import MAX_LENGTH_TRUNCATE_CONTENT, NOTE, Smolagents, SmolagentsConfig, truncate_content
from sim.core.conversation import Part
from sim.core.errors import InvalidConfig
from sim.core.model import ModelConfig
from sim.replay.engine import Engine, RunConfig
from sim.replay.strategies import small_model
from tests.builders import asst, call, compaction_records, conv, log_messages, state_of, sys, tool, user

C4 = RunConfig(model=small_model(), tokenizer="chars4")


def result(text: str) -> Part:
    return Part("tool_result", text, call_id="c1", name="python_interpreter")


def test_defaults() -> None:
    """``utils.MAX_LENGTH_TRUNCATE_CONTENT = 20000``; ``CodeAgent`` is the agent that bounds."""
    cfg = Smolagents().config
    assert (cfg.agent, cfg.max_length) == ("code", 20_000) and MAX_LENGTH_TRUNCATE_CONTENT == 20_000


@pytest.mark.parametrize(("params", "says"), [({"max_length": "0"}, "max_length=0"), ({"agent": "x"}, "must be one")])
def test_bad_configs_raise(params: dict[str, str], says: str) -> None:
    with pytest.raises(InvalidConfig, match=says):
        make_policy("smolagents", params)


def test_output_at_the_bound_is_kept_as_it_is() -> None:
    """``truncate_content``: ``if len(content) <= max_length: return content``."""
    text = "x" * 20_000
    assert Smolagents().bound_tool_result(result(text)) == result(text)


def test_output_one_above_the_bound_keeps_its_first_and_last_halves() -> None:
    """``content[: max_length // 2] + note + content[-max_length // 2 :]``: 10,000 characters each side."""
    text = "h" * 10_000 + "M" + "t" * 10_000
    part = Smolagents().bound_tool_result(result(text))
    note = "\n..._This content has been truncated to stay below 20000 characters_...\n"
    assert part.text == "h" * 10_000 + note + "t" * 10_000
    assert "M" not in part.text and len(part.text) == 20_000 + len(note) > 20_000  # longer than "below 20000"
    assert part.original_bytes == 20_001 and part.call_id == "c1"


def test_an_odd_bound_gives_the_tail_the_extra_character() -> None:
    """``content[-max_length // 2 :]``: Python floors ``-7 // 2`` to -4, so a bound of 7 keeps 3 of head, 4 of tail."""
    assert truncate_content("abcdefghij", 7) == "abc" + NOTE.format(max_length=7) + "ghij"


def test_tool_calling_agent_records_outputs_whole() -> None:
    """``ToolCallingAgent``: ``observation = str(tool_call_result).strip()``, never truncated."""
    policy = Smolagents(SmolagentsConfig(agent="tool_calling"))
    text = "y" * 50_000
    assert policy.bound_tool_result(result(text)).text == text
    assert policy.bound_key() is None and Smolagents().bound_key() is not None


def test_the_log_holds_the_bounded_output() -> None:
    """The memory step's ``observations`` hold the truncated text: what every later prompt sends."""
    big = "line of output\n" * 3_000  # 45,000 characters
    c = conv(sys("You are a code agent."), user("Run the tests."), asst("", [call("c1")]), tool("c1", big), asst("ok"))
    res = Engine(Smolagents(), c, RunConfig(model=ModelConfig(context_window=200_000), tokenizer="chars4")).run()
    logged = [m for m in log_messages(res) if m.role == "tool"]
    assert logged[0].parts[0].text == truncate_content(big, 20_000)


def test_never_compacts_until_the_provider_rejects() -> None:
    """No compaction: every step is sent on every call; past the window the provider's error ends the run."""
    steps = []
    for k in range(40):
        steps += [asst(f"step {k}", [call(f"c{k}")]), tool(f"c{k}", "r" * 800)]
    c = conv(sys("You are a code agent."), user("Go."), *steps, asst("done"))
    policy = Smolagents()
    assert policy.decide(state_of(policy, c), "auto") is None
    assert policy.decide(state_of(policy, c), "manual") is None
    res = Engine(policy, c, C4).run()
    assert compaction_records(res) == []
    assert res.violations == [] and res.summary["finish_reason"] == "context-overflow"
