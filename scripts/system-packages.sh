#!/usr/bin/env bash
# The system packages `make test` needs, installed when missing so that no test skips:
#   chromium, chromium-driver  the inspector's browser test
#   redis-server               the Redis idempotency tests start their own on a free port
#   postgresql                 the Postgres decision-log tests start their own cluster
#   curl                       runs the documented production commands
#   wrk                        the load generator of the benchmark smoke test
#   nodejs                     runs pyright, the second type checker of the typing tests
# On Debian and Ubuntu they come from apt-get (as root, or through sudo when it needs no
# password); anywhere else, or without either, this stops with one line naming what to install.
set -euo pipefail
PACKAGES="chromium chromium-driver redis-server postgresql curl wrk nodejs"

if ! command -v dpkg-query >/dev/null 2>&1; then
  # Not a Debian system: check the programs themselves.
  need=""
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need="$need chromium"
  command -v chromedriver >/dev/null 2>&1 || need="$need chromedriver"
  command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need="$need postgresql"
  command -v curl >/dev/null 2>&1 || need="$need curl"
  command -v wrk >/dev/null 2>&1 || need="$need wrk"
  command -v node >/dev/null 2>&1 || need="$need nodejs"
  if [ -n "$need" ]; then
    echo "make test needs these programs, which this system's package manager must install:$need" >&2
    exit 1
  fi
  exit 0
fi

missing=""
for pkg in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "make test needs these Debian packages: sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "installing the system packages the tests need:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq$missing >/dev/null
