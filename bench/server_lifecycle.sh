# Sourced by the benchmark scripts, from the repository root: the servers they compare, started
# the same way everywhere, a free loopback port, waiting for a server to answer, and stopping it,
# including when a round fails or is interrupted (a server left running would skew every later
# figure).

CALLISTO=${CALLISTO:-build/gateway/callisto}
# gwbench 1.0, the harness that measures any Jupyter-compatible gateway, is not part of this
# repository: say where it is.
: "${GWBENCH:?set GWBENCH to the path of gwbench.py (gwbench 1.0)}"
PY=/usr/bin/python3   # the Python with ipykernel, jupyter_client and websocket-client
TOKEN=bench-token-$$
NICE=${NICE:-0}   # e.g. NICE=-10 (as root): the servers, clients and kernels ahead of the rest
RUN=(nice -n "$NICE")

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_callisto PORT [FLAGS...]: in the background, SERVER_PID set. Extra flags (e.g. the lifted
# output caps) come from the caller.
start_callisto() {
  local port=$1; shift
  "${RUN[@]}" "$CALLISTO" --ip=127.0.0.1 --port="$port" --token="$TOKEN" --log-level=warn "$@" >/dev/null 2>&1 &
  SERVER_PID=$!
}

# start_jupyter_server PORT ROOT_DIR: the reference, with its IOPub rate limits lifted (they drop
# a 50 MB output entirely); in the background, SERVER_PID set.
start_jupyter_server() {
  $PY -m jupyter_server --no-browser --allow-root --ServerApp.ip=127.0.0.1 \
      --ServerApp.port="$1" --ServerApp.token="$TOKEN" --ServerApp.root_dir="$2" \
      --ServerApp.iopub_data_rate_limit=0 --ServerApp.iopub_msg_rate_limit=0 >/dev/null 2>&1 &
  SERVER_PID=$!
}

stop_server() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  SERVER_PID=
}

wait_up() {
  for _ in $(seq 1 100); do
    $PY -c 'import sys,urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/api" % sys.argv[1], timeout=1)' "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not come up" >&2; return 1
}
