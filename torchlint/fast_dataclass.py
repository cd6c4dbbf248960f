"""`@dataclass` for the modules every run imports, without the standard library's start-up cost:
`dataclasses` imports `inspect` (with `dis`, `tokenize`, `linecache`: ~10 ms) and exec()s
generated source for each method of each class (~0.6 ms a class, ~35 classes on a one-file
lint). Here one shared `__init__`/`__eq__`/`__hash__`/`__repr__`/`__setattr__` reads the
class's field table instead.

It covers what torchlint's classes use, with the standard semantics: `frozen`, `eq`, defaults,
`field(default=, default_factory=, compare=)`, `__post_init__`, inheritance between these
classes, and methods a class body defines itself winning over the generated ones. To the
standard library a class is a dataclass too: `__dataclass_fields__` and
`__dataclass_params__` are built (importing `dataclasses`) when first read, so
`dataclasses.fields`, `replace`, `asdict` and `is_dataclass` work on it, and a frozen
instance raises `dataclasses.FrozenInstanceError`. mypy reads the stub branch below: the
real decorator's signature, so it checks every construction as before."""

from __future__ import annotations

import reprlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Optional
    from dataclasses import dataclass, field, fields, replace
else:
    _MISSING = object()
    _SPEC = "_fast_dataclass_spec"

    class _Field:
        """What `field()` returns, until the class decorator reads it."""

        __slots__ = ("default", "default_factory", "compare")

        def __init__(self, default: Any, default_factory: Any, compare: bool) -> None:
            self.default, self.default_factory, self.compare = default, default_factory, compare

    def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, compare: bool = True) -> Any:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        return _Field(default, default_factory, compare)

    class _Spec:
        """A class's fields in order, their defaults, and what its methods need."""

        __slots__ = ("names", "index", "defaults", "factories", "compared", "frozen", "post_init", "qualname",
                     "types")

        def __init__(self, cls: type, names: tuple[str, ...], defaults: dict[str, Any],
                     factories: dict[str, Callable[[], Any]], compared: tuple[str, ...], frozen: bool,
                     types: dict[str, Any]) -> None:
            self.names, self.index, self.defaults, self.factories = names, frozenset(names), defaults, factories
            self.compared, self.frozen, self.types = compared, frozen, types
            self.post_init = hasattr(cls, "__post_init__")
            self.qualname = cls.__qualname__

    def _own_annotations(cls: type) -> dict[str, Any]:
        return dict(cls.__dict__.get("__annotations__") or {})

    def _is_classvar(annotation: Any) -> bool:
        text = annotation if isinstance(annotation, str) else repr(annotation)
        return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))

    def dataclass(cls: Optional[type] = None, /, *, frozen: bool = False, eq: bool = True) -> Any:
        def wrap(cls: type) -> type:
            return _process(cls, frozen, eq)
        return wrap if cls is None else wrap(cls)

    def _process(cls: type, frozen: bool, eq: bool) -> type:
        spec = _collect_fields(cls, frozen)
        setattr(cls, _SPEC, spec)
        _define(cls, "__init__", _init)
        _define(cls, "__repr__", _repr)
        own_hash = "__hash__" in cls.__dict__ and cls.__dict__["__hash__"] is not None
        if eq:
            _define(cls, "__eq__", _eq)
        if frozen:
            for name, method in (("__setattr__", _frozen_setattr), ("__delattr__", _frozen_delattr)):
                if name in cls.__dict__:
                    raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
                setattr(cls, name, method)
        if eq and not own_hash:  # the standard table: frozen+eq hashes the fields, eq alone is unhashable
            cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
        cls.__match_args__ = spec.names  # type: ignore[attr-defined]
        cls.__dataclass_fields__ = _StandardFields()  # type: ignore[attr-defined]
        cls.__dataclass_params__ = _StandardParams(eq, frozen)  # type: ignore[attr-defined]
        return cls

    def _collect_fields(cls: type, frozen: bool) -> _Spec:
        """The bases' fields, then the class's own annotations (a ClassVar is no field), in order."""
        names: dict[str, None] = {}
        defaults: dict[str, Any] = {}
        factories: dict[str, Callable[[], Any]] = {}
        uncompared: set[str] = set()
        types: dict[str, Any] = {}
        for base in [b.__dict__[_SPEC] for b in reversed(cls.__mro__[1:]) if _SPEC in b.__dict__]:
            if base.frozen != frozen:
                raise TypeError("cannot inherit frozen dataclass from a non-frozen one" if frozen else
                                "cannot inherit non-frozen dataclass from a frozen one")
            names.update(dict.fromkeys(base.names))
            defaults.update(base.defaults)
            factories.update(base.factories)
            uncompared.update(n for n in base.names if n not in base.compared)
            types.update(base.types)
        for name, annotation in _own_annotations(cls).items():
            if _is_classvar(annotation):
                continue
            names[name], types[name] = None, annotation
            defaults.pop(name, None)
            factories.pop(name, None)
            uncompared.discard(name)
            # getattr, as dataclasses does: a field re-annotated without a value keeps the
            # default its base set as a class attribute.
            value = cls.__dict__[name] if name in cls.__dict__ else getattr(cls, name, _MISSING)
            if isinstance(value, _Field):
                if not value.compare:
                    uncompared.add(name)
                if value.default_factory is not _MISSING:
                    factories[name] = value.default_factory
                if value.default is not _MISSING:
                    defaults[name] = value.default
                    setattr(cls, name, value.default)
                else:
                    delattr(cls, name)
            elif value is not _MISSING:
                defaults[name] = value
        ordered = tuple(names)
        _check_default_order(ordered, defaults, factories)
        return _Spec(cls, ordered, defaults, factories, tuple(n for n in ordered if n not in uncompared),
                     frozen, types)

    def _check_default_order(names: tuple[str, ...], defaults: dict[str, Any], factories: dict[str, Any]) -> None:
        after = None
        for name in names:
            if name in defaults or name in factories:
                after = name
            elif after is not None:
                raise TypeError(f"non-default argument {name!r} follows default argument")

    def _define(cls: type, name: str, method: Callable[..., Any]) -> None:
        if name not in cls.__dict__:
            setattr(cls, name, method)

    def _init(self: Any, *args: Any, **kwargs: Any) -> None:
        spec: _Spec = self._fast_dataclass_spec
        names = spec.names
        if len(args) > len(names):
            raise TypeError(f"{spec.qualname}.__init__() takes {len(names) + 1} positional arguments "
                            f"but {len(args) + 1} were given")
        values = dict(zip(names, args))
        if kwargs or len(args) < len(names):
            for key in kwargs:
                if key in values:
                    raise TypeError(f"{spec.qualname}.__init__() got multiple values for argument {key!r}")
                if key not in spec.index:
                    raise TypeError(f"{spec.qualname}.__init__() got an unexpected keyword argument {key!r}")
            values.update(kwargs)
            ordered, missing = {}, []
            for name in names:
                if name in values:
                    ordered[name] = values[name]
                elif name in spec.defaults:
                    ordered[name] = spec.defaults[name]
                elif name in spec.factories:
                    ordered[name] = spec.factories[name]()
                else:
                    missing.append(name)
            if missing:
                listed = " and ".join(", ".join(repr(n) for n in missing).rsplit(", ", 1))
                raise TypeError(f"{spec.qualname}.__init__() missing {len(missing)} required positional "
                                f"argument{'s' if len(missing) > 1 else ''}: {listed}")
            values = ordered
        self.__dict__.update(values)
        if spec.post_init:
            self.__post_init__()

    @reprlib.recursive_repr()
    def _repr(self: Any) -> str:
        spec: _Spec = getattr(self, _SPEC)
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in spec.names)
        return f"{type(self).__qualname__}({inner})"

    def _eq(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        compared = self._fast_dataclass_spec.compared
        mine, theirs = self.__dict__, other.__dict__
        return tuple(mine[n] for n in compared) == tuple(theirs[n] for n in compared)

    def _hash(self: Any) -> int:
        mine = self.__dict__
        return hash(tuple(mine[n] for n in self._fast_dataclass_spec.compared))

    def _frozen_setattr(self: Any, name: str, value: Any) -> None:
        if _SPEC in type(self).__dict__ or name in getattr(self, _SPEC).index:  # as the decorated class's own
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def _frozen_delattr(self: Any, name: str) -> None:
        if _SPEC in type(self).__dict__ or name in getattr(self, _SPEC).index:  # as the decorated class's own
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    class _StandardFields:
        """`__dataclass_fields__`, built as `dataclasses` would when something first reads it."""

        def __get__(self, instance: Any, owner: type) -> dict[str, Any]:
            import dataclasses

            spec: _Spec = owner.__dict__.get(_SPEC) or getattr(owner, _SPEC)
            built = {}
            for name in spec.names:
                made = dataclasses.field(
                    default=spec.defaults.get(name, dataclasses.MISSING),
                    default_factory=spec.factories.get(name, dataclasses.MISSING),
                    compare=name in spec.compared)
                made.name, made.type = name, spec.types.get(name)
                if hasattr(made, "kw_only"):  # Python 3.10+: MISSING there is truthy, i.e. keyword-only
                    made.kw_only = False
                made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
                built[name] = made
            if owner.__dict__.get(_SPEC) is spec:
                type.__setattr__(owner, "__dataclass_fields__", built)  # built once
            return built

    class _StandardParams:
        """`__dataclass_params__`, as `dataclasses` reads it (a stdlib dataclass inheriting one)."""

        def __init__(self, eq: bool, frozen: bool) -> None:
            self.init, self.repr, self.eq, self.order, self.unsafe_hash, self.frozen = True, True, eq, False, False, frozen
            self.match_args, self.kw_only, self.slots, self.weakref_slot = True, False, False, False

        def __repr__(self) -> str:
            return f"_DataclassParams(init=True,repr=True,eq={self.eq},order=False,unsafe_hash=False,frozen={self.frozen})"

    def fields(obj: Any) -> tuple[Any, ...]:
        import dataclasses

        return dataclasses.fields(obj)

    def replace(obj: Any, /, **changes: Any) -> Any:
        """`dataclasses.replace`: a copy of `obj` with `changes`, through its `__init__`."""
        spec: Optional[_Spec] = getattr(type(obj), _SPEC, None)
        if spec is None:
            import dataclasses

            return dataclasses.replace(obj, **changes)
        for name in spec.names:
            if name not in changes:
                changes[name] = obj.__dict__[name]
        return type(obj)(**changes)
