#!/usr/bin/env bash
# Check (and, as root on Debian/Ubuntu, install) the system packages a make target needs.
# Usage: scripts/check-system-deps.sh GROUP...   groups: python
# Prints exactly what is missing and how to get it; exits 1 if something is still missing.
set -euo pipefail

missing=()
apt_pkgs=()

need_python() {
  if ! command -v python3 >/dev/null; then
    missing+=("python3 (>= 3.10)"); apt_pkgs+=(python3 python3-venv python3-dev); return
  fi
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    missing+=("python3 >= 3.10 (found $(python3 -V 2>&1))")
  fi
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    missing+=("python3 venv module"); apt_pkgs+=(python3-venv)
  fi
  command -v g++ >/dev/null || { missing+=("g++"); apt_pkgs+=(g++ make); }
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

need_mininet() {
  if [ ! -d /usr/lib/python3/dist-packages/mininet ] || ! command -v mnexec >/dev/null; then
    missing+=("mininet"); apt_pkgs+=(mininet)
  fi
  command -v ip >/dev/null || { missing+=("iproute2"); apt_pkgs+=(iproute2); }
  command -v ethtool >/dev/null || { missing+=("ethtool"); apt_pkgs+=(ethtool); }
}

p4_hint=0
for group in "$@"; do
  case "$group" in
    python) need_python ;;
    cpp) need_cpp ;;
    p4) need_p4 ;;
    mininet) need_mininet ;;
    *) echo "check-system-deps: unknown group '$group'" >&2; exit 2 ;;
  esac
done

if [ ${#apt_pkgs[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing system packages: ${apt_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_pkgs[@]}" >/dev/null
  exec "$0" "$@"
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "Missing: ${missing[*]}" >&2
  [ ${#apt_pkgs[@]} -gt 0 ] && echo "Install with: sudo apt-get install ${apt_pkgs[*]}" >&2
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
