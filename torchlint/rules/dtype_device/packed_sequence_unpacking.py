"""TL208: `out, lengths = pack_padded_sequence(...)`: a PackedSequence has four fields."""

from __future__ import annotations

import ast

from torchlint.checker import FileContext
from torchlint.rules.base import Rule

_PACKERS = frozenset(f"torch.nn.utils.rnn.{n}" for n in ("pack_padded_sequence", "pack_sequence"))


class PackedSequenceUnpacking(Rule):
    code = "TL208"
    name = "packed-sequence-unpacking"
    summary = "A PackedSequence (four fields) unpacked into a different number of names"
    severity = "error"
    tags = ("correctness",)
    precision = "very-high"
    requires_text = ("pack_padded_sequence", "pack_sequence")
    verify_note = ("checked once on torch 2.13: unpacking pack_padded_sequence/pack_sequence into two names "
                   "raises ValueError (tests/test_migrations.py repeats it when torch is installed)")

    def visit_Assign(self, node: ast.Assign, ctx: FileContext) -> None:
        name = ctx.call_name(node.value)
        if name not in _PACKERS:
            return
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) != 4 \
                    and not any(isinstance(e, ast.Starred) for e in target.elts):
                short = name.rsplit(".", 1)[1]
                self.report(target, f"`{short}` returns a PackedSequence of 4 fields: unpacking it into "
                                    f"{len(target.elts)} names raises ValueError",
                            help="Assign it to one name; `pad_packed_sequence` returns `(padded, lengths)`")
