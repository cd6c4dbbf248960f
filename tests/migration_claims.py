"""What the TL9xx rules and the deprecated-API table claim about torch, checked by running
it. tests/test_migrations.py runs this in a child process (`main` prints a JSON verdict per
claim), so the deprecated APIs it calls and the torch.testing machinery they load never
grow the test process, whose memory --verify's tests measure."""

# It calls every deprecated API on purpose, to check what torch does with it.
# torchlint: noqa: TL208, TL901, TL903, TL906, TL907, TL908, TL909

from __future__ import annotations

import functools
import json
import math
import sys
import traceback
import warnings
from pathlib import Path

import pytest
import torch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from torchlint.analysis.torch_versions import deprecated_apis


@functools.lru_cache(maxsize=1)
def _derivation():
    """scripts/derive_deprecations.py (the candidates file holds the call that uses each API)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "derive_deprecations.py"
    spec = importlib.util.spec_from_file_location("derive_deprecations", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def _calls():
    derivation = _derivation()
    namespace = derivation._namespace()
    with open(derivation.CANDIDATES, "rb") as fh:
        rows = tomllib.load(fh)["symbol"]
    return {row["name"]: (lambda row=row: eval(row["call"], dict(namespace))) for row in rows}  # noqa: S307


def check_row(name: str) -> None:
    api = deprecated_apis()[name]
    call = _calls()[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if api.on_current.startswith("raises "):
            error = api.on_current.split()[1]
            with pytest.raises(Exception, match="removed" if error == "RuntimeError" else "") as info:
                call()
            assert type(info.value).__name__ == error, (name, info.value)
            return
        call()
    categories = {type(w.message).__name__ for w in caught if _derivation()._DEPRECATION.search(str(w.message))}
    if api.on_current.startswith("warns "):
        assert api.on_current.split()[1] in categories, (name, [str(w.message) for w in caught])
    else:  # documented only: no warning at run time, and the docs say deprecated
        assert not categories, (name, categories)
        obj = eval(name, {"torch": torch})  # noqa: S307 - a name from our own table
        assert "deprecated" in (obj.__doc__ or "").lower(), name
    # The replacement exists.
    replacement = api.use.split(" ")[0].split("(")[0]
    eval(replacement, {"torch": torch, "math": math})  # noqa: S307


def check_other_claims() -> None:
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.utils.checkpoint as cp
    from torch.autograd import Variable
    from torch.nn.utils.rnn import pack_padded_sequence

    from torchlint.rules.migrations.legacy_loss_reduction_args import reduction_for

    def warned(fn) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        return [f"{type(w.message).__name__}: {w.message}" for w in caught]

    x = torch.randn(3, requires_grad=True)
    # TL903: warns, and runs the reentrant variant (the default it falls back to).
    assert any("use_reentrant parameter should be passed explicitly" in m for m in warned(lambda: cp.checkpoint(
        lambda t: t * 2, x)))
    # TL906: each old name warns FutureWarning and names the torch.amp replacement.
    for fn in (lambda: torch.cuda.amp.GradScaler(), lambda: torch.cuda.amp.autocast(),
               lambda: torch.cpu.amp.autocast()):
        assert any(m.startswith("FutureWarning") and "torch.amp" in m for m in warned(fn))
    # TL907: torch maps the flags exactly as the fix does.
    for size_average in (None, True, False):
        for reduce in (None, True, False):
            if size_average is None and reduce is None:
                continue
            expected = reduction_for(size_average, reduce)
            kwargs = {k: v for k, v in (("size_average", size_average), ("reduce", reduce)) if v is not None}
            messages = warned(lambda kwargs=kwargs: nn.MSELoss(**kwargs))
            assert any(f"reduction='{expected}'" in m for m in messages), (kwargs, messages)
            a, b = torch.randn(4), torch.randn(4)
            assert torch.equal(F.mse_loss(a, b, **kwargs), F.mse_loss(a, b, reduction=expected))
    # TL908: volatile does nothing: a forward pass on it still records a graph for the
    # parameters (in torch < 0.4 volatile input turned the whole graph off).
    messages = warned(lambda: Variable(x, volatile=True))
    assert any("volatile was removed and now has no effect" in m for m in messages)
    assert nn.Linear(3, 1)(Variable(torch.randn(2, 3), volatile=True)).grad_fn is not None
    # TL909: `.data[0]` on a 0-dim loss.
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        F.mse_loss(torch.randn(3), torch.randn(3)).data[0]
    # TL208: a PackedSequence has four fields.
    with pytest.raises(ValueError, match="too many values to unpack"):
        _out, _lengths = pack_padded_sequence(torch.randn(3, 2, 4), torch.tensor([3, 2]))
    # TL905: the precision claims in the messages.
    tiny = torch.tensor(1e-8)
    assert torch.log(1 + tiny).item() == 0.0 and torch.log1p(tiny).item() == pytest.approx(1e-8)
    assert (torch.exp(tiny) - 1).item() == 0.0 and torch.expm1(tiny).item() == pytest.approx(1e-8)
    assert torch.log(1 + torch.tensor(5.9e-8)).item() == 0.0


def main() -> None:
    verdicts: dict[str, object] = {}
    checks = [(name, lambda name=name: check_row(name)) for name in sorted(deprecated_apis())]
    checks.append(("other claims", check_other_claims))
    for name, check in checks:
        try:
            check()
            verdicts[name] = None
        except BaseException as exc:  # an assertion, or an API that no longer behaves as recorded
            verdicts[name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000]
    print(json.dumps(verdicts))


if __name__ == "__main__":
    main()
