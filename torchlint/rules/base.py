"""The Rule base class. A rule is a small class: metadata (code, name, summary,
severity, default) plus `visit_<NodeType>(node, ctx)` handlers that the single
traversal in `torchlint.checker` calls before a node's children, `leave_<NodeType>`
handlers it calls after them, `setup(ctx)` for per-file state, `end_file(ctx)` for
rules that decide on the whole file, and `check_noqa(ctx, suppression)` for a rule that
judges the `# noqa` directives (after the suppression pass). A rule reports instances of the
`Violation` types declared beside it (torchlint/rules/violation.py)."""

from __future__ import annotations

import ast

# Re-exported: rules import their AST helpers from here.
from torchlint.analysis.astutil import arg_or_keyword, dotted, has_star_kwargs, keyword, literal
from torchlint.fast_dataclass import dataclass
from torchlint.records import Fix
from torchlint.rules.rule_options import Option
from torchlint.rules.violation import Violation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, ClassVar, Iterable, Iterator, Optional, TypeVar
    from torchlint.checker import FileContext
    from torchlint.noqa import Suppression

__all__ = ["Evidence", "Option", "Rule", "SEVERITIES", "Violation", "arg_or_keyword", "dotted", "has_star_kwargs", "keyword", "literal"]

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Evidence:
    """What can show a rule's finding on a machine; everything is a function or class of the
    rule's own module.

    - `probe` and `judge` run only in the sandboxed --verify worker, which cannot import
      torchlint: scripts/generate_all.py copies them, with the module-level helpers of that
      module they call, into `verify/evidence_<family>.py`, where the worker finds them. So
      they import torch and the worker's shared helpers (`from _evidence import first_line`,
      verify/_evidence.py) inside their bodies: linting imports the rule module, never torch.
      One convention, no sibling modules: a helper that needs torch at definition time (a
      Dataset subclass, a table of dtypes) is built inside the function that uses it.
    - `runtime` and `monitor` judge and watch a `torchlint run`: the generator copies the
      monitor class into `runtime/monitors_<family>.py`.
    - A rule with no probe gives the `reason` instead, which --verify reports as `skipped`."""

    # The fact probe: (facts, device) -> (verdict, evidence), from the finding's params alone.
    probe: Optional[Callable[[dict, str], tuple[str, str]]] = None
    slice: Optional[str] = None  # verify/instrument.py's SLICES: how to cut and run the user's code
    # Judges the runs of that slice: (facts, runs) -> (verdict, evidence), or None when the
    # runs never reached the flagged line (the worker then runs the probe).
    judge: Optional[Callable[[dict, list], Optional[tuple[str, str]]]] = None
    # `torchlint run`'s verdict on a finding, a function beside the rule (no torch; see
    # runtime/judging.py): (observation, path, rows, cwd) -> RuntimeResult
    runtime: Optional[Callable[..., Any]] = None
    # A class beside the rule whose hooks run inside the monitored program, recording what the
    # runtime judge reads (runtime/monitor.py's `HOOKS`; the generator copies it).
    monitor: Optional[type] = None
    # The error (a regular expression) torch or Python raises when the hazard happens: a crash
    # that matches it, raised through the flagged lines, confirms the finding.
    crash: Optional[str] = None
    # A function beside the rule (copied for the worker like a probe) that observes the finding
    # on the user's own object, its module imported from the project (verify/project.py):
    # (build, facts) -> (verdict, evidence); `build()` constructs the user's class.
    observe: Optional[Callable[[Callable[[], Any], dict], tuple[str, str]]] = None
    reason: Optional[str] = None  # why nothing can be run (no probe)
    # The probe builds its own example and reads none of the finding's facts: what it shows is
    # torch in general, not this code, so --verify reports its answer as `skipped`, the
    # demonstration labelled generic (verify/claims.py). tests/test_verify_claims.py checks the
    # flag against the probe's body.
    generic_probe: bool = False

    def __post_init__(self) -> None:
        if (self.probe is None) == (self.reason is None):
            raise ValueError("Evidence: give a probe or the reason there is none, not both")
        if (self.slice is None) != (self.judge is None):
            raise ValueError("Evidence: a slice needs its judge, and a judge its slice")
        if self.generic_probe and self.probe is None:
            raise ValueError("Evidence: generic_probe describes a probe; this rule has none")
        if any(f is not None and not callable(f) for f in (self.probe, self.judge)):
            raise TypeError("Evidence: probe and judge are functions of the rule's module, not names")


# Every rule that reads the `torch-version` setting declares this option; config.py fills it
# from the top-level `torch-version` key (or `--torch-version`).
TORCH_VERSION_OPTION = Option(str, "2.4", "The oldest torch the code must run on (MAJOR.MINOR); set it with "
                                          "the top-level `torch-version` key or `--torch-version`.",
                              pattern=r"[0-9]+\.[0-9]+", pattern_help='"MAJOR.MINOR" such as "2.4"')

