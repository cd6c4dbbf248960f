"""The `torchlint` console script and `python -m torchlint`: a repeat of an earlier
`check` whose inputs are unchanged is answered from its recorded output (torchlint/replay.py)
before click, the settings or any rule is imported; anything else goes to the click app."""

from __future__ import annotations

import sys


def main() -> None:
    from torchlint import replay

    replay.serve(sys.argv[1:])  # exits when it answers
    from torchlint.cli import main as cli_main

    cli_main()
