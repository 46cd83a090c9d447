"""The boundary (freeze_deep) and the wire codec, with hypothesis properties."""

import copy
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import io
import json
import os
import pathlib
import pickle
import threading
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotlab.errors import RactorBoundaryError, WireError
from robotlab.parallel import FrozenDict, boundary, freeze_deep, import_path, is_shareable, resolve, wire

# Types of the values below live where every backend's workers can import them (this module
# imports hypothesis, which subinterpreters refuse): tests/test_pool_faults.py sends them too.
from tests import fault_jobs
from tests.fault_jobs import Color, Pair, Point


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
    # Classes and module-level functions cross as themselves, by import path.
    st.sampled_from([ValueError, Color, fault_jobs.Scale, fault_jobs.CustomError, len, fault_jobs.power,
                     functools.reduce]),
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
def _local_class():
    class Local:
        pass

    return Local


# A class or module-level function is shareable (it crosses by import path): these are not.
BAD = [io.StringIO(), threading.Lock(), lambda: 1, (i for i in ()), Plain(), threading, Plain().__init__,
       functools.partial(len), _local_class()]


def assert_deeply_immutable(value):
    if isinstance(value, FrozenDict):
        for k, v in value.items():
            assert_deeply_immutable(k)
            assert_deeply_immutable(v)
    elif isinstance(value, (tuple, frozenset)):
        for v in value:
            assert_deeply_immutable(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):  # a class crosses by reference
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



