"""The report text for any format, or the `--statistics` table: what `check` and `run` print.
Everything but the formats other programs execute (workflow commands) is neutralized."""

from __future__ import annotations

from collections import Counter

from torchlint.diagnostics import Finding
from torchlint.output import FORMATS
from torchlint.output.ci_safe import COMMAND_FORMATS, MARKUP_FORMATS, neutralize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping


def render_report(fmt: str, findings: list[Finding], sources: Mapping[str, Any], parse_errors: list[Finding],
                  cwd: Any, statistics: bool, quiet: bool, **context: Any) -> str:
    if statistics:
        return _statistics(fmt, findings)
    text = FORMATS[fmt](findings, sources, errors=parse_errors, cwd=cwd, quiet=quiet, **context)
    return text if fmt in COMMAND_FORMATS else neutralize(text, markup=fmt in MARKUP_FORMATS)


def _statistics(fmt: str, findings: list[Finding]) -> str:
    counts = Counter((f.code, f.name) for f in findings)
    verdicts = Counter(f.verify.verdict for f in findings if f.verify)
    if fmt == "json":
        import json  # the JSON table only

        rows: list[dict[str, Any]] = [{"code": c, "name": n, "count": k} for (c, n), k in sorted(counts.items())]
        if verdicts:
            return json.dumps({"rules": rows, "verify": dict(sorted(verdicts.items()))}, indent=2) + "\n"
        return json.dumps(rows, indent=2) + "\n"  # codes and rule names only: nothing to neutralize
    lines = [f"{k:>5}\t{c}\t{n}" for (c, n), k in sorted(counts.items(), key=lambda i: (-i[1], i[0]))]
    if verdicts:
        lines.append("verify: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    return neutralize("\n".join(lines) + ("\n" if lines else ""))
