"""The `torchlint` console script and `python -m torchlint`: a repeat of an earlier
`check` whose inputs are unchanged is answered from its recorded output (torchlint/replay.py),
and `--version` from the package, before click, the settings or any rule is imported; a
plain `check PATHS` with common flags (torchlint/check_command.py) without click; anything
else goes to the click app. Past the recorded answer, torchlint's own modules are imported
from one file (torchlint/code_bundle.py).

The imports run with the cyclic collector off: they make modules, classes and tables that
live as long as the process, so the ~20 collections they would trigger free nothing (~4 ms
of a one-file check), and they are frozen after, so no later collection walks them. The
command itself runs with the collector as it was. (No typing or
contextlib here: a replayed answer imports neither.)"""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):  # click's version_option prints the same line
        from torchlint import __version__

        sys.stdout.write(f"torchlint {__version__}\n")
        sys.stdout.flush()
        raise SystemExit(0)
    collecting = gc.isenabled()
    gc.disable()
    try:
        from torchlint import replay

        replay.serve(argv)  # exits when it answers
        from torchlint import code_bundle

        code_bundle.install(os.path.dirname(__file__))
        from torchlint.check_command import fast_main
    finally:
        gc.freeze()  # what the imports made lives as long as the process: no collection walks it
        if collecting:
            gc.enable()
    try:
        fast_main(argv, process_ends=True)  # exits when it parses argv: a plain `check` needs no click
        gc.disable()
        try:
            from torchlint.cli import main as cli_main
        finally:
            if collecting:
                gc.enable()
        cli_main()
    finally:
        code_bundle.save()
