"""A TCP forwarder to the test server that can be cut, for connection faults."""

from __future__ import annotations

import contextlib
import socket
import threading


class Proxy:
    """A TCP forwarder to the test server that can be cut: the server 'goes away' for this client
    only, without stopping a server other tests use."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.cut = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.cut:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut:
                client.close()
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    def drop(self) -> None:
        """Close the connections open now and keep accepting new ones: a server restart as the
        connections a client pools see it."""
        dropped, self.sockets = self.sockets, []
        for s in dropped:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.cut = True
        with contextlib.suppress(OSError):  # shutdown wakes the blocked accept(); close() alone does not
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.drop()
