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

for group in "$@"; do
  case "$group" in
    python) need_python ;;
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
  exit 1
fi
