"""The boundary (freeze_deep) and the wire codec, with hypothesis properties."""

import contextlib
import copy
import dataclasses
import datetime
import decimal
import enum
import fractions
import io
import pathlib
import threading
import uuid
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotlab.errors import RactorBoundaryError, WireError
from robotlab.parallel import FrozenDict, freeze_deep, import_path, is_shareable, resolve, wire


class Color(enum.Enum):
    RED = 1


@dataclasses.dataclass(frozen=True)
class Point:
    x: object
    y: object


class Pair(NamedTuple):
    a: object
    b: object


class Plain:
    def __init__(self):
        self.state = []


def module_function():
    return 1


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10),
    st.binary(max_size=10), st.just(Color.RED), st.datetimes(), st.dates(), st.timedeltas(),
    st.decimals(allow_nan=False), st.fractions(), st.uuids(), st.just(pathlib.PurePosixPath("/a/b")),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
)
hashable = st.one_of(st.integers(), st.text(max_size=5), st.booleans())
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(hashable, children, max_size=4),
        st.sets(hashable, max_size=4),
        st.builds(Point, children, children),
        st.builds(Pair, children, children),
        st.binary(max_size=5).map(bytearray),
    ),
    max_leaves=20,
)
BAD = [io.StringIO(), threading.Lock(), lambda: 1, (i for i in ()), Plain(), threading, pytest.raises]


def assert_deeply_immutable(value):
    if isinstance(value, FrozenDict):
        for k, v in value.items():
            assert_deeply_immutable(k)
            assert_deeply_immutable(v)
    elif isinstance(value, (tuple, frozenset)):
        for v in value:
            assert_deeply_immutable(v)
    elif dataclasses.is_dataclass(value):
        assert type(value).__dataclass_params__.frozen
        for f in dataclasses.fields(value):
            assert_deeply_immutable(getattr(value, f.name))
    else:
        assert not isinstance(value, (list, dict, set, bytearray))


def same_structure(original, frozen):
    """frozen is original with containers swapped for their frozen kind."""
    if isinstance(original, dict):
        assert type(frozen) is FrozenDict and frozen == dict(frozen.items())
        assert set(map(repr, original)) == set(map(repr, frozen))
        for k in original:
            same_structure(original[k], frozen[k])
    elif isinstance(original, Pair):
        assert type(frozen) is Pair
        same_structure(original.a, frozen.a)
        same_structure(original.b, frozen.b)
    elif isinstance(original, (list, tuple)):
        assert type(frozen) is tuple and len(frozen) == len(original)
        for a, b in zip(original, frozen, strict=True):
            same_structure(a, b)
    elif isinstance(original, set):
        assert frozen == frozenset(original)
    elif isinstance(original, bytearray):
        assert frozen == bytes(original) and type(frozen) is bytes
    elif isinstance(original, Point):
        same_structure(original.x, frozen.x)
        same_structure(original.y, frozen.y)
    else:
        assert frozen is original


def type_exact_equal(a, b):
    assert type(a) is type(b)
    if isinstance(a, FrozenDict):
        assert list(a) == list(b)
        for k in a:
            type_exact_equal(a[k], b[k])
    elif isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            type_exact_equal(x, y)
    else:
        assert a == b or (a != a and b != b)


@given(values)
@settings(max_examples=200, deadline=None)
def test_freeze_deep_properties(value):
    before = copy.deepcopy(value)
    frozen = freeze_deep(value)
    assert value == before  # the input is never mutated
    assert_deeply_immutable(frozen)
    same_structure(value, frozen)
    assert freeze_deep(frozen) is frozen  # idempotent: the same object back
    assert is_shareable(value)
    type_exact_equal(wire.decode(wire.encode(frozen)), frozen)  # survives the codec, types included


