"""One outside call's deadline, over everything the call waits for.

A socket timeout bounds one read, not a call: a server that sends a byte just before each read
would time out holds the call as long as it likes, whether it drips the status line, the headers,
the body or an error's body. So a :class:`Deadline` does two things: each address tried when
connecting gets only the time left, and once connected a watchdog shuts the connection down when
the deadline passes, which ends whatever read the call is blocked in (the TLS handshake, a proxy's
tunnel reply and a redirect's second connection included). Only name resolution is beyond it
(the system resolver's own timeouts bound that).

Usage::

    with Deadline(30.0) as deadline:
        with opener(deadline).open(request) as response:
            body = response.read()
    if deadline.passed:
        ...  # whatever was read may be cut short
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import socket
import threading
import time
import urllib.request
from typing import Any

__all__ = ["Deadline", "opener"]


class Deadline:
    """A point in time after which a call's connection is shut down.

    Args:
        seconds: Time the call may take in all, from now.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.passed = False
        """Whether the deadline has passed (set by the watchdog or by :meth:`left`)."""
        self._lock = threading.Lock()
        self._watched: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            if time.monotonic() >= self.at:
                self.passed = True
            if self._watched is not None:
                self._watched.close()
                self._watched = None

    def left(self) -> float:
        """Seconds left; raises ``TimeoutError`` when none are."""
        left = self.at - time.monotonic()
        if left <= 0:
            self.passed = True
            raise TimeoutError(f"deadline of {self.seconds:g} s passed")
        return left

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock``'s connection down at the deadline (at once if it has passed).

        The watchdog holds a duplicate of the socket: shutting a duplicate down ends the
        connection for every handle to it, the TLS socket later wrapped around this one too."""
        with self._lock:
            if self._watched is not None:
                self._watched.close()
            self._watched = sock.dup()
            if self.passed:
                self._shut()

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            self._shut()

    def _shut(self) -> None:
        if self._watched is not None:
            with contextlib.suppress(OSError):  # already closed by the peer
                self._watched.shutdown(socket.SHUT_RDWR)

    def connect(
        self,
        address: tuple[str, int],
        timeout: object = None,
        source_address: tuple[str, int] | None = None,
    ) -> socket.socket:
        """``socket.create_connection`` within the deadline (``timeout`` is ignored): each
        address gets only the time left, and the connected socket is watched."""
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, addr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(self.left())
                if source_address:
                    sock.bind(source_address)
                sock.connect(addr)
                self.watch(sock)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
                if isinstance(exc, TimeoutError):
                    break
        raise error or OSError(f"no address found for {host}")


class _Bounded:
    """An ``http.client`` connection that connects through a :class:`Deadline`."""

    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = deadline.connect


class _HTTPConnection(_Bounded, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_Bounded, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPConnection, deadline=self.deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPSConnection, deadline=self.deadline), req)


def opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """``urllib``'s default opener (proxies from the environment, redirects, HTTP errors raised
    as ``HTTPError``) with every connection made within ``deadline``."""
    return urllib.request.build_opener(_HTTPHandler(deadline), _HTTPSHandler(deadline))
