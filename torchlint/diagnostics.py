"""The Finding record every rule produces and every output format consumes, and the codes
torchlint itself reports: TL000 (a file that cannot be read, decoded or parsed), TL002 (a
broken configuration) and TL003 (an internal error)."""

from __future__ import annotations


from torchlint.fast_dataclass import dataclass, field
from torchlint.records import Fix, RuntimeResult, Verification

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


SYNTAX_ERROR_CODE = "TL000"
SYNTAX_ERROR_NAME = "syntax-error"
SYNTAX_ERROR_SEVERITY = "error"


@dataclass(frozen=True)
class ToolCode:
    """A code torchlint reports about itself, not about the code: no rule produces it, and no
    selection (`--ignore`, `ignore = [...]`, per-file-ignores) turns it off. Shares the
    attributes the docs and `torchlint rule` read with `Rule`."""

    code: str
    name: str
    summary: str
    severity: str = "error"
    default_enabled: bool = True
    tags: tuple[str, ...] = ("correctness",)
    precision: str = "very-high"
    security_severity: None = None


CONFIG_ERROR = ToolCode("TL002", "config-error", "The torchlint configuration that applies to the file is invalid")
INTERNAL_ERROR = ToolCode("TL003", "internal-error", "torchlint failed while checking the file (a bug: please report it)")
TOOL_CODES: tuple[ToolCode, ...] = (CONFIG_ERROR, INTERNAL_ERROR)
TOOL_CODES_BY_CODE: dict[str, ToolCode] = {c.code: c for c in TOOL_CODES}
TOOL_CODES_BY_NAME: dict[str, ToolCode] = {c.name: c for c in TOOL_CODES}


@dataclass
class Finding:
    """One finding (or parse error) at a place in a file."""

    code: str
    message: str
    path: str  # as displayed: relative to the working directory when possible
    row: int  # 1-based
    col: int  # 1-based, Unicode code points
    end_row: int
    end_col: int  # 1-based, exclusive
    severity: str = "warning"  # "error" | "warning" | "info"
    name: str = ""
    # What to do about it, one short sentence (ruff's fix title); the message says what is wrong.
    help: Optional[str] = None
    fix: Optional[Fix] = None
    verify: Optional[Verification] = None  # --verify only
    # `torchlint run`: what the program did at this line (verdict, evidence, hits).
    runtime: Optional[RuntimeResult] = None
    # Values a `--verify` probe needs (dtype of a cast, loss class, ...), taken from
    # the flagged code; never shown to the user as-is.
    probe_params: dict[str, Any] = field(default_factory=dict)
    # In a Jupyter notebook: the 1-based cell number; row/end_row then count within the cell.
    cell: Optional[int] = None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.row, self.col, self.code)

    def to_cache(self) -> dict[str, Any]:
        return {
            "code": self.code, "message": self.message, "row": self.row, "col": self.col,
            "end_row": self.end_row, "end_col": self.end_col, "severity": self.severity,
            "name": self.name, "help": self.help, "fix": self.fix.to_json() if self.fix else None,
            "probe_params": self.probe_params,
            "cell": self.cell,
        }

    @classmethod
    def from_cache(cls, path: str, data: dict[str, Any]) -> "Finding":
        """Raises RecordError when the fix has not got its shape (the cache checks entries first)."""
        fix = Fix.from_json(data["fix"]) if data["fix"] is not None else None
        return cls(path=path, **{**data, "fix": fix})


def syntax_error_finding(path: str, message: str, row: int, col: int) -> Finding:
    return Finding(code=SYNTAX_ERROR_CODE, name=SYNTAX_ERROR_NAME, message=message, path=path,
                   row=max(row, 1), col=max(col, 1), end_row=max(row, 1), end_col=max(col, 1) + 1,
                   severity=SYNTAX_ERROR_SEVERITY)


def tool_finding(kind: ToolCode, path: str, message: str) -> Finding:
    """A TL002/TL003 finding on line 1, where an editor or flake8 shows it."""
    return Finding(code=kind.code, name=kind.name, message=message, path=path, row=1, col=1, end_row=1, end_col=2,
                   severity=kind.severity)
