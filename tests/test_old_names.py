"""Names renamed to say what they hold keep working for code written against them, with a warning."""

import importlib

import pytest

RENAMED = [
    ("streamfsm.wire", "SSEEvent", "Frame"),
    ("streamfsm.wire", "PROVIDERS", "FORMAT_NAMES"),
    ("streamfsm.runtime", "SseWire", "StreamWire"),
    ("streamfsm.testing", "FORMATS", "SSE_FORMATS"),
]


@pytest.mark.parametrize(("module", "old", "new"), RENAMED)
def test_an_old_name_is_the_new_one_and_says_so(module: str, old: str, new: str) -> None:
    package = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{old} is now {new}"):
        value = getattr(package, old)
    assert value is getattr(package, new)
    assert old not in package.__all__ and new in package.__all__


def test_a_name_never_given_is_still_missing() -> None:
    with pytest.raises(AttributeError, match="NoSuchName"):
        importlib.import_module("streamfsm.wire").NoSuchName  # noqa: B018
