#!/usr/bin/env bash
# Runs every e2e suite against Debian's jupyter_server (same API as Callisto),
# with the Callisto-only tests skipped: a check of the tests themselves.
# Usage: tests/e2e/validate_with_jupyter_server.sh   (needs node_modules: npm ci in node/)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
token="validate-$RANDOM$RANDOM"
root="$(mktemp -d)"
/usr/bin/python3 -m jupyter_server --no-browser --allow-root --ServerApp.ip=127.0.0.1 \
  --ServerApp.port="$port" --ServerApp.port_retries=0 --ServerApp.token="$token" \
  --ServerApp.root_dir="$root" --ServerApp.iopub_data_rate_limit=0 \
  --ServerApp.iopub_msg_rate_limit=0 >"$root/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$root"' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/api" >/dev/null && break
  sleep 0.2
done
export CALLISTO_URL="http://127.0.0.1:$port" CALLISTO_TOKEN="$token" CALLISTO_E2E_TARGET=jupyter_server
rc=0
for t in test_gateway_api test_bad_input test_jupyter_server_gateway; do
  echo "== $t"
  timeout 1200 /usr/bin/python3 "$here/python/$t.py" || rc=1
done
echo "== services_test.mjs"
(cd "$here/node" && timeout 300 node services_test.mjs) || rc=1
exit $rc
