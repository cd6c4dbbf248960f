"""What a rule reports: one small frozen record per kind of finding, declared beside the rule
class (ruff's `#[violation]`), so every message a rule can produce reads in one place.

    class SoftmaxBeforeLoss(Violation):
        loss: str
        activation: str

        def message(self) -> str:
            return f"`{self.loss}` gets {self.activation} outputs"

    self.report(node, SoftmaxBeforeLoss(loss="F.cross_entropy", activation="softmax"))

A subclass is a frozen, keyword-only dataclass (PEP 681: mypy checks its fields at every
report) built without `@dataclass`: that decorator costs ~0.75 ms of CPU a class, and the ~80
violation types are created each time torchlint starts. The fields are what the message
needs, not the probe's facts (those stay `params=`)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Optional
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Any:
        return lambda cls: cls


@dataclass_transform(frozen_default=True, kw_only_default=True)
class Violation:
    # What to do about it, one short sentence, when that does not depend on the fields;
    # a violation whose advice does overrides `help_text()` instead.
    help: ClassVar[Optional[str]] = None
    _fields: ClassVar[tuple[str, ...]] = ()  # the base's first; a field's default is its class attribute

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, kind in _own_annotations(cls).items()
               if not str(kind).startswith(("ClassVar", "typing.ClassVar"))]
        cls._fields = tuple(dict.fromkeys([*cls._fields, *own]))

    def __init__(self, **values: Any) -> None:
        cls = type(self)
        unknown = sorted(set(values) - set(cls._fields))
        missing = [name for name in cls._fields if name not in values and not hasattr(cls, name)]
        if unknown or missing:
            raise TypeError(f"{cls.__name__}(): unknown fields {unknown}, missing fields {missing}")
        for name in cls._fields:
            object.__setattr__(self, name, values[name] if name in values else getattr(cls, name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values() == self._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._fields)})"

    def message(self) -> str:
        """What is wrong, one short sentence (at most about 90 characters)."""
        raise NotImplementedError(f"{type(self).__name__} must define message()")

    def help_text(self) -> Optional[str]:
        return self.help


def _own_annotations(cls: type) -> dict[str, Any]:
    found = vars(cls).get("__annotations__")
    if found is None and sys.version_info >= (3, 10):
        found = getattr(cls, "__annotations__", None)  # the class's own (built lazily from 3.14)
    return dict(found or {})
