"""A string value holding a memory address (pyparsing's ``Re:(<function <lambda> at 0x7f…>)``)
is the same text in two processes once the address is blanked — in its identity digest, in
every container shape the digest walks, and where replay compares inline scalars — and a
difference in any other character is still a difference."""

from __future__ import annotations

import pytest

from snapstate_capture.replay.compare import inline_digest
from snapstate_capture.replay.fastpath import FastMatcher
from snapstate_capture.values.identity import identity
from snapstate_capture.values.identity_at_capture import capture_identity

ONE = "Re:(<function <lambda> at 0x7ffff479cea0>)"
TWO = "Re:(<function <lambda> at 0x7fffefb0d6c0>)"
OTHER = "Rx:(<function <lambda> at 0x7ffff479cea0>)"


class Named:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("shape", [
    lambda s: s, lambda s: [s, 1], lambda s: (s, "x"), lambda s: {s, "x"},
    lambda s: {"name": s}, lambda s: {s: 1}, lambda s: Named(s), lambda s: s * 30,
    lambda s: "<" + s,  # a repr-like text: its bare hex words count too
], ids=["str", "list", "tuple", "set", "dict-value", "dict-key", "object", "long", "repr"])
def test_texts_differing_only_in_an_address_have_one_identity(shape):
    assert identity(shape(ONE)) == identity(shape(TWO))
    assert identity(shape(ONE)) != identity(shape(OTHER))


def test_a_dict_of_scalars_digested_item_by_item_blanks_too():
    assert capture_identity({"a": ONE}, []) == capture_identity({"a": TWO}, [])
    assert capture_identity({"a": ONE}, []) != capture_identity({"a": OTHER}, [])


def test_texts_without_addresses_keep_their_digest():
    """Strings that hold no address digest as before (recordings keep matching), and a hex
    number that is no address (unaligned) or not in a repr-like text is kept."""
    assert identity(["plain", 1]) != identity(["plain", 2])
    assert identity("<id 7ffff479cea1>") != identity("<id 7ffff479cea9>")
    assert identity("id 7ffff479cea0") != identity("id 7ffff479cea8")


def test_inline_scalars_compare_with_addresses_blanked():
    assert inline_digest(ONE) == inline_digest(TWO)
    assert inline_digest(ONE) != inline_digest(OTHER)
    assert inline_digest(1) != inline_digest(True)
    matcher = object.__new__(FastMatcher)  # ``_same`` reads no state for an inline ref
    assert matcher._same({"v": ONE}, "label", TWO)
    assert not matcher._same({"v": ONE}, "label", OTHER)
