"""Tier 2: the PTF data-plane suite (ptf_tests/) against simple_switch_grpc, one pytest
node per PTF test (a failure names its test; each test pushes a fresh pipeline)."""

import pytest
from p4_tier import ROOT, require_root

from olaf.ptf_runner import PtfEnvironment, list_tests

pytestmark = [pytest.mark.p4, pytest.mark.timeout(600)]  # the first test also waits for `make build`

TEST_DIR = ROOT / "ptf_tests"


@pytest.fixture(scope="module")
def ptf_env(build):
    require_root()
    with PtfEnvironment(build, TEST_DIR, build / "ptf-logs") as env:
        yield env


@pytest.mark.parametrize("test", list_tests(TEST_DIR))
def test_ptf(ptf_env, test):
    rc = ptf_env.run([test], log_name=test)
    assert rc == 0, f"PTF test {test} failed (log: {ptf_env.log_dir / (test + '.log')}, switch log: " \
                    f"{ptf_env.spec.log_file})"
