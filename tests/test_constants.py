"""One source for every shared constant (olaf/constants.py): the generated P4 and C++
copies and the RTL's decision codes must match it, and the P4 sources use names, not
literals."""

import re
from pathlib import Path

from click.testing import CliRunner

from olaf import codegen
from olaf.cli import main
from olaf.constants import JUMBO_MTU, MAX_G, MAX_G_JUMBO, MTU, Decision, max_model_elements, shared_constants

ROOT = Path(__file__).resolve().parents[1]


def test_generated_copies_match_olaf_constants():
    assert codegen.check(ROOT) == []


def test_check_reports_a_hand_edit(tmp_path):
    for rel in (*codegen.GENERATED, codegen.RTL_FILE):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((ROOT / rel).read_text())
    p4 = tmp_path / codegen.P4_FILE
    p4.write_text(p4.read_text().replace("UPDATE_PORT = 50100", "UPDATE_PORT = 50102"))
    rtl = tmp_path / codegen.RTL_FILE
    rtl.write_text(rtl.read_text().replace("DEC_DROP_FULL = 3'd5", "DEC_DROP_FULL = 3'd6"))
    problems = codegen.check(tmp_path)
    assert any(str(codegen.P4_FILE) in p for p in problems)
    assert any("DEC_DROP_FULL = 6" in p for p in problems)
    assert codegen.generate(tmp_path) == [p4]
    assert codegen.check(tmp_path) == [p for p in problems if "RTL" in p]


def test_cli_check_and_generate(tmp_path):
    r = CliRunner().invoke(main, ["codegen", "check"])
    assert r.exit_code == 0, r.output
    assert "match" in r.output


def test_derived_limits():
    assert (MAX_G, MAX_G_JUMBO) == (360, 2235)   # docs/protocol.md "Constants"
    assert (max_model_elements(MTU), max_model_elements(JUMBO_MTU)) == (358, 2233)
    assert shared_constants()["NUM_DECISION"].value == len(Decision)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TYPES = re.compile(r"\b(?:var)?bit<\d+>|\bint<\d+>")
_LITERAL = re.compile(r"\b(0x[0-9a-fA-F]+|\d+)\b")


def test_p4_sources_use_named_constants():
    """Outside the generated constants.p4, a P4 source has no number but 0 and 1."""
    found = []
    for f in sorted([ROOT / "p4src/olaf.p4", *(ROOT / "p4src/include").glob("*.p4")]):
        if f.name == "constants.p4":
            continue
        code = _TYPES.sub("", _COMMENT.sub("", f.read_text()))
        for m in _LITERAL.finditer(code):
            if int(m.group(1), 0) not in (0, 1):
                line = code.count("\n", 0, m.start()) + 1
                found.append(f"{f.relative_to(ROOT)}:{line}: {m.group(1)}")
    assert found == []
