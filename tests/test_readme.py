"""The README's ```console blocks, executed: each `$ command` runs in a temporary copy of
examples/ (in-process, as `torchlint` would) and what it prints must be the lines under it.

In the expected lines `...` stands for any text within a line, and a line that is only
`...` for any number of lines (doctest's ELLIPSIS). The torch version and device in
`--verify` verdicts are normalised, so the README can show the CI's torch. Commands this
test cannot run (package installs, training programs) are skipped with the reason; a
command of another program fails the test until it gets one."""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

# A command that starts with one of these is not run; the reason is the skip message.
SKIPPED = {
    "pip install": "installs packages from the index; this test runs in an environment that has them",
    "torchlint run": "runs a training program: tests/test_runtime_run.py runs `torchlint run` on examples/run/",
}
TORCH_BUILD = re.compile(r"on torch \S+ \([^)]*\)")


@dataclass(frozen=True)
class Command:
    line: int  # 1-based line of the `$` in README.md
    text: str
    expected: tuple[str, ...]


def console_blocks(text: str) -> list[list[Command]]:
    """The commands of each ```console block, with the output lines under each.
    `$ # ...` lines are comments, not commands."""
    blocks: list[list[Command]] = []
    current: list[tuple[int, str, list[str]]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if current is None:
            if line.strip() == "```console":
                current = []
            continue
        if line.strip() == "```":
            blocks.append([Command(n, cmd, tuple(out)) for n, cmd, out in current])
            current = None
        elif line.startswith("$ "):
            if not line[2:].lstrip().startswith("#"):
                current.append((number, line[2:].strip(), []))
        else:
            assert current, f"README.md:{number}: output before any `$ command` in a console block"
            current[-1][2].append(line)
    assert current is None, "README.md: a ```console block is not closed"
    return blocks


def _pattern(expected: tuple[str, ...]) -> re.Pattern[str]:
    parts = []
    for line in expected:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def matches(expected: tuple[str, ...], actual: str) -> bool:
    actual = actual if not actual or actual.endswith("\n") else actual + "\n"
    return _pattern(expected).fullmatch(actual) is not None


def _skip_reason(command: str) -> str | None:
    return next((why for prefix, why in SKIPPED.items() if command.startswith(prefix)), None)


BLOCKS = console_blocks(README.read_text(encoding="utf-8"))
CASES = [(block, index) for block in BLOCKS for index in range(len(block))]


def _normalise(text: str) -> str:
    return TORCH_BUILD.sub("on torch <version> (<device>)", text)


@pytest.mark.parametrize(("block", "index"), CASES,
                         ids=[f"README.md:{b[i].line}:{b[i].text[:40]}" for b, i in CASES])
def test_readme_console_command(block: list[Command], index: int, tmp_path, run_cli):
    command = block[index]
    reason = _skip_reason(command.text)
    if reason:
        pytest.skip(f"README.md:{command.line}: `{command.text}` {reason}")
    if "--verify" in command.text:
        pytest.importorskip("torch", reason="`--verify` needs torch")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    # The block's earlier commands run first (their output is checked by their own case):
    # `--fix` after `--diff` sees the file `--diff` left.
    for earlier in block[:index]:
        if not _skip_reason(earlier.text):
            _run(earlier, run_cli, tmp_path)
    out = _normalise(_run(command, run_cli, tmp_path))
    expected = tuple(_normalise(line) for line in command.expected)
    assert matches(expected, out), (f"README.md:{command.line}: `$ {command.text}` printed\n{out}\n"
                                    "which the README's lines do not match:\n" + "\n".join(expected))


def _run(command: Command, run_cli, cwd: Path) -> str:
    argv = shlex.split(command.text)
    assert argv[0] == "torchlint" and "|" not in argv, (
        f"README.md:{command.line}: this test runs torchlint commands only; give `{command.text}` a reason in SKIPPED")
    code, out, err = run_cli(*argv[1:], cwd=cwd)
    assert code in (0, 1), f"README.md:{command.line}: `{command.text}` exited {code}:\n{out}{err}"
    return out + err


def test_every_console_block_has_a_command():
    assert len(BLOCKS) >= 4 and all(BLOCKS), [b[0].line if b else None for b in BLOCKS]


@pytest.mark.parametrize(("expected", "actual", "result"), [
    (("a ... c",), "a b c\n", True),
    (("a ... c",), "a b c\nd\n", False),
    (("a", "...", "z"), "a\nb\nc\nz\n", True),
    (("a", "...", "z"), "a\nz\n", True),
    (("a.c",), "abc\n", False),  # only `...` is a wildcard
    ((), "", True),
    ((), "noise\n", False),
])
def test_the_matcher(expected, actual, result):
    assert matches(expected, actual) is result


def test_the_parser():
    text = ("```console\n$ # a comment\n$ torchlint check a.py\nout 1\nout 2\n$ torchlint rule TL101\n```\n"
            "```bash\n$ not a console block\n```\n")
    assert console_blocks(text) == [[Command(3, "torchlint check a.py", ("out 1", "out 2")),
                                     Command(6, "torchlint rule TL101", ())]]
