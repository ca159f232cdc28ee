"""End-to-end tests of /v1's files: uploads (PUT and hand-built multipart forms) read by the
code, downloads of what it wrote (attachments under a CSP sandbox), and each refusal.

Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import json
import socket
import sys
import urllib.parse

from e2e_client import (BASE_URL, HTTP_TIMEOUT, TOKEN, api, callisto_only, check, check_documented,
                        check_eq, run_code, run_tests)
from v1_client import FORM_END, FORM_TYPE, files_url, form_file, form_part


@callisto_only
def test_files_upload_a_csv_read_it_with_pandas_and_download_a_png(context):
    csv = b"city,temp\nOslo,3\nRome,18\nCairo,27\n"
    r = api("PUT", files_url(context, "data/temps.csv"), csv,
            headers={"Content-Type": "text/csv"})
    check_eq(r.status, 201, "upload " + repr(r.body[:200]))
    check_eq(r.json()["size"], len(csv), "size")
    r = run_code(context, "import pandas as pd\ndf = pd.read_csv('data/temps.csv')\n"
                          "print(df['temp'].mean())\n"
                          "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                          "df.plot.bar(x='city', y='temp').get_figure().savefig('chart.png')")
    check_eq(r["status"], "ok", "pandas and matplotlib ran " + json.dumps(r)[:600])
    check_eq(r["stdout"], "16.0\n", "pandas read the upload")
    listing = api("GET", files_url(context)).json()
    paths = {f["path"]: f for f in listing["files"]}
    check("data/temps.csv" in paths and "chart.png" in paths, "listed", listing)
    check_eq(paths["data"]["type"], "directory", "directory listed")
    # The kernel's own dot-directories only when asked for (a kernel writes .ipython etc.).
    run_code(context, "import os; os.makedirs('.cache/x', exist_ok=True); open('.cache/x/f', 'w').close()")
    check(not any(p.split("/")[0].startswith(".") for p in
                  (f["path"] for f in api("GET", files_url(context)).json()["files"])),
          "no dot entries by default")
    hidden = api("GET", files_url(context) + "?hidden=true").json()["files"]
    check(".cache/x/f" in {f["path"] for f in hidden}, "dot entries with ?hidden=true", hidden)
    check_eq(api("GET", files_url(context) + "?hidden=maybe").status, 400, "bad ?hidden")
    png = api("GET", files_url(context, "chart.png"))
    check_eq(png.status, 200, "download")
    check_eq(png.headers.get("content-type"), "image/png", "content type")
    check(png.body.startswith(b"\x89PNG\r\n\x1a\n"), "a PNG", png.body[:8])
    check("content-disposition" not in png.headers, "a PNG shows inline", png.headers)
    check_eq(len(png.body), paths["chart.png"]["size"], "whole file")
    check_eq(api("GET", files_url(context, "data/temps.csv")).body, csv, "CSV round trip")
    check_eq(api("DELETE", files_url(context, "chart.png")).status, 204, "delete")
    check_eq(api("GET", files_url(context, "chart.png")).status, 404, "deleted")
    # Files outlive a kernel restart.
    check_eq(api("POST", f"/v1/contexts/{context['id']}/restart").status, 200, "restart")
    check_eq(api("GET", files_url(context, "data/temps.csv")).body, csv, "kept over a restart")


ACTIVE_FILES = {
    # An SVG's script runs when the SVG is opened as a page: it could read a ?token= from its
    # own URL, or the web UI's sessionStorage, and drive the API as the user.
    "x.svg": '<svg xmlns="http://www.w3.org/2000/svg"><script>'
             'fetch("/api/kernels?" + location.search.slice(1))</script></svg>',
    "page.html": "<!doctype html><script>document.title = location.search</script>",
    "data.xml": '<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">1</x:script>',
    "app.js": "alert(1)",
    "no-extension": "<html><script>alert(1)</script></html>",
}


def check_untrusted_file_headers(r, what):
    csp = r.headers.get("content-security-policy", "")
    check("sandbox" in csp and "default-src 'none'" in csp, what + ": a CSP sandbox", r.headers)
    check_eq(r.headers.get("x-content-type-options"), "nosniff", what + ": nosniff")
    check_eq(r.headers.get("referrer-policy"), "no-referrer", what + ": no Referer")


@callisto_only
def test_kernel_written_svg_and_html_download_as_attachments_in_a_sandbox(context):
    r = run_code(context, "import json\nfor name, text in json.loads(%r).items():\n"
                          "    open(name, 'w').write(text)\n"
                          "open('notes.txt', 'w').write('<script>alert(1)</script>')" %
                          json.dumps(ACTIVE_FILES))
    check_eq(r["status"], "ok", "the kernel wrote the files " + json.dumps(r)[:400])
    for name in ACTIVE_FILES:
        # ?token= is how such a link would carry the token; it gets the same headers.
        for auth in ("header", "query"):
            what = f"GET {name} (token in the {auth})"
            f = api("GET", files_url(context, name), auth=auth)
            check_eq(f.status, 200, what)
            check_eq(f.body, ACTIVE_FILES[name].encode(), what + ": the bytes")
            check_documented("GET", "/v1/contexts/{context_id}/files/{path}", f)
            check(not f.headers.get("content-type", "").startswith("text/html"),
                  what + ": never text/html", f.headers)
            check_eq(f.headers.get("content-disposition"),
                     f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}",
                     what + ": an attachment")
            check_untrusted_file_headers(f, what)
    # Plain text stays viewable inline (as text), still sandboxed and never sniffed.
    f = api("GET", files_url(context, "notes.txt"))
    check(f.headers.get("content-type", "").startswith("text/plain"), "text", f.headers)
    check("content-disposition" not in f.headers, "text is inline", f.headers)
    check_untrusted_file_headers(f, "notes.txt")


def raw_request(head):
    url = urllib.parse.urlsplit(BASE_URL)
    with socket.create_connection((url.hostname, url.port), timeout=HTTP_TIMEOUT) as s:
        s.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        status = int(data.split(b" ", 2)[1])
        head_end = data.find(b"\r\n\r\n") + 4
        length = 0
        for line in data[:head_end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(data) < head_end + length:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return status, data


def raw_message(data):
    """The "message" of a raw answer's JSON body."""
    return json.loads(data[data.find(b"\r\n\r\n") + 4:])["message"]