# Rules that ask "is this class an nn.Module?" declare this; config.py fills it from the
# top-level `module-bases` key (framework bases beyond torchlint.analysis.frameworks).
MODULE_BASES_OPTION = Option(list, [], "Extra base classes (qualified names) whose subclasses are nn.Modules; "
                                       "set it with the top-level `module-bases` key.", item_type=str)


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[str] = "warning"
    default_enabled: ClassVar[bool] = True
    tags: ClassVar[tuple[str, ...]] = ()
    precision: ClassVar[str] = "high"  # SARIF precision: very-high / high / medium / low
    security_severity: ClassVar[Optional[float]] = None  # only for security rules
    options: ClassVar[dict[str, Option]] = {}
    # What `--verify` and `torchlint run` can do for this rule (see Evidence).
    evidence: ClassVar[Evidence]
    # The peer linters' checks this rule covers, for the generated rules_docs/peer-parity.md:
    # the peer's code (as scripts/peer_checks.toml spells it) -> the page's status, "covered" or
    # "partly: <the shapes it reports>" (a check several rules cover joins their statuses).
    peer_checks: ClassVar[dict[str, str]] = {}

    # The rule can only fire in a file whose text contains one of these strings (checked
    # before the walk, so a rule costs nothing in files it cannot apply to). Empty: always run.
    requires_text: ClassVar[tuple[str, ...]] = ()

    # Set for each subclass: does it override `check_noqa`? The walk tokenizes a file for its
    # directives only when one of its rules judges them or a finding might be suppressed.
    judges_noqa: ClassVar[bool] = False

    _handler_names: ClassVar[tuple[tuple[type, str], ...]] = ()
    _leave_names: ClassVar[tuple[tuple[type, str], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handler_names, cls._leave_names = _handler_tables(cls)
        cls.judges_noqa = cls.check_noqa is not Rule.check_noqa

    def __init__(self, ctx: "FileContext", settings: Optional[dict[str, Any]] = None) -> None:
        self.ctx = ctx
        self.settings = {k: o.default for k, o in self.options.items()}
        if settings:
            self.settings.update(settings)
        bases = self.settings.get("module-bases")
        if bases:
            ctx.extra_module_bases = ctx.extra_module_bases | frozenset(bases)
        self.setup(ctx)

    def setup(self, ctx: "FileContext") -> None:
        """Called once per file before the walk: per-file state goes here."""

    @classmethod
    def applies_to(cls, text: str) -> bool:
        return not cls.requires_text or any(t in text for t in cls.requires_text)

    def handlers(self) -> Iterator[tuple[type, Callable[[ast.AST, "FileContext"], None]]]:
        for node_type, attr in self._handler_names:
            yield node_type, getattr(self, attr)

    def leave_handlers(self) -> Iterator[tuple[type, Callable[[ast.AST, "FileContext"], None]]]:
        for node_type, attr in self._leave_names:
            yield node_type, getattr(self, attr)

    def end_file(self, ctx: "FileContext") -> None:
        """Called once after the walk, for rules that decide on the whole file."""

    def check_noqa(self, ctx: "FileContext", suppression: "Suppression") -> None:
        """Called after the suppression pass, for rules that judge the `# noqa` directives
        themselves (TL001): `suppression` knows which ones suppressed something."""

    def report(self, node: ast.AST, violation: Violation, *, end_node: Optional[ast.AST] = None,
               params: Optional[dict] = None, severity: Optional[str] = None, fix: Optional[Fix] = None) -> None:
        """Report `violation` on `node` (to the end of `end_node`); `params` are the facts its
        probe needs. A second report of the same rule on the same node is dropped."""
        self.ctx.report(self, node, violation.message(), end_node=end_node, params=params, severity=severity,
                        help=violation.help_text(), fix=fix)

    def report_range(self, start: tuple[int, int], end: tuple[int, int], violation: Violation, *,
                     params: Optional[dict] = None, severity: Optional[str] = None, fix: Optional[Fix] = None) -> None:
        """Report on a text range: 1-based (row, code-point column), the end exclusive."""
        self.ctx.report_range(self, start, end, violation.message(), params=params, severity=severity,
                              help=violation.help_text(), fix=fix)


if TYPE_CHECKING:
    _Handler = TypeVar("_Handler", bound=Callable[..., Any])


def calls_ending(*names: Iterable[str]) -> Callable[[_Handler], _Handler]:
    """Mark a `visit_Call` that returns at once, touching nothing, for a call `x.attr(...)`
    whose `attr` is none of `names` (a QualNames' `lasts`, or plain strings): the walk
    does not call it for those (most calls are methods no rule asks about). A call through
    a bare name (`f(...)`, perhaps an alias) always reaches it."""
    attrs = frozenset(n for group in names for n in ([group] if isinstance(group, str) else group))

    def mark(handler: _Handler) -> _Handler:
        handler.call_attrs = attrs  # type: ignore[attr-defined]
        return handler

    return mark


def _handler_tables(cls: type) -> tuple[tuple[tuple[type, str], ...], tuple[tuple[type, str], ...]]:
    """(node type, method name) of each `visit_<Node>` and each `leave_<Node>` the class has, by
    name (as `dir` orders them); read from the MRO's own dicts, which costs a third of `dir`."""
    names = {attr for klass in cls.__mro__ for attr in vars(klass) if attr.startswith(("visit_", "leave_"))}
    tables: dict[str, list[tuple[type, str]]] = {"visit_": [], "leave_": []}
    for attr in sorted(names):
        prefix, kind = attr[:6], attr[6:]
        if kind[:1].isupper():
            node_type = getattr(ast, kind, None)
            if not isinstance(node_type, type):
                raise TypeError(f"{cls.__name__}.{attr}: ast has no node type {kind!r}")
            tables[prefix].append((node_type, attr))
    return tuple(tables["visit_"]), tuple(tables["leave_"])
