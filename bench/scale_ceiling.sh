#!/usr/bin/env bash
# The scale ceiling (issue 14): how many Jupyter WebSocket clients, over how many kernels, this
# machine holds with the execute round trip's p99 under 50 ms and nothing lost, and what gives
# first past it. Each step starts a fresh Callisto (sandbox and zygote on, as `make run`; no
# pool, no connection caps: the load comes from one address), makes the kernels, runs
# callisto-load with tiny executions (`6 * 7`) for DURATION seconds after the ramp-up, keeps
# its JSON report, and stops the server.
#
#   bench/scale_ceiling.sh OUT_DIR [CLIENTS:KERNELS:THINK_MS ...]
#
# Default steps: one client per kernel, 100 and 200 kernels, at 40 executions a second in all;
# then ten clients per kernel, 1,000 to 5,000 clients, at 50 executions a second, then 100 a
# second (each client pauses clients/rate seconds on average between executions; the latencies
# reported are those after the ramp-up, the ramp-up's apart). bench/direct_kernels.py
# gives the floor to compare with: the same rate sent straight to plain ipykernels. From the
# repository root, after a build.

set -euo pipefail
OUT=${1:?usage: bench/scale_ceiling.sh OUT_DIR [CLIENTS:KERNELS:THINK_MS ...]}
shift
STEPS=("$@")
[ ${#STEPS[@]} -gt 0 ] || STEPS=(100:100:2500 200:200:5000 1000:100:20000 2000:200:40000
                                   5000:500:100000 1000:100:10000 5000:500:50000)
CALLISTO=${CALLISTO:-build/gateway/callisto}
LOAD=${LOAD:-build/bench/load/callisto-load}
DURATION=${DURATION:-90}
PORT=${PORT:-18888}
# LOG_LEVEL=info shows in each step's server log why a WebSocket was closed.
TOKEN=scale-$$
source "$(dirname "$0")/lib/callisto_server.sh"
WORK=$(bench_scratch_dir scale)
mkdir -p "$OUT"

for step in "${STEPS[@]}"; do
  IFS=: read -r clients kernels think <<<"$step"
  name="c${clients}-k${kernels}-t${think}"
  # Kernels start at about 15 a second; clients are spread over at least 30 s.
  ramp=$(( clients / 100 > 30 ? clients / 100 : 30 ))
  start_callisto "$OUT/$name.server.log" --ip=127.0.0.1 --port="$PORT" --token="$TOKEN" \
      --log-level="${LOG_LEVEL:-warn}" --workdir-root="$WORK/work" --state-dir=off --pool-size=0 \
      --max-connections=0 --max-connections-per-address=0 --sandbox-uids=61000-61999
  echo "== $name: $clients clients over $kernels kernels, think $think ms, ${ramp}+${DURATION} s"
  rc=0
  "$LOAD" --url="http://127.0.0.1:$PORT" --token="$TOKEN" --clients="$clients" \
      --kernels="$kernels" --think-ms="$think" --ramp-up="$ramp" --duration="$((ramp + DURATION))" \
      --mix=tiny=100 --timeout=60 --no-progress --keep-kernels --json="$OUT/$name.json" \
      >"$OUT/$name.txt" 2>&1 || rc=$?
  tail -n 20 "$OUT/$name.txt"
  echo "   callisto-load exit $rc"
  # SIGTERM stops the kernels (--keep-kernels left them) all at once.
  stop_callisto
  sleep 5   # the kernels' cgroups and workdirs go with the server; let the machine settle
done