@callisto_only
def test_refused_file_operations(context):
    def refused(method, path, status, what, body=None):
        r = api(method, path, body)
        check_eq(r.status, status, what + ": " + repr(r.body[:200]))
        check_eq(set(r.json()), {"reason", "message"}, what + " is a JSON error")
        return r.json()["message"]

    base = files_url(context)
    for path in ["../x", "a/../../etc/passwd", "%2e%2e/x", "a%2fb", "a%00b", "/etc/passwd"]:
        refused("GET", base + "/" + path, 400, f"traversal {path!r}")
        refused("PUT", base + "/" + path, 400, f"upload to {path!r}", b"x")
    for path in ["a%0ab", "a%7f", "a%5cb", "n" * 256]:
        refused("PUT", base + "/" + path, 400, f"odd name {path[:20]!r}", b"x")
    # Links the kernel plants are not followed, for reading, writing or deleting.
    run_code(context, "import os\nos.symlink('/etc', 'etc_link')\nos.symlink('/etc/passwd', 'passwd')\n"
                      "os.mkdir('dir')\nopen('dir/f', 'w').write('x')")
    msg = refused("GET", base + "/etc_link/passwd", 400, "through a directory link")
    check("symbolic link" in msg, "says why", msg)
    refused("GET", base + "/passwd", 400, "a link to a file")
    refused("PUT", base + "/etc_link/planted", 400, "upload through a link", b"x")
    refused("DELETE", base + "/etc_link/hostname", 400, "delete through a link")
    refused("GET", base + "/missing.txt", 404, "missing file")
    refused("GET", base + "/dir", 409, "download a directory")
    refused("PUT", base + "/dir", 409, "overwrite a directory", b"x")
    refused("DELETE", base + "/dir", 409, "delete a non-empty directory")
    r = api("POST", base + "/x", b"x")
    check_eq(r.status, 405, "wrong method")
    # Oversized upload: refused from its Content-Length, before the body is read.
    status, data = raw_request(
        f"PUT {base}/huge.bin HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\n"
        f"Content-Length: {200 * 1024 * 1024}\r\n\r\n".encode())
    check_eq(status, 413, "oversized upload " + repr(data[:200]))
    # The answer names the limit and the option that sets it (it once said "0 bytes").
    msg = raw_message(data)
    check(f"of {200 * 1024 * 1024} bytes" in msg and "104857600 bytes (100MiB)" in msg and
          "--upload-limit" in msg, "the 413 names the size, the limit and its option", msg)
    # "Expect: 100-continue" (curl's large uploads) gets the go-ahead, then the body.
    url = urllib.parse.urlsplit(BASE_URL)
    with socket.create_connection((url.hostname, url.port), timeout=HTTP_TIMEOUT) as sock:
        sock.sendall(f"PUT {base}/expect.txt HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: token {TOKEN}\r\nContent-Length: 5\r\n"
                     "Expect: 100-continue\r\n\r\n".encode())
        interim = sock.recv(4096)
        check(interim.startswith(b"HTTP/1.1 100 Continue"), "100 Continue first", interim)
        sock.sendall(b"hello")
        final = b""
        while b"\r\n\r\n" not in final:
            final += sock.recv(4096)
        check(final.startswith(b"HTTP/1.1 201"), "then 201", final[:100])
    check_eq(api("GET", base + "/expect.txt").body, b"hello", "expect upload stored")
    # A body over the ordinary 1 MiB limit is fine for an upload.
    big = bytes(range(256)) * (8 * 1024)  # 2 MiB
    check_eq(api("PUT", base + "/big.bin", big).status, 201, "2 MiB upload")
    check_eq(api("GET", base + "/big.bin").body, big, "2 MiB round trip")
    # ...but not for other routes.
    status, data = raw_request(
        f"POST /v1/contexts/{context['id']}/executions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: token {TOKEN}\r\nContent-Length: {2 * 1024 * 1024}\r\n\r\n".encode())
    check_eq(status, 413, "a large execution body")
    msg = raw_message(data)
    check("1048576 bytes (1MiB)" in msg and "fixed" in msg and "--upload-limit" in msg,
          "the 413 names the fixed limit and the way around it", msg)
    check_eq(run_code(context, "1")["status"], "ok", "the context still works")


