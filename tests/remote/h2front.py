"""An HTTP/2 server of ours over TLS (ALPN "h2" only) for the hostile-server tests
(test_hostile.py): it serves the files of a folder (GET with a single "bytes=A-B" range, HEAD;
ETag and Last-Modified from the file), and while `reset` is set it answers each ranged GET with
its headers and half its body, then resets the stream (RST_STREAM, INTERNAL_ERROR): a reset in
the middle of an HTTP/2 stream, which nginx cannot be made to do. Uses python3-h2 (Debian's;
tests/remote/deps.sh installs it) and the throwaway CA of procs.make_ca.

    srv = H2Server(root, cert, key, log_path).start(); srv.url; srv.reset = True; srv.stop()
Its log has one JSON line per request: method, path, range, status, bytes (body bytes sent),
reset (whether the stream was reset), alpn (the connection's protocol)."""

import email.utils
import json
import os
import socket
import ssl
import threading

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions


class H2Server:
    def __init__(self, root, cert, key, log_path):
        self.root, self.cert, self.key, self.log_path = root, cert, key, log_path
        self.reset = False
        self.sock = None
        self.port = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conns = []

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def start(self):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(self.cert, self.key)
        self.ctx.set_alpn_protocols(["h2"])
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name=f"h2-{self.port}").start()
        return self

    def stop(self):
        self._stop.set()
        with self._lock:
            for c in self._conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self.sock is not None:
            self.sock.close()

    def log(self, entry):
        with self._lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")

    def _accept(self):
        while not self._stop.is_set():
            try:
                raw, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw):
        try:
            raw.settimeout(None)
            conn_sock = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        with self._lock:
            self._conns.append(conn_sock)
        alpn = conn_sock.selected_alpn_protocol()
        h2c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False,
                                                                   header_encoding="utf-8"))
        pending = {}  # stream id -> [body, bytes sent, bytes to send before a reset]
        try:
            h2c.initiate_connection()
            conn_sock.sendall(h2c.data_to_send())
            while not self._stop.is_set():
                data = conn_sock.recv(65536)
                if not data:
                    break
                for ev in h2c.receive_data(data):
                    if isinstance(ev, h2.events.RequestReceived):
                        self._answer(h2c, ev.stream_id, dict(ev.headers), pending, alpn)
                    elif isinstance(ev, h2.events.StreamReset):
                        pending.pop(ev.stream_id, None)
                self._pump(h2c, pending)
                out = h2c.data_to_send()
                if out:
                    conn_sock.sendall(out)
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
            pass
        finally:
            with self._lock:
                if conn_sock in self._conns:
                    self._conns.remove(conn_sock)
            conn_sock.close()

    def _answer(self, h2c, sid, hdrs, pending, alpn):
        method, path, rng = hdrs.get(":method"), hdrs.get(":path", "/"), hdrs.get("range")
        full = os.path.realpath(os.path.join(self.root, path.split("?")[0].lstrip("/")))
        entry = {"method": method, "path": path, "range": rng, "alpn": alpn, "reset": False}
        if not full.startswith(os.path.realpath(self.root) + os.sep) or not os.path.isfile(full):
            h2c.send_headers(sid, [(":status", "404"), ("content-length", "0")], end_stream=True)
            entry.update(status=404, bytes=0)
            return self.log(entry)
        st = os.stat(full)
        size = st.st_size
        common = [("etag", '"%x-%x"' % (int(st.st_mtime_ns), size)),
                  ("last-modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                  ("accept-ranges", "bytes")]
        first, last, status = 0, size - 1, 200
        if rng and rng.startswith("bytes="):
            try:
                a, b = rng[6:].split("-")
                first, last = int(a), min(int(b), size - 1)
                status = 206
            except ValueError:
                pass
        if status == 206 and first >= size:
            h2c.send_headers(sid, [(":status", "416"), ("content-range", f"bytes */{size}"),
                                   ("content-length", "0")] + common, end_stream=True)
            entry.update(status=416, bytes=0)
            return self.log(entry)
        heads = [(":status", str(status)), ("content-length", str(last - first + 1))] + common
        if status == 206:
            heads.append(("content-range", f"bytes {first}-{last}/{size}"))
        if method == "HEAD":
            h2c.send_headers(sid, heads, end_stream=True)
            entry.update(status=status, bytes=0)
            return self.log(entry)
        with open(full, "rb") as f:
            f.seek(first)
            body = f.read(last - first + 1)
        h2c.send_headers(sid, heads)
        reset = self.reset and status == 206
        pending[sid] = [body, 0, len(body) // 2 if reset else len(body)]
        entry.update(status=status, bytes=pending[sid][2], reset=reset)
        self.log(entry)

    @staticmethod
    def _pump(h2c, pending):
        """Send what the flow-control windows allow; a stream due for a reset is reset."""
        for sid in list(pending):
            body, sent, upto = pending[sid]
            while sent < upto:
                n = min(upto - sent, h2c.local_flow_control_window(sid),
                        h2c.max_outbound_frame_size)
                if n <= 0:
                    break
                h2c.send_data(sid, body[sent:sent + n])
                sent += n
            pending[sid][1] = sent
            if sent >= upto:
                del pending[sid]
                if upto < len(body):
                    h2c.reset_stream(sid, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
                else:
                    h2c.end_stream(sid)
