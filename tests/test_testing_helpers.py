from hypothesis import given
from hypothesis import strategies as st

from loomctx.testing import HashingEmbedder, WordCounter
from loomctx.tokens.protocol import TokenCounter


def test_word_counter_is_a_token_counter():
    c = WordCounter()
    assert isinstance(c, TokenCounter)
    assert c.count("a  b\nc") == 3
    assert c.truncate("one two three", 2) == "one two"


@given(st.text(), st.integers(0, 20))
def test_word_counter_truncate_is_a_fitting_prefix(text, n):
    c = WordCounter()
    cut = c.truncate(text, n)
    assert text.startswith(cut)
    assert c.count(cut) <= n


def test_hashing_embedder_is_exported():
    assert HashingEmbedder().embed(["x"]).shape[0] == 1
