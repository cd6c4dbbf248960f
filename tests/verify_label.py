"""Label every case script by running it: `harmful` when it raises or prints HAZARD
(the hazard happened), `harmless` otherwise. Prints {file: label} as JSON.

    python tests/verify_cases/_label.py
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
    for path in sorted(Path(__file__).parent.glob("tl*.py")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                runpy.run_path(str(path), run_name="__main__")
                raised = False
            except Exception:  # noqa: BLE001 - an exception is the hazard happening
                raised = True
        labels[path.name] = "harmful" if raised or "HAZARD" in out.getvalue() else "harmless"
    json.dump(labels, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
