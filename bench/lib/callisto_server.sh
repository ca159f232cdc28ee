# Sourced by the bench scripts that run a Callisto of their own (scale_ceiling.sh, soak.sh):
# a scratch directory the sandbox's uids can reach, and a server started, awaited and, on any
# exit of the script, stopped with the scratch directory removed.
#
#   WORK=$(bench_scratch_dir NAME)        # /tmp/callisto-NAME-XXXXXX
#   start_callisto LOG ARGS...            # sets SERVER_PID; returns once /readyz answers
#   stop_callisto                         # SIGTERM and wait (also done at exit)
#
# KEEP_WORK=1 keeps the scratch directory (workdirs, runtime directory) for a look afterwards.

SERVER_PID=
WORK=

bench_scratch_dir() {
  local dir
  dir=$(mktemp -d "/tmp/callisto-$1-XXXXXX")
  chmod 0755 "$dir"   # sandbox uids must reach the workdirs below it
  echo "$dir"
}

stop_callisto() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=
  fi
  return 0
}

_bench_cleanup() {
  stop_callisto
  [ -n "$WORK" ] && [ -z "${KEEP_WORK:-}" ] && rm -rf "$WORK"
  return 0
}
trap _bench_cleanup EXIT
trap 'exit 130' INT TERM

# start_callisto LOG ARGS...: $CALLISTO with ARGS (which must hold --port=$PORT), output to LOG.
start_callisto() {
  local log=$1
  shift
  "$CALLISTO" "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "callisto did not become ready; see $log" >&2
  return 1
}
