"""Tokenizers: exact offline counts, the chars/4 estimator, and counting each text once."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core.errors import EncodingUnavailable, UnknownName
from sim.core.tokenizers import Chars4, CountingTokenizer, Tiktoken, get_tokenizer


def test_cl100k_known_counts() -> None:
    tok = Tiktoken("cl100k_base")
    # Golden counts of the cl100k_base encoding (stable across tiktoken versions).
    assert tok.count("hello world") == 2
    assert tok.count("") == 0
    assert tok.count("<|endoftext|>") > 1  # special-token text is counted as ordinary text, never rejected


def test_missing_encoding_says_what_to_do() -> None:
    with pytest.raises(EncodingUnavailable, match="never downloads"):
        Tiktoken("o200k_base")


def test_unknown_tokenizer_suggests() -> None:
    with pytest.raises(UnknownName, match="Did you mean 'cl100k_base'"):
        get_tokenizer("cl100k")


@given(st.text(max_size=200))
def test_chars4_is_ceiling_of_quarter(text: str) -> None:
    assert Chars4().count(text) == math.ceil(len(text) / 4)


def test_each_distinct_text_counted_once() -> None:
    tok = CountingTokenizer(Chars4())
    for _ in range(3):
        for t in ("a", "bb", "a", "ccc"):
            tok.count(t)
    assert tok.calls == 3


@given(st.lists(st.text(max_size=30), max_size=10))
def test_memo_agrees_with_inner(texts: list[str]) -> None:
    inner = Tiktoken("cl100k_base")
    memo = CountingTokenizer(inner)
    assert [memo.count(t) for t in texts] == [inner.count(t) for t in texts]


@given(st.text(max_size=200) | st.sampled_from(["<|endoftext|>", "a <|fim_prefix|> b", "<|endofprompt|>x"]))
def test_special_token_text_counts_as_ordinary_text(text: str) -> None:
    """The count is tiktoken's encode with no special token allowed or refused (what encode_ordinary is)."""
    tok = get_tokenizer("cl100k_base")
    assert tok.inner.count(text) == len(tok.inner._enc.encode(text, disallowed_special=()))