@callisto_only
def test_multipart_upload_hand_built_forms_and_every_refusal(context):
    base = files_url(context)

    def post(body, content_type=FORM_TYPE):
        return api("POST", base, body, headers={"Content-Type": content_type})

    csv = b"x,y\r\n1,2\r\n3,4\r\n"
    r = post(b"preamble\r\n" + form_file(b"in.csv", csv) +
             form_file(b"sub/two.csv", b"a\n5\n", b"other") + FORM_END + b"epilogue")
    check_eq(r.status, 201, "upload " + repr(r.body[:300]))
    check_eq(r.json()["files"], [{"path": "in.csv", "size": len(csv)},
                                 {"path": "sub/two.csv", "size": 4}], "answer")
    out = run_code(context, "import pandas as pd\nprint(pd.read_csv('in.csv')['y'].sum(), "
                            "pd.read_csv('sub/two.csv')['a'][0])")
    check_eq(out["stdout"], "6 5\n", "pandas reads both")

    good = form_file(b"ok.csv", b"1")
    refusals = [
        (FORM_TYPE, good.replace(b"B0UND", b"OTHER") + b"--OTHER--\r\n", 400, "boundary"),
        ("multipart/form-data", good + FORM_END, 400, "no boundary"),
        ("multipart/form-data; boundary=" + "b" * 71, good + FORM_END, 400, "boundary"),
        (FORM_TYPE, good, 400, "closing boundary"),
        (FORM_TYPE, form_part(b"Content-Type: text/csv", b"x") + FORM_END, 400,
         "no Content-Disposition"),
        (FORM_TYPE, form_part(b"", b"x") + FORM_END, 400, "no Content-Disposition"),
        (FORM_TYPE, form_part(b'Content-Disposition: form-data; name="f"', b"x") + FORM_END,
         400, "unknown form field"),
        (FORM_TYPE, form_file(b"", b"x") + FORM_END, 400, "empty filename"),
        (FORM_TYPE, good + form_file(b"../x.csv", b"x") + FORM_END, 400, "'.' or '..'"),
        (FORM_TYPE, form_file(b"/etc/cron.d/x", b"x") + FORM_END, 400, "relative"),
        (FORM_TYPE, form_file(b"a\\\\b.csv", b"x") + FORM_END, 400, "backslash"),
        (FORM_TYPE, form_file(b"a\x00b.csv", b"x") + FORM_END, 400, "NUL"),
        (FORM_TYPE, good + form_file(b"ok.csv", b"2") + FORM_END, 400, "two files"),
        (FORM_TYPE, form_part(b"Content-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n"
                              b"X-Big: " + b"h" * 10000, b"x") + FORM_END, 400, "headers"),
        (FORM_TYPE, FORM_END, 400, "no file"),
        (FORM_TYPE, b"", 400, "boundary"),
        ("application/json", b"{}", 415, "multipart/form-data"),
    ]
    for content_type, body, status, says in refusals:
        r = post(body, content_type)
        check_eq(r.status, status, f"{body[:60]!r}: {r.body[:200]!r}")
        check(says in r.json()["message"], f"says why for {body[:60]!r}", r.json())
    names = {f["path"] for f in api("GET", base).json()["files"]}
    check({"in.csv", "sub/two.csv"} <= names, "the good form's files are there", names)
    check(not names & {"ok.csv", "x.csv", "a", "a\\b.csv", "escape.csv"},
          "no refused form wrote anything", names)

    # Same body limit as PUT: refused from the Content-Length, before the body.
    status, data = raw_request(
        f"POST {base} HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\n"
        f"Content-Type: {FORM_TYPE}\r\nContent-Length: {200 * 1024 * 1024}\r\n\r\n".encode())
    check_eq(status, 413, "oversized form " + repr(data[:200]))
    msg = raw_message(data)
    check("104857600 bytes (100MiB)" in msg and "--upload-limit" in msg,
          "the form's 413 names the limit and its option", msg)
    # Larger than the ordinary 1 MiB request limit is fine.
    big = bytes(range(256)) * (8 * 1024)
    r = post(form_file(b"big.bin", big) + FORM_END)
    check_eq(r.status, 201, "2 MiB form " + repr(r.body[:200]))
    check_eq(api("GET", base + "/big.bin").body, big, "2 MiB round trip")
    check_eq(api("POST", base, b"x", token="wrong").status, 401, "token needed")


if __name__ == "__main__":
    sys.exit(run_tests())
