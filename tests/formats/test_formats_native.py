"""The native format: deterministic writing, exact round trips, and clear refusals."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.conversation import Conversation, Fact, Message, Part, Tool, Usage
from sim.core.errors import FormatError
from sim.formats import FORMATS, native, read


def _sample() -> Conversation:
    msgs = (
        Message("s", "system", (Part("text", "be brief"),)),
        Message("u", "user", (Part("text", "naïve → ok? 🚀\nline two"), Part("command", "", name="compact"))),
        Message(
            "a",
            "assistant",
            (
                Part("thinking", "hm"),
                Part("tool_call", call_id="c1", name="ls", args="{}"),
                Part("tool_call", call_id="c2", name="cat", args='{"p": "x"}'),
            ),
            usage=Usage(10, 2, 300, 4),
            meta=MappingProxyType({"k": (1, 2)}),
        ),
        Message("t1", "tool", (Part("tool_result", "a\nb", call_id="c2", name="cat", original_bytes=9000),)),
        Message("t2", "tool", (Part("tool_result", "", call_id="c1", name="ls", is_error=True),)),
        Message("p", "assistant", (Part("change", "edit", ref="ch1"),), pending=True),
        Message("r", "user", (Part("revert", "undo", ref="ch1"),), resolves=("p",)),
    )
    facts = (Fact("f", "artifact", "x", "u", ("a", "r")),)
    return Conversation("conv-1", msgs, facts, (Tool("ls", "list", '{"type": "object"}'),), {"source": "test"})


def test_registered() -> None:
    read_fn = FORMATS.get("native")
    assert read_fn is native.read


def test_round_trip_and_determinism(tmp_path: Path) -> None:
    conv = _sample()
    path = native.write(
        [conv, Conversation("conv-2", (Message("x", "user", (Part("text", "hi"),)),))], tmp_path / "c.jsonl"
    )
    result = read(path, "native")
    assert result.skipped == []
    assert result.conversations[0] == conv
    assert result.conversations[1].id == "conv-2"
    assert dict(result.conversations[0].meta) == {"source": "test"}
    assert result.conversations[0].messages[2].meta == {"k": [1, 2]}
    assert native.dumps(result.conversations[0]) == native.dumps(conv)
    text = path.read_text(encoding="utf-8")
    assert "🚀" in text and "\\u" not in text  # UTF-8 kept as is
    assert text.endswith("\n") and "\r" not in text


def test_dumps_is_canonical() -> None:
    lines = native.dumps(_sample()).splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "csim-conversation" and header["version"] == 1
    for line in lines:
        obj = json.loads(line)
        assert line == json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    first_part = json.loads(lines[1])["parts"][0]
    assert first_part == {"kind": "text", "text": "be brief"}  # defaults left out
    assert "usage" not in json.loads(lines[1])


def test_unknown_version_names_supported(tmp_path: Path) -> None:
    p = tmp_path / "v.jsonl"
    p.write_text('{"format":"csim-conversation","version":7,"id":"x","tools":[],"meta":{}}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"v\.jsonl:1: .*version 7.*reads version 1"):
        read(p, "native")


def test_first_line_must_be_header(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_text('{"type":"message","id":"m","role":"user","parts":[{"kind":"text","text":"x"}]}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"h\.jsonl:1: the first record is not a csim-conversation header"):
        read(p, "native", lenient=True)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ('{"type":"message","id":"m","role":"robot","parts":[{"kind":"text"}]}', "role 'robot'"),
        ('{"type":"message","id":"m","role":"user","parts":[{"kind":"text","colour":1}]}', "unknown keys"),
        ('{"type":"message","id":"m","role":"user","parts":[]}', "no parts"),
        ('{"type":"message","id":"m","role":"tool","parts":[{"kind":"text","text":"x"}]}', "cannot hold"),
        (
            '{"type":"message","id":"m","role":"user","parts":[{"kind":"text","text":5}]}',
            "should be a string",
        ),
        ('{"type":"note","id":"m"}', "neither 'message' nor 'fact'"),
        ('{"type":"fact","id":"f","kind":"rumour","text":"x","source":"m"}', "kind 'rumour'"),
    ],
)
def test_bad_records_name_line(tmp_path: Path, record: str, problem: str) -> None:
    p = tmp_path / "b.jsonl"
    p.write_text(
        '{"format":"csim-conversation","version":1,"id":"x","tools":[],"meta":{}}\n' + record + "\n",
        encoding="utf-8",
    )
    with pytest.raises(FormatError, match=r"b\.jsonl:2: ") as info:
        read(p, "native")
    assert problem in str(info.value)
    lenient = read(p, "native", lenient=True)
    assert [s.line for s in lenient.skipped][:1] == [2]


def test_duplicate_id_and_dangling_fact(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    head = '{"format":"csim-conversation","version":1,"id":"x","tools":[],"meta":{}}\n'
    msg = '{"type":"message","id":"m","role":"user","parts":[{"kind":"text","text":"x"}]}\n'
    fact = '{"type":"fact","id":"f","kind":"recall","text":"x","source":"nowhere"}\n'
    p.write_text(head + msg + msg + fact, encoding="utf-8")
    with pytest.raises(FormatError, match=r"d\.jsonl:3: .*appears twice"):
        read(p, "native")
    result = read(p, "native", lenient=True)
    assert [m.id for m in result.conversations[0].messages] == ["m"]
    assert [s.line for s in result.skipped] == [3, 4]


def test_unpaired_result_strict_and_lenient(tmp_path: Path) -> None:
    p = tmp_path / "u.jsonl"
    p.write_text(
        '{"format":"csim-conversation","version":1,"id":"x","tools":[],"meta":{}}\n'
        '{"type":"message","id":"a","role":"assistant","parts":[{"kind":"tool_call","call_id":"c","name":"n"}]}\n'
        '{"type":"message","id":"u","role":"user","parts":[{"kind":"text","text":"stop"}]}\n',
        encoding="utf-8",
    )
    with pytest.raises(FormatError, match=r"u\.jsonl:2: .*have no result"):
        read(p, "native")
    result = read(p, "native", lenient=True)
    assert [m.id for m in result.conversations[0].messages] == ["a", "a~aborted", "u"]
    assert result.skipped[0].reason.startswith("repaired:")


# --- property: any conversation survives the round trip -------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_ids = st.text("abcdefghij0123456789-", min_size=1, max_size=6)


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    """Valid scripts with every part kind, unicode text, usage, pending and facts."""
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message("sys", "system", (Part("text", draw(_text)),)))
    for turn in range(draw(st.integers(0, 4))):
        user_parts = [Part("text", draw(_text))]
        if draw(st.booleans()):
            user_parts.append(Part("command", draw(_text), name="compact"))
        messages.append(Message(f"u{turn}", "user", tuple(user_parts)))
        calls = [
            Part("tool_call", call_id=f"c{turn}-{k}", name=draw(_ids), args=draw(_text))
            for k in range(draw(st.integers(0, 3)))
        ]
        usage = draw(st.none() | st.builds(Usage, *(st.integers(0, 10**6) for _ in range(4))))
        parts = [Part("thinking", draw(_text))] if draw(st.booleans()) else []
        parts += [Part("text", draw(_text)), *calls]
        if draw(st.booleans()):
            parts.append(Part("change", draw(_text), ref=f"ch{turn}"))
        messages.append(Message(f"a{turn}", "assistant", tuple(parts), usage=usage, pending=draw(st.booleans())))
        for k, call in enumerate(calls):
            result = Part(
                "tool_result",
                draw(_text),
                call_id=call.call_id,
                name=call.name,
                is_error=draw(st.booleans()),
                original_bytes=draw(st.none() | st.integers(0, 10**9)),
                is_json=draw(st.booleans()),
            )
            messages.append(Message(f"t{turn}-{k}", "tool", (result,)))
    ids = [m.id for m in messages]
    facts = (
        tuple(
            Fact(
                f"f{k}",
                "recall",
                draw(_text),
                draw(st.sampled_from(ids)),
                tuple(draw(st.lists(st.sampled_from(ids), max_size=2))),
            )
            for k in range(draw(st.integers(0, 2)))
        )
        if ids
        else ()
    )
    return Conversation(draw(_ids), tuple(messages), facts, (Tool(draw(_ids), draw(_text), "{}"),))


@settings(max_examples=60, deadline=None)
@given(convs=st.lists(conversations(), min_size=1, max_size=3))
def test_round_trip_property(convs: list[Conversation]) -> None:
    text = "".join(native.dumps(c) for c in convs)
    with tempfile.TemporaryDirectory() as d:
        path = native.write(convs, Path(d) / "p.jsonl")
        assert path.read_text(encoding="utf-8") == text
        back = read(path, "native")
    assert back.skipped == []
    assert back.conversations == convs
    assert "".join(native.dumps(c) for c in back.conversations) == text


def test_documented_example_is_canonical(tmp_path: Path) -> None:
    """The example in datasets/FORMAT-native.md reads strictly and is exactly what csim writes."""
    doc = Path(__file__).resolve().parents[2] / "datasets" / "FORMAT-native.md"
    text = doc.read_text(encoding="utf-8")
    example = text.split("```jsonl\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.jsonl"
    path.write_text(example, encoding="utf-8")
    (conv,) = read(path, "native").conversations
    assert native.dumps(conv) == example
    assert {p.kind for m in conv.messages for p in m.parts} == {
        "text",
        "thinking",
        "tool_call",
        "tool_result",
        "change",
        "command",
    }
