#!/usr/bin/env bash
# Installs Debian's redis-server, the broker of the celery executor test, when it is missing
# and this machine can: root with apt-get. Otherwise it says why and exits 0: the test then
# skips with that reason, except under CI=true, where it is mandatory and fails.
# The test starts its own server on a free loopback port; nothing here starts one.
set -uo pipefail
command -v redis-server >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's redis-server for the celery executor test (apt-get)..."
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null; then
    # Debian's package starts a system service on port 6379: the test needs only the binary.
    if command -v systemctl >/dev/null 2>&1; then systemctl disable --now redis-server >/dev/null 2>&1 || true; fi
    exit 0
  fi
  echo "apt-get could not install redis-server." >&2
else
  echo "redis-server is not installed and this is not a root shell with apt-get." >&2
fi
echo "The celery executor test will be skipped (mandatory under CI=true). Install it with:" \
  "sudo apt-get install -y redis-server" >&2
exit 0