@given(values, st.sampled_from(BAD), st.integers(min_value=0, max_value=3))
@settings(max_examples=200, deadline=None)
def test_disallowed_values_are_refused_with_their_path(value, bad, depth):
    payload, path = bad, "args"
    for i in range(depth):
        payload = {"k": [value, payload]} if i % 2 else [payload]
    # compute the expected path from the outside in
    expected = "args"
    layers = []
    for i in range(depth):
        layers.append("['k'][1]" if i % 2 else "[0]")
    expected += "".join(reversed(layers))
    with pytest.raises(RactorBoundaryError) as caught:
        freeze_deep(payload, root=path)
    assert f"at {expected}:" in str(caught.value)
    assert not is_shareable(payload)


def test_exact_message_cycles_and_deep_nesting():
    with pytest.raises(RactorBoundaryError, match=r"^Cannot make value shareable at args\['io'\]: "
                                                   r"_io\.StringIO is not shareable$"):
        freeze_deep({"io": io.StringIO()}, root="args")
    loop = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(RactorBoundaryError, match="cycle"):
        freeze_deep(loop)
    deep = current = []
    for _ in range(10_000):
        current.append([])
        current = current[0]
    frozen = freeze_deep(deep)
    assert isinstance(frozen, tuple)


def test_shared_subobjects_are_not_cycles_and_frozen_fields_rebuild():
    shared = [1]
    assert freeze_deep([shared, shared]) == ((1,), (1,))
    assert freeze_deep(Point([1], {"a": 2})) == Point((1,), FrozenDict(a=2))
    with pytest.raises(RactorBoundaryError, match=r"\.x"):
        freeze_deep(Point(io.BytesIO(), 1))

    @dataclasses.dataclass
    class Mutable:
        x: int

    assert not is_shareable(Mutable(1))


def test_frozendict_behaviour():
    fd = FrozenDict(a=1)
    assert fd == {"a": 1} and hash(fd) == hash(FrozenDict(a=1))
    with pytest.raises(TypeError):
        fd["b"] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        fd.x = 1


def test_import_path_and_resolve():
    assert import_path(module_function) == f"{__name__}:module_function"
    assert resolve(import_path(Point)) is Point
    with pytest.raises(RactorBoundaryError, match="lambda"):
        import_path(lambda: 1)

    def nested():
        pass

    with pytest.raises(RactorBoundaryError, match="inside a function"):
        import_path(nested)
    with pytest.raises(RactorBoundaryError, match="cannot import module"):
        resolve("no_such_module_xyz:thing")
    with pytest.raises(RactorBoundaryError, match="has no attribute"):
        resolve("os:no_such_attr")
    main_fn = type(module_function)(module_function.__code__, {}, "f")
    main_fn.__module__ = "__main__"
    with pytest.raises(RactorBoundaryError, match="workers cannot import __main__"):
        import_path(main_fn)


def test_wire_plain_data_uses_msgpack_and_code_needs_opt_in():
    frame = wire.encode({"a": [1, "x", None]})
    assert frame[:1] == b"M" and wire.decode(frame) == {"a": [1, "x", None]}
    assert wire.encode(freeze_deep({"a": [1]}))[:1] == b"P"
    assert wire.encode({"a": 1}, msgpack=False)[:1] == b"P"
    with pytest.raises(WireError, match="allow_code=True"):
        wire.encode(lambda: 1)
    assert wire.decode(wire.encode(lambda: 7, allow_code=True))() == 7
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    assert wire.decode(wire.encode((when, decimal.Decimal("1.5"), fractions.Fraction(1, 3), uuid.UUID(int=1))))


@given(values, st.data())
@settings(max_examples=200, deadline=None)
def test_corrupt_frames_raise_wire_error_or_decode(value, data):
    frame = bytearray(wire.encode(freeze_deep(value)))
    if data.draw(st.booleans()):
        frame = frame[: data.draw(st.integers(min_value=0, max_value=len(frame) - 1))]
    else:
        index = data.draw(st.integers(min_value=0, max_value=len(frame) - 1))
        frame[index] = data.draw(st.integers(min_value=0, max_value=255))
    with contextlib.suppress(WireError):
        wire.decode(bytes(frame))


def test_empty_and_unknown_frames():
    with pytest.raises(WireError, match="truncated"):
        wire.decode(b"")
    with pytest.raises(WireError, match="unknown frame kind"):
        wire.decode(b"Z\x00\x00\x00\x00")
