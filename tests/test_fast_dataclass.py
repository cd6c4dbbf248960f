"""torchlint.fast_dataclass behaves as the standard `@dataclass` on what torchlint's classes use:
each check runs on a pair of classes declared alike, one per decorator."""

from __future__ import annotations

import dataclasses
import pickle
from typing import ClassVar, Optional

import pytest

from torchlint import fast_dataclass as fast


def _pair(frozen: bool):  # type: ignore[no-untyped-def]
    made = []
    for module in (dataclasses, fast):
        @module.dataclass(frozen=frozen)
        class Point:
            x: int
            y: int = 0
            tags: tuple = module.field(default_factory=tuple)
            note: Optional[str] = module.field(default=None, compare=False)
            kind: ClassVar[str] = "point"

        made.append(Point)
    return made


@pytest.mark.parametrize("frozen", [True, False])
def test_construction_equality_hash_and_repr_match_the_standard_ones(frozen):
    std, ours = _pair(frozen)
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((), {"x": 3, "note": "n"}), ((1, 2, (3,)), {"note": "a"})]:
        a, b = std(*args, **kwargs), ours(*args, **kwargs)
        assert repr(a).replace("Point", "") == repr(b).replace("Point", "")
        assert vars(a) == vars(b) and list(vars(a)) == list(vars(b))
        assert b == ours(*args, **{**kwargs, "note": "other"})  # note is not compared
        assert b != ours(99) and (b == a) is False
    assert ours.kind == "point" and "kind" not in [f.name for f in dataclasses.fields(ours)]
    assert ours.__match_args__ == std.__match_args__ == ("x", "y", "tags", "note")
    if frozen:
        assert hash(ours(1, 2)) == hash(ours(1, 2, note="z"))
    else:
        assert ours.__hash__ is None and std.__hash__ is None


@pytest.mark.parametrize("frozen", [True, False])
def test_wrong_arguments_raise_type_error_like_the_standard_ones(frozen):
    for cls in _pair(frozen):
        for args, kwargs in [((), {}), ((1, 2, [], None, 5), {}), ((1,), {"x": 2}), ((1,), {"z": 2})]:
            with pytest.raises(TypeError):
                cls(*args, **kwargs)


def test_a_frozen_instance_refuses_writes_and_a_plain_one_takes_them():
    _, frozen = _pair(True)
    _, plain = _pair(False)
    p = frozen(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.other = 1
    q = plain(1)
    q.x = 5
    assert q == plain(5)


def test_the_standard_library_sees_a_dataclass():
    _, ours = _pair(True)
    p = ours(1, 2, (3,), note="n")
    assert dataclasses.is_dataclass(p) and dataclasses.is_dataclass(ours)
    assert [f.name for f in dataclasses.fields(ours)] == ["x", "y", "tags", "note"]
    assert dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": (3,), "note": "n"}
    assert dataclasses.replace(p, y=7) == fast.replace(p, y=7) == ours(1, 7, (3,))
    assert fast.replace(p, y=7).note == "n"


def test_pickling_round_trips():
    for value in (_Module(1, "a"), _Frozen(2)):
        again = pickle.loads(pickle.dumps(value))
        assert again == value and type(again) is type(value)


@fast.dataclass
class _Base:
    a: int
    b: str = "b"


@fast.dataclass
class _Module(_Base):
    c: list = fast.field(default_factory=list)

    def __post_init__(self) -> None:
        self.total = self.a * 2


@fast.dataclass(frozen=True)
class _Frozen:
    n: int

    def __eq__(self, other: object) -> bool:  # the class's own method wins
        return isinstance(other, _Frozen) and other.n % 10 == self.n % 10

    def __hash__(self) -> int:
        return self.n % 10


def test_inheritance_post_init_and_own_methods():
    m = _Module(3, c=[1])
    assert (m.a, m.b, m.c, m.total) == (3, "b", [1], 6)
    assert _Module(1).c == [] and _Module(1).c is not _Module(1).c  # a fresh default each time
    assert [f.name for f in dataclasses.fields(_Module)] == ["a", "b", "c"]
    assert repr(m) == "_Module(a=3, b='b', c=[1])"
    assert _Frozen(2) == _Frozen(12) and hash(_Frozen(12)) == 2
    with pytest.raises(TypeError):
        @fast.dataclass
        class _Bad:
            a: int = 1
            b: int


def test_a_standard_dataclass_inherits_the_fields_positionally_and_redeclared_defaults_stay():
    @fast.dataclass(frozen=True)
    class Base:
        x: int
        y: list = fast.field(default_factory=list)
        z: int = 3

    @dataclasses.dataclass(frozen=True)
    class Standard(Base):
        q: int = 0

    assert Standard(1, [], 3, 2) == Standard(x=1, y=[], z=3, q=2)  # not keyword-only

    for decorate in (fast.dataclass, dataclasses.dataclass):
        @decorate
        class Default:
            x: int = 5

        @decorate
        class Redeclared(Default):
            x: int  # re-annotated without a value: the inherited default stays

        assert Redeclared().x == 5
