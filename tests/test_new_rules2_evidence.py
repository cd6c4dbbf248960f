"""The probes of the rules added for issue #20 (second half): each can say "no" when the facts
make the hazard absent, and says "yes" on the facts its rule reports. Run in-process on the
installed torch (the probes import torch themselves)."""

from __future__ import annotations

import pytest

from torchlint import catalog

pytest.importorskip("torch")

# code -> (the facts the rule reports, facts under which the hazard is absent)
CASES = {
    "TL805": ({"element": "ndarray"}, {"element": "list"}),
    "TL210": ({"source": "tensor"}, {"source": "list"}),
    "TL209": ({"type": "torch.FloatTensor"}, {"type": "torch.cuda.FloatTensor"}),
    "TL113": ({"dtype": "float32"}, {"dtype": "float64"}),
    "TL406": ({"scale": 100.0}, {"scale": 10.0}),
    "TL910": ({"scheduler": "StepLR", "method": "get_lr"}, {"scheduler": "StepLR", "method": "get_last_lr"}),
    "TL707": ({"weight_decay": 0.01}, {"weight_decay": 0.0}),
    "TL708": ({"weight_decay": 0.01}, {"weight_decay": 0.0}),
}


def _probe(code):
    rule = next(r for r in catalog.static_rules() if r.code == code)
    probe = rule.evidence.probe
    assert callable(probe), f"{code}: evidence names no probe beside the rule"
    return probe


@pytest.mark.parametrize("code", sorted(CASES))
def test_probe_confirms_the_reported_facts(code):
    verdict, evidence = _probe(code)(CASES[code][0], "cpu")
    assert verdict in ("confirmed", "skipped"), evidence
    assert evidence


@pytest.mark.parametrize("code", sorted(CASES))
def test_probe_says_no_when_the_hazard_is_absent(code):
    verdict, evidence = _probe(code)(CASES[code][1], "cpu")
    assert verdict == "not-reproduced", evidence
