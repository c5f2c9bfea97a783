#!/usr/bin/env bash
# Install the system packages ONNX Inspector needs when they are missing (Debian/Ubuntu, as root or
# with passwordless sudo). Usage: scripts/sysdeps.sh PACKAGE...   Prints what it does; never prompts.
set -u
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "sysdeps: please install the equivalents of: ${missing[*]} (no apt-get here)" >&2
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "sysdeps: missing system packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "sysdeps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  $SUDO apt-get update -qq >/dev/null 2>&1
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
    echo "sysdeps: apt-get could not install: ${missing[*]}" >&2; exit 1; }
}
