#!/usr/bin/env bash
# Installs Debian's headless Chromium for the web UI test (marker `browser`) when it is
# missing and this machine can: root with apt-get. Otherwise it says why and exits 0: the
# test then skips with that reason, except under CI=true, where it is mandatory and fails.
set -uo pipefail
for name in chromium chromium-browser; do
  command -v "$name" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the web UI test (apt-get)..."
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    exit 0
  fi
  echo "apt-get could not install chromium." >&2
else
  echo "Chromium is not installed and this is not a root shell with apt-get." >&2
fi
echo "The web UI test will be skipped (mandatory under CI=true). Install it with:" \
  "sudo apt-get install -y chromium" >&2
exit 0
