#!/usr/bin/env bash
# Gateway memory: RSS of a fresh Callisto and a fresh jupyter_server (rate limits lifted), idle
# and with K kernels each with an open WebSocket, with gwbench ($GWBENCH) mem.
#
#   bench/mem_gateways.sh [RUNS] [OUT.jsonl] [K]
#
# Each run starts both servers fresh (callisto first, then jupyter_server), one at a time.
# Needs a built callisto (CALLISTO=path, default build/gateway/callisto).
set -euo pipefail

RUNS=${1:-2}
OUT=${2:-}
K=${3:-20}
[ -n "$OUT" ] && [ "${OUT#/}" = "$OUT" ] && OUT="$PWD/$OUT"
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/mem-$(date -u +%Y%m%d-%H%M%S).jsonl}
mkdir -p "$(dirname "$OUT")"
source bench/server_lifecycle.sh

mem() {  # port pid label
  echo "$3: $(uptime)" >&2
  $PY "$GWBENCH" --url "http://127.0.0.1:$1" --token "$TOKEN" --max-seconds 900 \
      mem -k "$K" --gateway-pid "$2" --label "$3" >>"$OUT" || true
}

echo "writing $OUT" >&2
for run in $(seq 1 "$RUNS"); do
  echo "== run $run/$RUNS" >&2
  port=$(free_port)
  start_callisto "$port"
  if wait_up "$port"; then mem "$port" "$SERVER_PID" callisto; fi
  stop_server "$SERVER_PID"

  port=$(free_port); dir=$(mktemp -d)
  start_jupyter_server "$port" "$dir"
  if wait_up "$port"; then mem "$port" "$SERVER_PID" jupyter_server_nolimit; fi
  stop_server "$SERVER_PID"
  rm -rf "$dir"
done
$PY "$GWBENCH" summarize --format pivot "$OUT"
