"""A loopback TCP proxy the chaos run puts between one worker and Redis, to cut the network
between them on demand:

- cut("reset"): every open connection is closed at once and new ones are accepted and closed
  straight away (the worker sees connection resets and refused reconnects);
- cut("blackhole"): connections stay open but no byte goes through either way, and new ones are
  accepted but never forwarded (the worker's commands hang until its own timeouts);
- heal(): back to forwarding (connections broken by the cut stay broken; the worker reconnects).

Threads only (stdlib); one pair of pump threads per connection. Listens on 127.0.0.1 only.
"""
import select
import socket
import threading
import time


class TcpProxy:
    def __init__(self, upstream_port, name):
        self.name = name
        self.upstream_port = upstream_port
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.mode = "open"  # open | reset | blackhole
        self.lock = threading.Lock()
        self.conns = set()  # (client socket, upstream socket or None)
        self.stopping = False
        threading.Thread(target=self._accept_loop, daemon=True, name=f"proxy-{name}").start()

    def cut(self, mode):
        assert mode in ("reset", "blackhole")
        with self.lock:
            self.mode = mode
            conns = list(self.conns)
        if mode == "reset":
            for pair in conns:
                self._close(pair)

    def heal(self):
        # A connection that lived through a blackhole is closed by its pump thread (as a
        # partition long enough to break TCP would): the worker reconnects.
        with self.lock:
            self.mode = "open"

    def stop(self):
        self.stopping = True
        try:
            self.listener.close()
        except OSError:
            pass
        with self.lock:
            conns = list(self.conns)
        for pair in conns:
            self._close(pair)

    def _close(self, pair):
        with self.lock:
            self.conns.discard(pair)
        for s in (pair.client, pair.upstream):
            if s is None:
                continue
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def _accept_loop(self):
        while not self.stopping:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.mode == "reset":
                client.close()
                continue
            pair = _Pair(client)
            with self.lock:
                self.conns.add(pair)
            threading.Thread(target=self._serve, args=(pair,), daemon=True).start()

    def _serve(self, pair):
        try:
            pair.upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
            pair.upstream.settimeout(None)
        except OSError:
            self._close(pair)
            return
        socks = [pair.client, pair.upstream]
        try:
            while pair in self.conns:
                if self.mode == "blackhole":
                    pair.held = True  # bytes stay unread in the kernel buffers: nothing flows
                    time.sleep(0.1)
                    continue
                if pair.held:
                    return  # lived through a blackhole: closed below, the client reconnects
                readable, _, _ = select.select(socks, [], [], 0.2)
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (pair.upstream if s is pair.client else pair.client).sendall(data)
        except (OSError, ValueError):
            pass  # closed under us by cut() or stop()
        finally:
            self._close(pair)


class _Pair:
    __slots__ = ("client", "upstream", "held")

    def __init__(self, client):
        self.client = client
        self.upstream = None
        self.held = False
