"""Label every held-out style verify case (a `tests/fixtures/TL*/verify/*.py` script with a
`# label:` line) by running it: `harmful` when it raises or prints HAZARD (the hazard
happened), `harmless` otherwise. Prints {path relative to tests/fixtures: label} as JSON.

    python tests/verify_label.py
"""

import contextlib
import io
import json
import runpy
import sys
import warnings
from pathlib import Path


def main() -> None:
    labels = {}
    fixtures = Path(__file__).parent / "fixtures"
    for path in sorted(fixtures.glob("TL*/verify/*.py")):
        if "# label:" not in path.read_text(encoding="utf-8"):
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                runpy.run_path(str(path), run_name="__main__")
                raised = False
            except Exception:  # noqa: BLE001 - an exception is the hazard happening
                raised = True
        labels[path.relative_to(fixtures).as_posix()] = "harmful" if raised or "HAZARD" in out.getvalue() else "harmless"
    json.dump(labels, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
