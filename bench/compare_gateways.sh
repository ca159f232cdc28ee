#!/usr/bin/env bash
# Measures Callisto side by side with jupyter_server (the reference API) and direct ZeroMQ
# (the floor) in one run, interleaved, on this machine, with gwbench ($GWBENCH).
#
#   bench/compare_gateways.sh [ROUNDS] [OUT.jsonl]
#
# Needs a built callisto (CALLISTO=path, default build/gateway/callisto). Each round starts
# every server fresh. Prints the pivot summary at the end; the raw JSON lines stay in OUT.
# Callisto runs with its WebSocket output caps lifted (CALLISTO_ARGS replaces those flags), as
# jupyter_server runs without its rate limits: the stream benchmarks print 50 MB per cell.
set -euo pipefail

ROUNDS=${1:-3}
OUT=${2:-}
# An OUT given on the command line is relative to the caller's directory, not the repo root.
[ -n "$OUT" ] && [ "${OUT#/}" = "$OUT" ] && OUT="$PWD/$OUT"
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/compare-$(date -u +%Y%m%d-%H%M%S).jsonl}
mkdir -p "$(dirname "$OUT")"
QUICK=${QUICK:-}   # set to --quick for a fast smoke of the harness

source bench/server_lifecycle.sh

# One JSON line per round boundary (no "headline", so summarize skips it) plus the uptime on stderr.
record_load() {
  echo "round $1 $2: $(uptime)" >&2
  $PY -c 'import json,os,sys,time; print(json.dumps({"bench": "load", "round": int(sys.argv[1]), "when": sys.argv[2],
    "ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "loadavg": [round(x, 2) for x in os.getloadavg()]}))' "$1" "$2" >>"$OUT"
}

run_callisto() {
  local port; port=$(free_port)
  start_callisto "$port" ${CALLISTO_ARGS---ws-output-limit=0 --ws-rich-output-limit=0}
  local pid=$SERVER_PID
  wait_up "$port" || { stop_server "$pid"; return 0; }
  $PY "$GWBENCH" --url "http://127.0.0.1:$port" --token "$TOKEN" --max-seconds 1200 \
      all $QUICK --gateway-pid "$pid" --label callisto >>"$OUT" || true
  stop_server "$pid"
}

run_jupyter_server() {
  local port dir; port=$(free_port); dir=$(mktemp -d)
  start_jupyter_server "$port" "$dir"
  local pid=$SERVER_PID
  wait_up "$port" || { stop_server "$pid"; rm -rf "$dir"; return 0; }
  $PY "$GWBENCH" --url "http://127.0.0.1:$port" --token "$TOKEN" --max-seconds 1200 \
      all $QUICK --gateway-pid "$pid" --label jupyter_server_nolimit >>"$OUT" || true
  stop_server "$pid"
  rm -rf "$dir"
}

run_direct() {
  # the same sizes as gwbench `all` uses for the gateways (start -n 10, or 3 with --quick)
  local n=500 lines=20000 mb=50 starts=10
  [ -n "$QUICK" ] && { n=100; lines=2000; mb=10; starts=3; }
  $PY "$GWBENCH" direct --client raw start -n "$starts" --label direct_zmq >>"$OUT" || true
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
  record_load "$round" before
  run_callisto
  run_jupyter_server
  run_direct
  record_load "$round" after
done
$PY "$GWBENCH" summarize --format pivot "$OUT"
