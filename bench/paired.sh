#!/usr/bin/env bash
# One gwbench measurement repeated PAIRS times, alternating Callisto and direct ZeroMQ back to
# back, so that each pair sees the same machine load. For targets stated relative to direct
# ZeroMQ (rtt, stream) on a noisy machine.
#
#   bench/paired.sh PAIRS OUT.jsonl BENCH [gwbench bench args...]
#   e.g. bench/paired.sh 10 bench/results/paired-rtt.jsonl rtt -n 300
#        bench/paired.sh 6 bench/results/paired-big-quiet.jsonl stream --mode big --mb 50 --repeat 3
#
# One Callisto is started for the whole series (CALLISTO=path, default build/gateway/callisto);
# each gwbench call starts its own kernel. The WebSocket output caps are lifted (as the
# comparison lifts jupyter_server's rate limits): the stream benchmarks print 50 MB per cell.
# CALLISTO_ARGS replaces those flags (e.g. CALLISTO_ARGS= for a build that predates them). Set NICE=-10 (as root) to run the gateway, the
# clients and their kernels at a higher priority than the rest of the machine.
set -euo pipefail

PAIRS=$1; OUT=$2; shift 2
[ "${OUT#/}" = "$OUT" ] && OUT="$PWD/$OUT"
cd "$(dirname "$0")/.."
mkdir -p "$(dirname "$OUT")"
source bench/server_lifecycle.sh
TAG=${TAG:-paired}

port=$(free_port)
start_callisto "$port" ${CALLISTO_ARGS---ws-output-limit=0 --ws-rich-output-limit=0}
wait_up "$port"

for i in $(seq 1 "$PAIRS"); do
  echo "pair $i/$PAIRS: $(uptime)" >&2
  # alternate which side goes first, so neither always follows the other
  if [ $((i % 2)) -eq 1 ]; then order="callisto direct"; else order="direct callisto"; fi
  for side in $order; do
    if [ "$side" = callisto ]; then
      "${RUN[@]}" $PY "$GWBENCH" --url "http://127.0.0.1:$port" --token "$TOKEN" \
          "$@" --label callisto --variant "$TAG" >>"$OUT" || true
    else
      "${RUN[@]}" $PY "$GWBENCH" direct --client raw "$@" --label direct_zmq --variant "$TAG" >>"$OUT" || true
    fi
  done
done
$PY "$GWBENCH" summarize --format pivot "$OUT"
