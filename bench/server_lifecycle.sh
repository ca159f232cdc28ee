# Sourced by the benchmark scripts: a free loopback port, waiting for a server to answer, and
# stopping it, including when a round fails or is interrupted (a server left running would skew
# every later figure). Expects PY to name the Python that has the benchmark's dependencies.

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

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