def nested(depth, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("make", [lambda v: [v], lambda v: {"k": v}, lambda v: Point(v, 0)],
                         ids=["list", "dict", "record"])
def test_one_depth_limit_for_freeze_deep_and_the_wire(make):
    value = 1
    for _ in range(boundary.MAX_DEPTH):
        value = make(value)
    frozen = freeze_deep(value)
    assert wire.decode(wire.encode(frozen)) == frozen  # what freeze_deep accepts, the wire carries
    with pytest.raises(RactorBoundaryError, match=rf"at args.*\.\.\.\(\d+ levels\)\.\.\..*: the value nests deeper "
                                                   rf"than {boundary.MAX_DEPTH} levels"):
        freeze_deep(make(value), root="args")
    # Too deep for pickle itself (a worker's result is not frozen first): the same error type, never RecursionError.
    with pytest.raises(RactorBoundaryError, match="nests deeper than pickle can recurse"):
        wire.encode(nested(100_000))


def test_a_frozendict_changed_through_dict_methods_is_checked_again():
    frozen = FrozenDict({"a": (1,)})
    assert freeze_deep(frozen) is frozen  # intact: the same object
    dict.__setitem__(frozen, "io", io.StringIO())
    with pytest.raises(RactorBoundaryError, match=r"at args\['io'\]: _io\.StringIO is not shareable"):
        freeze_deep(frozen, root="args")
    dict.__setitem__(frozen, "io", [1])  # smuggled mutable data comes back frozen, in a new FrozenDict
    refrozen = freeze_deep(frozen)
    assert refrozen == {"a": (1,), "io": (1,)} and refrozen is not frozen


@dataclasses.dataclass(frozen=True, repr=False)
class BadRepr:
    """A shareable key whose repr fails."""

    def __repr__(self):
        raise RuntimeError("no repr")


@dataclasses.dataclass(frozen=True)
class WithInitFalse:
    items: object
    count: int = dataclasses.field(init=False, default=7)


class TaggedPath(pathlib.PurePosixPath):
    pass


def test_edge_values_cross_equal_or_are_refused_with_a_boundary_error():
    # Keys whose repr is costly or fails are named only when a message needs them.
    assert freeze_deep({10**5000: [1]}) == {10**5000: (1,)}
    with pytest.raises(RactorBoundaryError, match=r"at args\[<int key>\]: _io\.StringIO"):
        freeze_deep({10**5000: io.StringIO()}, root="args")
    with pytest.raises(RactorBoundaryError, match=r"at args\[<tests.test_boundary_wire.BadRepr key>\]"):
        freeze_deep({BadRepr(): io.StringIO()}, root="args")
    # A frozen dataclass with an init=False field is rebuilt without calling its constructor.
    frozen = freeze_deep(WithInitFalse([1, 2]))
    assert frozen == WithInitFalse((1, 2)) and frozen.count == 7 and frozen.items == (1, 2)
    # A PurePath subclass crosses only when it carries nothing but its path.
    assert freeze_deep(TaggedPath("/a")) == TaggedPath("/a")
    tagged = TaggedPath("/a")
    tagged.extra = io.StringIO()
    with pytest.raises(RactorBoundaryError, match=r"carries attributes besides its path \(extra\)"):
        freeze_deep(tagged)
    # A lone surrogate cannot be msgpack (UTF-8): it travels as pickle and comes back equal.
    for text in ("\ud800", {"k": "a\udfffb"}):
        assert wire.decode(wire.encode(text)) == text


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


def test_frozendict_is_deeply_frozen_by_construction_and_refuses_every_mutation():
    fd = FrozenDict({"ids": [1, 2], "meta": {"tags": {"a"}}}, extra=bytearray(b"x"))
    assert fd == {"ids": (1, 2), "meta": {"tags": frozenset({"a"})}, "extra": b"x"}
    assert type(fd["meta"]) is FrozenDict and freeze_deep(fd) is fd
    for mutate in (lambda: fd.__setitem__("a", 1), lambda: fd.__delitem__("ids"), fd.clear, fd.popitem,
                   lambda: fd.pop("ids"), lambda: fd.setdefault("b", 1), lambda: fd.update(b=1)):
        with pytest.raises(TypeError, match="FrozenDict is immutable"):
            mutate()
    with pytest.raises(TypeError, match="FrozenDict is immutable"):
        fd |= {"b": 1}
    assert fd == {"ids": (1, 2), "meta": {"tags": frozenset({"a"})}, "extra": b"x"}
    copy_ = fd.copy()
    copy_["b"] = 1  # copy() and | give a plain, mutable dict
    assert type(copy_) is dict and type(fd | {"b": 1}) is dict and "b" not in fd
    assert FrozenDict.fromkeys("ab", [0]) == {"a": (0,), "b": (0,)}
    assert json.loads(json.dumps(FrozenDict(a=[1, {"b": None}]))) == {"a": [1, {"b": None}]}
    restored = pickle.loads(pickle.dumps(fd, 5))
    assert restored == fd and type(restored) is FrozenDict and type(restored["meta"]) is FrozenDict
    assert copy.deepcopy(fd) == fd and type(copy.deepcopy(fd)) is FrozenDict
    with pytest.raises(RactorBoundaryError, match=r"at value\['io'\]"):
        FrozenDict(io=io.StringIO())
    with pytest.raises(TypeError, match="cannot be subclassed"):
        type("Sub", (FrozenDict,), {})


def fast_paths():
    yield pytest.param(boundary._freeze_plain_py, id="python")
    if boundary._freeze_plain_c is not None:
        yield pytest.param(boundary._freeze_plain_c, id="c")


def freeze_fast(fast, value):
    return fast(value, FrozenDict, boundary._LEAF_TYPES, boundary._NOT_PLAIN)


@pytest.mark.parametrize("fast", list(fast_paths()))
@given(values)
@settings(max_examples=300, deadline=None)
def test_the_fast_paths_agree_with_the_walker(fast, value):
    before = copy.deepcopy(value)
    frozen = freeze_fast(fast, value)
    assert value == before
    if frozen is not boundary._NOT_PLAIN:
        type_exact_equal(frozen, boundary._Freezer("value").run(value))
        assert freeze_fast(fast, frozen) is frozen
    if boundary._freeze_plain_c is not None and fast is boundary._freeze_plain_c:
        by_python = freeze_fast(boundary._freeze_plain_py, value)
        assert (by_python is boundary._NOT_PLAIN) == (frozen is boundary._NOT_PLAIN)
        if frozen is not boundary._NOT_PLAIN:
            type_exact_equal(frozen, by_python)


@pytest.mark.parametrize("fast", list(fast_paths()))
def test_the_fast_paths_hand_over_what_needs_the_walker(fast):
    not_plain = boundary._NOT_PLAIN
    for value in ({(1, 2): "tuple key"}, [Plain()], {"x": Point(1, 2)}, {frozenset({1}): 1}, {Color.RED: 1},
                  {"s": {(1,)}}, [1, [2, [3, io.StringIO()]]]):
        assert freeze_fast(fast, value) is not_plain
    deep = current = []
    for _ in range(100):
        current.append([])
        current = current[0]
    assert freeze_fast(fast, deep) is not_plain  # deeper than the fast path goes: the walker's job
    plain = (1, "a", None, b"b", 1.5, 2j, True)
    assert freeze_fast(fast, plain) is plain
    tags = frozenset({"a", 1})
    assert freeze_fast(fast, tags) is tags
    assert freeze_fast(fast, [bytearray(b"ab")]) == (b"ab",)
    assert freeze_fast(fast, Color.RED) is Color.RED  # learned by the walker in earlier tests, or a leaf type
    assert freeze_fast(fast, {"when": datetime.date(2026, 1, 1)}) == {"when": datetime.date(2026, 1, 1)}


def test_the_walker_teaches_the_fast_path_new_leaf_types():
    class Mood(enum.Enum):
        CALM = 1

    assert Mood not in boundary._LEAF_TYPES
    assert freeze_deep({"m": Mood.CALM}) == {"m": Mood.CALM}
    assert Mood in boundary._LEAF_TYPES
    frozen = freeze_fast(boundary._freeze_plain, [Mood.CALM])
    assert frozen == (Mood.CALM,)


def test_the_c_fast_path_is_built_where_a_compiler_is():
    if boundary._freeze_plain_c is None:
        reason = "robotlab.parallel._freeze was not built (no C compiler at install time)"
        if os.environ.get("ROBOTLAB_REQUIRE_ACCELERATOR") == "1":
            pytest.fail(f"ROBOTLAB_REQUIRE_ACCELERATOR=1 but {reason}")
        pytest.skip(reason)
    assert boundary._freeze_plain is boundary._freeze_plain_c
    with pytest.raises(TypeError, match="takes 4 arguments"):
        boundary._freeze_plain_c(1)
    with pytest.raises(TypeError, match="dict subclass"):
        boundary._freeze_plain_c(1, tuple, set(), None)


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
    if bytes(frame) == wire.encode(freeze_deep(value)):
        return  # the drawn byte was the one already there
    with pytest.raises(WireError):
        wire.decode(bytes(frame))


def _frames():
    import cloudpickle  # noqa: F401  (the C frame below needs it)

    scale = 3
    return {
        "msgpack": wire.encode({"name": "robot", "ids": [1, 2, 3]}),
        "pickle": wire.encode(freeze_deep({"name": "robot", "when": datetime.date(2026, 1, 1), "ids": [1, 2]})),
        "cloudpickle": wire.encode(lambda x: x * scale, allow_code=True),
    }


@pytest.mark.parametrize("kind", ["msgpack", "pickle", "cloudpickle"])
def test_every_single_bit_flip_of_a_frame_raises_wire_error(kind):
    frame = _frames()[kind]
    assert frame[:1] == {"msgpack": b"M", "pickle": b"P", "cloudpickle": b"C"}[kind]
    for bit in range(len(frame) * 8):
        flipped = bytearray(frame)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(WireError):
            wire.decode(bytes(flipped))


def test_what_unpickling_raises_is_a_wire_error_but_an_interruption_passes_through():
    with pytest.raises(WireError, match="SystemExit"):  # the data's own code exits: a bad frame, not an exit
        wire.decode(wire.encode(fault_jobs.ExitAtUnpickle(), msgpack=False))
    with pytest.raises(WireError, match="GeneratorExit"):
        wire.decode(pickle_frame(fault_jobs.generator_exit))
    for raising, interruption in ((fault_jobs.interrupt, KeyboardInterrupt),
                                  (fault_jobs.interrupted, fault_jobs.Interrupted)):
        with pytest.raises(interruption):  # a Ctrl-C or a timeout arriving mid-decode is kept, not turned into data
            wire.decode(pickle_frame(raising))


def pickle_frame(raising) -> bytes:
    """A pickle frame whose loading calls *raising*."""
    class Calls:
        def __reduce__(self):
            return raising, ()
    return wire.encode(Calls(), msgpack=False)


def test_a_corrupt_length_never_allocates_beyond_the_frame():
    frame = bytearray(wire.encode(freeze_deep({"ids": list(range(50))})))
    frame[1:5] = (2**32 - 1).to_bytes(4, "big")  # claims 4 GiB
    with pytest.raises(WireError, match="length mismatch"):
        wire.decode(bytes(frame))


def test_empty_and_unknown_frames():
    import struct
    import zlib

    with pytest.raises(WireError, match="truncated"):
        wire.decode(b"")
    prefix = struct.pack(">cI", b"Z", 0)
    with pytest.raises(WireError, match="unknown frame kind"):
        wire.decode(prefix + zlib.crc32(prefix).to_bytes(4, "big"))
