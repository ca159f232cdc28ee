#!/usr/bin/env bash
# The soak of docs/reliability.md (issue 14): a fresh Callisto as `make run` starts it (sandbox
# and zygote on) with a warm pool and idle kernels culled after 60 s, driven by callisto-load
# for DURATION seconds: 200 Jupyter WebSocket clients over 20 kernels, the mixed scenario
# (prints, plots, errors, sleeps, interrupts, one-shot fresh kernels). Afterwards it stops the
# server with SIGTERM and looks for what a leak would leave: processes in the sandbox's uid
# range, workdirs, the runtime directory, cgroups.
#
#   bench/soak.sh OUT_DIR            (DURATION=1800 by default; from the repository root)
#
# OUT_DIR gets callisto-load's table and JSON report (RSS and descriptors over time from
# GET /metrics), the server's log and leftovers.txt. Exit code: callisto-load's, or 3 when
# something was left behind.

set -euo pipefail
OUT=${1:?usage: bench/soak.sh OUT_DIR}
CALLISTO=${CALLISTO:-build/gateway/callisto}
LOAD=${LOAD:-build/bench/load/callisto-load}
DURATION=${DURATION:-1800}
PORT=${PORT:-18899}
UIDS=${UIDS:-62000-62999}
TOKEN=soak-$$-token
source "$(dirname "$0")/lib/callisto_server.sh"
WORK=$(bench_scratch_dir soak)
mkdir -p "$OUT"

start_callisto "$OUT/server.log" --ip=127.0.0.1 --port="$PORT" --token="$TOKEN" \
    --log-level=info --runtime-dir="$WORK/runtime" --workdir-root="$WORK/work" \
    --state-dir=off --sandbox-uids="$UIDS" --pool-size=4 --cull-idle-timeout=60 \
    --cull-interval=10 --max-connections=0 --max-connections-per-address=0
echo "== soak: 200 clients over 20 kernels, the mixed scenario, ${DURATION} s ($(date -u +%FT%TZ))"
rc=0
"$LOAD" --url="http://127.0.0.1:$PORT" --token="$TOKEN" --clients=200 --kernels=20 \
    --duration="$DURATION" --ramp-up=60 --think-ms=200 --timeout=120 --no-progress \
    --json="$OUT/soak.json" >"$OUT/soak.txt" 2>&1 || rc=$?
cat "$OUT/soak.txt"
echo "== fds and RSS before SIGTERM: $(ls /proc/$SERVER_PID/fd | wc -l) fds," \
     "$(awk '/VmRSS/ {print $2, $3}' /proc/$SERVER_PID/status)"

stop_callisto
first=${UIDS%-*}
last=${UIDS#*-}
# Zombies are listed but not counted: a sandbox's pid 1 that bwrap's outer process did not
# wait for is reparented to the host's init, which reaps it in its own time.
{
  echo "processes in uids $UIDS (state Z: exited, waiting for the host's init to reap them):"
  ps -eo uid=,pid=,stat=,comm= | awk -v a="$first" -v b="$last" '$1 >= a && $1 <= b'
  echo "workdirs left: $(find "$WORK/work" -mindepth 1 -maxdepth 1 ! -name '.*' 2>/dev/null | wc -l)"
  echo "runtime directory left: $([ -e "$WORK/runtime" ] && echo yes || echo no)"
  echo "kernel cgroups on the host (any server's): $(find /sys/fs/cgroup -mindepth 2 -maxdepth 3 -type d \
      -path '*/callisto/*' 2>/dev/null | wc -l)"
} >"$OUT/leftovers.txt"
cat "$OUT/leftovers.txt"
left=$(ps -eo uid=,stat= | awk -v a="$first" -v b="$last" '$1 >= a && $1 <= b && $2 !~ /^Z/' | wc -l)
dirs=$(find "$WORK/work" -mindepth 1 -maxdepth 1 ! -name '.*' 2>/dev/null | wc -l)  # not the root's own files
if [ "$left" -ne 0 ] || [ "$dirs" -ne 0 ] || [ -e "$WORK/runtime" ]; then
  echo "== something was left behind"
  [ "$rc" -ne 0 ] || rc=3
fi
exit "$rc"
