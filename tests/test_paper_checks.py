"""The arithmetic checks of the paper's tables (olaf/experiments/paper_checks.py): the formulas
against brute force, the verdicts on the printed numbers, and the committed section of
docs/reproduction.md against the generator."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from olaf.aom import jain_fairness
from olaf.experiments import paper_checks as pc

DOC = Path(__file__).resolve().parents[1] / "docs" / "reproduction.md"


@given(st.lists(st.floats(0.01, 1e4), min_size=5, max_size=5), st.lists(st.floats(0.01, 1e4), min_size=5, max_size=5))
def test_no_spread_inside_two_groups_raises_jain_above_the_bound_of_their_means(g1, g2):
    """AoM values in ms (at least 10 µs)."""
    a, b = sum(g1) / 5, sum(g2) / 5
    assert jain_fairness(g1 + g2) <= pc.jain_bound_two_groups(a, b) + 1e-9
    assert jain_fairness([a] * 5 + [b] * 5) == pytest.approx(pc.jain_bound_two_groups(a, b))  # reached without spread


def test_the_printed_numbers_that_fail_their_own_arithmetic():
    assert pc.loss_pct(6109, 27 * 500) == pytest.approx(54.748, abs=1e-3)           # printed 55.8 %
    assert pc.loss_pct(4823 + 7204, 13500) == pytest.approx(10.911, abs=1e-3)       # printed 11 %
    assert pc.jain_bound_two_groups(1381, 5382) == pytest.approx(0.7408, abs=1e-4)  # printed 0.86
    failing = {(c.table, c.claim) for c in pc.checks() if not c.holds}
    assert failing == {("Table 1", "FIFO 40 Gbit/s: loss 55.8 %"), ("Table 3", "FIFO: AoM fairness 0.86"),
                       ("Tables 2 and 3", "FIFO: loss 88.0 % and 86.0 %")}
    assert all(c.assumption for c in pc.checks() if c.table == "Tables 2 and 3")   # not pure arithmetic: said so


def test_the_committed_section_is_what_the_generator_writes(tmp_path):
    text = DOC.read_text()
    assert pc.markdown() in text, "docs/reproduction.md is stale: python -m olaf.experiments.paper_checks " \
                                  "docs/reproduction.md"
    doc = tmp_path / "r.md"
    doc.write_text("# x\n")
    assert pc.update(doc) and not pc.update(doc)                     # appended once, then unchanged
    assert doc.read_text().count(pc.BEGIN) == 1
