#!/usr/bin/env bash
# What `make test` needs besides Go, installed when it is missing:
#   - redis-server (the Redis tests start private servers on free ports),
#   - Debian's chromium for the adk-web suite (unless CHROMIUM_PATH names another),
#   - each Node suite's node_modules, by `npm ci`, when it is missing or does not
#     match the suite's package-lock.json (testing/node/lockcheck.mjs decides).
# Debian packages are installed with apt-get when this runs as root; otherwise
# the script stops and prints the one command to run first.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ -f e2e/adk/package.json ] && [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  missing+=(chromium)
fi
if ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing ${missing[*]} (apt-get)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "deps: missing ${missing[*]}; run this once, then make test again:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

for dir in clients e2e/adk e2e/a2a; do
  [ -f "$dir/package-lock.json" ] || continue
  if ! reason=$(node testing/node/lockcheck.mjs "$dir" 2>&1); then
    echo "deps: $dir: $reason; npm ci" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
