#!/usr/bin/env bash
# Measures Callisto side by side with jupyter_server (the reference API) and direct ZeroMQ
# (the floor) in one run, interleaved, on this machine, with ../shared/bench/gwbench.py.
#
#   bench/compare_gateways.sh [ROUNDS] [OUT.jsonl]
#
# Needs a built callisto (CALLISTO=path, default build/gateway/callisto). Each round starts
# every server fresh. Prints the pivot summary at the end; the raw JSON lines stay in OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-3}
OUT=${2:-bench/results-$(date +%Y%m%d-%H%M%S).jsonl}
CALLISTO=${CALLISTO:-build/gateway/callisto}
GWBENCH=${GWBENCH:-../shared/bench/gwbench.py}
PY=/usr/bin/python3
TOKEN=bench-token-$$
QUICK=${QUICK:-}   # set to --quick for a fast smoke of the harness

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_up() {
  for _ in $(seq 1 100); do
    $PY -c 'import sys,urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/api" % sys.argv[1], timeout=1)' "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not come up" >&2; return 1
}

run_callisto() {
  local port; port=$(free_port)
  "$CALLISTO" --ip=127.0.0.1 --port="$port" --token="$TOKEN" --log-level=warn "$@" >/dev/null 2>&1 &
  local pid=$!
  wait_up "$port"
  $PY "$GWBENCH" --url "http://127.0.0.1:$port" --token "$TOKEN" --max-seconds 1200 \
      all $QUICK --gateway-pid "$pid" --label callisto >>"$OUT" || true
  kill -TERM "$pid"; wait "$pid" || true
}

run_jupyter_server() {
  local port dir; port=$(free_port); dir=$(mktemp -d)
  $PY -m jupyter_server --no-browser --allow-root --ServerApp.ip=127.0.0.1 \
      --ServerApp.port="$port" --ServerApp.token="$TOKEN" --ServerApp.root_dir="$dir" \
      --ServerApp.iopub_data_rate_limit=0 --ServerApp.iopub_msg_rate_limit=0 >/dev/null 2>&1 &
  local pid=$!
  wait_up "$port"
  $PY "$GWBENCH" --url "http://127.0.0.1:$port" --token "$TOKEN" --max-seconds 1200 \
      all $QUICK --gateway-pid "$pid" --label jupyter_server_nolimit >>"$OUT" || true
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$dir"
}

run_direct() {
  local n=500 lines=20000 mb=50
  [ -n "$QUICK" ] && { n=100; lines=2000; mb=10; }
  $PY "$GWBENCH" direct --client raw start -n 5 --label direct_zmq >>"$OUT" || true
  $PY "$GWBENCH" direct --client raw rtt -n "$n" --label direct_zmq >>"$OUT" || true
  $PY "$GWBENCH" direct --client raw stream --mode big --mb "$mb" --label direct_zmq >>"$OUT" || true
  $PY "$GWBENCH" direct --client raw stream --mode chunked --mb "$mb" --label direct_zmq >>"$OUT" || true
  $PY "$GWBENCH" direct --client raw stream --mode small --lines "$lines" --label direct_zmq >>"$OUT" || true
  $PY "$GWBENCH" direct --client raw image --mode relay --label direct_zmq >>"$OUT" || true
  $PY "$GWBENCH" direct --client raw concurrency -c 4 -r 200 --label direct_zmq >>"$OUT" || true
}

echo "writing $OUT" >&2
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS" >&2
  run_callisto
  run_jupyter_server
  run_direct
done
$PY "$GWBENCH" summarize --format pivot "$OUT"
