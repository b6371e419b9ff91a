"""Tier 2: the PTF data-plane suite (ptf_tests/) against simple_switch_grpc."""

import subprocess
import sys

from p4_tier import ROOT, build_p4, require_p4_tools, require_root


def test_ptf_suite_passes():
    require_p4_tools()
    require_root()
    build = build_p4()
    r = subprocess.run([sys.executable, "-m", "olaf.ptf_runner", "--build", str(build),
                        "--test-dir", str(ROOT / "ptf_tests"), "--log-dir", str(build / "ptf-logs")],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    print(r.stdout[-4000:])
    print(r.stderr[-8000:], file=sys.stderr)
    assert r.returncode == 0, f"PTF failed (logs in {build / 'ptf-logs'})"
