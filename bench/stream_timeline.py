#!/usr/bin/python3
"""Where the time of one big stream message goes, for a gateway and for direct ZeroMQ.

Runs gwbench's "stream big" cell (50 MB of print() by default) with gwbench's own client classes
and stamps, in ms after the execute_request: the kernel's message `date` (when it built the
message), when the client's socket handed over the first and last bytes of the message (the
WebSocket client's 16 KiB reads; for direct ZeroMQ, when pyzmq handed over the whole message),
when the WebSocket frame was assembled (`ws_frame_done`), and when the message was decoded
(`client_got`, after `json.loads`, and the HMAC check for direct). Compare the two to see what
the gateway adds before its first byte leaves and what the client pays to read a big frame.

  /usr/bin/python3 bench/stream_timeline.py direct [--mb 50] [--reps 4]
  /usr/bin/python3 bench/stream_timeline.py gateway URL TOKEN [--mb 50] [--reps 4]

Start the gateway with its output caps lifted (Callisto: --ws-output-limit=0
--ws-rich-output-limit=0) and, to compare the relay alone, --sandbox=off.
"""

import argparse
import datetime
import os
import sys
import time

sys.path.insert(0, os.environ.get("GWBENCH_DIR", os.path.join(os.path.dirname(__file__), "..", "..",
                                                                 "shared", "bench")))
import gwbench as g  # noqa: E402


def seconds(date):
    if not isinstance(date, str):  # jupyter_client parses dates itself
        return date.timestamp()
    return datetime.datetime.fromisoformat(date.replace("Z", "+00:00")).timestamp()


def stamp_direct(conn, arrivals):
    """pyzmq hands over the whole message; record when, just before it is deserialized."""
    feed = conn.session.feed_identities

    def timed(parts, *a, **k):
        arrivals.append((time.time(), sum(len(p) for p in parts)))
        return feed(parts, *a, **k)
    conn.session.feed_identities = timed


def stamp_websocket(conn, arrivals, frames):
    """Wraps the client's socket (each recv) and recv_data (each whole frame)."""
    sock = conn.ws.sock

    class Stamped:
        def __getattr__(self, name):
            return getattr(sock, name)

        def recv(self, n):
            data = sock.recv(n)
            arrivals.append((time.time(), len(data)))
            return data
    conn.ws.sock = Stamped()
    recv_data = conn.ws.recv_data

    def timed(*a, **k):
        result = recv_data(*a, **k)
        frames.append(time.time())
        return result
    conn.ws.recv_data = timed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", choices=["direct", "gateway"])
    ap.add_argument("url", nargs="?")
    ap.add_argument("token", nargs="?")
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    if args.target == "gateway" and not (args.url and args.token):
        ap.error("gateway needs URL and TOKEN")
    backend = (g.DirectBackend("python3", 60, client="raw") if args.target == "direct"
               else g.GatewayBackend(args.url, args.token, "python3", 60))
    code, _, _ = g.stream_code("big", args.mb, 1001)
    arrivals, frames = [], []
    with g.KernelSession(backend, 60) as ks:
        conn = ks.conn
        g.execute(conn, g.stream_code("big", 1, 1001)[0], 60)  # warm-up
        if args.target == "direct":
            stamp_direct(conn, arrivals)
        else:
            stamp_websocket(conn, arrivals, frames)
        for _ in range(args.reps):
            del arrivals[:], frames[:]
            marks = {}
            t0 = time.time()

            def on_msg(m, marks=marks):
                if g.msg_type_of(m) == "stream":
                    marks["kernel_date"] = seconds(m["header"]["date"]) - t0
                    marks["client_got"] = time.time() - t0
                    if frames:
                        marks["ws_frame_done"] = frames[-1] - t0
            g.execute(conn, code, 60, on_msg=on_msg)
            marks["idle"] = time.time() - t0
            big = [t for t, n in arrivals if n > 1000]
            if big:
                marks["first_bytes"], marks["last_bytes"] = big[0] - t0, big[-1] - t0
            order = ["kernel_date", "first_bytes", "last_bytes", "ws_frame_done", "client_got", "idle"]
            print(args.target, " ".join(f"{k}={marks[k] * 1e3:.0f}" for k in order if k in marks),
                  flush=True)


if __name__ == "__main__":
    main()
