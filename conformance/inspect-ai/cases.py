"""Scripted inputs for inspect_ai's compaction strategies (plain data; no import of ``sim`` or ``policies``).

A message is a dict: ``id``, ``role`` (system, user, assistant, tool) and, by role,
``text`` (a string, or ``{"fill": tag, "chars": n}`` for a filler text both sides expand alike with
:func:`expand`), ``thinking`` (assistant), ``calls`` (assistant: ``[{"id", "name", "args": {...}}]``),
``call_id`` and ``name`` (tool: one result per tool message, as inspect has it).

Two kinds of case, by ``settings["mode"]``:

* ``compact``: the strategy's own ``compact()`` on the message list, once (the list is the running view
  the handler would pass); our side: the policy's forced compaction (``decide(state, "overflow")``) with
  a threshold too high to refuse it.
* ``handler``: the ``compaction()`` handler driven as react drives it: before each assistant message of
  the script, ``compact_input(history)`` (whose summary message, if any, joins the history), then
  ``record_output`` with the input's own count as its usage; our side: the engine replaying the script.

``settings`` names inspect's strategy and its arguments, our policy and its parameters, and for handler
cases the model window (``set_model_info`` on inspect's side, ``context_window`` on ours).
"""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]


def expand(text: str | dict[str, Any]) -> str:
    """A filler ``{"fill": tag, "chars": n}`` as exactly ``n`` characters starting with the tag."""
    if isinstance(text, str):
        return text
    tag, n = text["fill"], text["chars"]
    body = f"{tag}: " + " ".join(f"{tag}-line{i} value={i * 7 % 97}" for i in range(n // 10 + 1))
    return body[:n]


def system(text: str = "You are a careful software agent. Use the tools to finish the task.") -> Msg:
    return {"id": "m0", "role": "system", "text": text}


def user(i: int, text: str | dict[str, Any]) -> Msg:
    return {"id": f"m{i}", "role": "user", "text": text}


def asst(i: int, text: str = "", calls: list[tuple[str, str]] = (), thinking: str | None = None) -> Msg:  # type: ignore[assignment]
    m: Msg = {"id": f"m{i}", "role": "assistant", "text": text}
    if thinking is not None:
        m["thinking"] = thinking
    if calls:
        m["calls"] = [{"id": cid, "name": name, "args": {"arg": f"{name} for {cid}"}} for cid, name in calls]
    return m


def tool(i: int, call_id: str, name: str = "bash", chars: int = 300) -> Msg:
    return {
        "id": f"m{i}",
        "role": "tool",
        "call_id": call_id,
        "name": name,
        "text": {"fill": f"out-{call_id}", "chars": chars},
    }


def steps(
    first: int,
    count: int,
    *,
    start_call: int = 1,
    chars: int = 300,
    names: list[str] | None = None,
    thinking: bool = False,
) -> list[Msg]:
    """``count`` tool steps (assistant with one call, then its result), ids from ``m{first}``."""
    out: list[Msg] = []
    i = first
    for k in range(count):
        cid = f"c{start_call + k}"
        name = names[k % len(names)] if names else "bash"
        out.append(
            asst(i, f"Step {start_call + k}: running {name}.", [(cid, name)], f"think {cid}" if thinking else None)
        )
        out.append(tool(i + 1, cid, name, chars))
        i += 2
    return out


def task(text: str = "Fix the failing test in tests/test_parser.py and explain the cause.") -> list[Msg]:
    return [system(), user(1, text)]


def compact(
    name: str,
    strategy: str,
    inspect_params: dict[str, Any],
    policy_params: dict[str, Any],
    messages: list[Msg],
    note: str = "",
) -> dict[str, Any]:
    return {
        "name": name,
        "note": note,
        "input": {"messages": messages},
        "settings": {
            "mode": "compact",
            "strategy": strategy,
            "inspect_params": inspect_params,
            "policy": f"inspect-{strategy}",
            "policy_params": policy_params,
        },
    }


def handler(
    name: str,
    strategy: str,
    inspect_params: dict[str, Any],
    policy_params: dict[str, Any],
    messages: list[Msg],
    window: int = 100_000,
    note: str = "",
) -> dict[str, Any]:
    case = compact(name, strategy, inspect_params, policy_params, messages, note)
    case["settings"].update(mode="handler", window=window)
    return case


HIGH = {"threshold": 10**9}  # our side of a ``compact`` case: never refuse as insufficient


def _edit_cases() -> list[dict[str, Any]]:
    parallel = [
        asst(2, "Reading three files at once.", [("c1", "read_file"), ("c2", "read_file"), ("c3", "read_file")]),
        tool(3, "c1", "read_file"),
        tool(4, "c2", "read_file"),
        tool(5, "c3", "read_file"),
        *steps(6, 1, start_call=4),
    ]
    across_turns = [
        *steps(2, 1),
        asst(4, "The first check passed."),
        user(5, "Now also run the linter."),
        *steps(6, 3, start_call=2),
    ]
    memory = [
        asst(2, "Saving notes.", [("c1", "memory")]),
        tool(3, "c1", "memory"),
        *steps(4, 3, start_call=2),
    ]
    memory[0]["calls"][0]["args"] = {
        "command": "create",
        "path": "/memories/notes.md",
        "file_text": "parser bug in tokenize()",
    }
    # A parallel batch whose results arrive out of call order (the read before the glob it was issued after):
    # edit.py lists uses by call order, so the glob is the oldest use and is cleared although its result is newer
    # than the read's, which is kept.
    out_of_order = [
        asst(2, "Listing and reading at once.", [("c1", "glob"), ("c2", "read_file")]),
        tool(3, "c2", "read_file"),
        tool(4, "c1", "glob", chars=2_000),
        *steps(5, 2, start_call=3),
    ]
    return [
        compact("edit_keeps_newest_3", "edit", {}, HIGH, [*task(), *steps(2, 5)]),
        compact("edit_out_of_order_parallel_results", "edit", {}, HIGH, [*task(), *out_of_order]),
        compact("edit_thinking_keep_1", "edit", {}, HIGH, [*task(), *steps(2, 4, thinking=True)]),
        compact("edit_parallel_batch_split", "edit", {}, HIGH, [*task(), *parallel]),
        compact(
            "edit_exclude_tools",
            "edit",
            {"exclude_tools": ["read_file"]},
            {**HIGH, "exclude_tools": ["read_file"]},
            [*task(), *steps(2, 6, names=["read_file", "bash", "bash"])],
        ),
        compact(
            "edit_keep_tool_uses_0",
            "edit",
            {"keep_tool_uses": 0},
            {**HIGH, "keep_tool_uses": 0},
            [*task(), *steps(2, 3)],
        ),
        compact(
            "edit_keep_thinking_all_keep_1_use",
            "edit",
            {"keep_thinking_turns": "all", "keep_tool_uses": 1},
            {**HIGH, "keep_thinking_turns": None, "keep_tool_uses": 1},
            [*task(), *steps(2, 3, thinking=True)],
        ),
        compact(
            "edit_keep_thinking_0",
            "edit",
            {"keep_thinking_turns": 0},
            {**HIGH, "keep_thinking_turns": 0},
            [*task(), *steps(2, 2, thinking=True)],
        ),
        compact(
            "edit_tool_search_skipped",
            "edit",
            {},
            HIGH,
            [*task(), *steps(2, 4, names=["tool_search", "bash", "bash", "bash"])],
        ),
        compact(
            "edit_trailing_assistant_dropped",
            "edit",
            {},
            HIGH,
            [*task(), *steps(2, 4), asst(10, "All four checks ran."), asst(11, "Summing up now.")],
        ),
        compact("edit_fewer_uses_than_kept", "edit", {}, HIGH, [*task(), *steps(2, 2)]),
        compact("edit_results_across_user_turns", "edit", {}, HIGH, [*task(), *across_turns]),
        compact(
            "edit_memory_content_args",
            "edit",
            {},
            HIGH,
            [*task(), *memory],
            note="differs: clear_memory_content rewrites file_text of memory calls; not modelled",
        ),
        compact(
            "edit_keep_tool_inputs_false",
            "edit",
            {"keep_tool_inputs": False},
            {**HIGH, "keep_tool_inputs": False},
            [*task(), *steps(2, 4)],
            note="differs: calls turned into text are not modelled (no such parameter)",
        ),
    ]


def _trim_cases() -> list[dict[str, Any]]:
    parallel = [
        asst(2, "Two reads.", [("c1", "read_file"), ("c2", "read_file")]),
        tool(3, "c1", "read_file"),
        tool(4, "c2", "read_file"),
        *steps(5, 2, start_call=3),
    ]
    live = [*steps(2, 1), user(4, "Also check the CLI entry point."), *steps(5, 6, start_call=2)]
    return [
        compact("trim_default_10_messages", "trim", {}, HIGH, [*task(), *steps(2, 5)]),
        compact("trim_cut_lands_on_result", "trim", {}, HIGH, [*task(), *steps(2, 4)]),
        compact("trim_parallel_results_orphaned", "trim", {}, HIGH, [*task(), *parallel]),
        compact("trim_preserve_half", "trim", {"preserve": 0.5}, {**HIGH, "preserve": 0.5}, [*task(), *steps(2, 6)]),
        compact("trim_drops_later_user_message", "trim", {}, HIGH, [*task(), *live]),
        compact(
            "trim_trailing_assistant", "trim", {}, HIGH, [*task(), *steps(2, 6), asst(14, "Done with the checks.")]
        ),
        compact("trim_thinking_loop", "trim", {}, HIGH, [*task(), *steps(2, 6, thinking=True)]),
    ]


def _summary_cases() -> list[dict[str, Any]]:
    two_users = [*steps(2, 2), asst(6, "Found it."), user(7, "Please also add a test."), *steps(8, 2, start_call=3)]
    return [
        compact("summary_no_tail", "summary", {}, HIGH, [*task(), *steps(2, 4)]),
        compact("summary_later_user_message_summarised", "summary", {}, HIGH, [*task(), *two_users]),
        compact(
            "auto_falls_back_to_summary",
            "auto",
            {},
            {**HIGH, "native": False},
            [*task(), *steps(2, 3)],
            note="mockllm has no native compaction: inspect falls back to the summary",
        ),
    ]


def _handler_cases() -> list[dict[str, Any]]:
    big = 4000  # tool output characters: about 1,000 tokens a step, so framing is a small share of a count
    script = [*task(), *steps(2, 12, chars=big), asst(26, "All steps done.")]
    longer = [*task(), *steps(2, 16, chars=big), asst(34, "All steps done.")]
    # Out-of-order parallel results, the glob's large: cleared by call order, the view fits the threshold; kept,
    # it would not (inspect's "fits" against an "insufficient").
    late_glob = [
        *task(),
        asst(2, "Listing and reading at once.", [("c1", "glob"), ("c2", "read_file")]),
        tool(3, "c2", "read_file"),
        tool(4, "c1", "glob", chars=3 * big),
        *steps(5, 2, start_call=3, chars=2_400),
        asst(9, "All steps done."),
    ]
    return [
        handler("handler_edit_out_of_order_fits", "edit", {"threshold": 4_000}, {"threshold": 4_000}, late_glob),
        handler("handler_below_threshold", "edit", {"threshold": 50_000}, {"threshold": 50_000}, script),
        handler("handler_edit_batched", "edit", {"threshold": 6_800}, {"threshold": 6_800}, longer),
        handler("handler_trim_running_view", "trim", {"threshold": 6_800}, {"threshold": 6_800}, longer),
        handler("handler_summary_running_view", "summary", {"threshold": 6_800}, {"threshold": 6_800}, longer),
        handler(
            "handler_threshold_share_of_window", "trim", {"threshold": 0.9}, {"threshold": 0.9}, script, window=7_500
        ),
        handler(
            "handler_edit_insufficient",
            "edit",
            {"threshold": 2_500},
            {"threshold": 2_500},
            script,
            note="differs: inspect raises 'Compaction insufficient' (the sample ends); we make no plan and go on",
        ),
    ]


CASES: list[dict[str, Any]] = [*_edit_cases(), *_trim_cases(), *_summary_cases(), *_handler_cases()]
