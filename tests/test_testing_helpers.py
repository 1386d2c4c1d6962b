import pytest
from hypothesis import given
from hypothesis import strategies as st

from loomctx.testing import HashingEmbedder, WordCounter, check_truncate
from loomctx.tokens.protocol import TokenCounter


def test_word_counter_is_a_token_counter():
    c = WordCounter()
    assert isinstance(c, TokenCounter)
    assert c.count("a  b\nc") == 3
    assert c.truncate("one two three", 2) == "one two "  # maximal: the space fits too


@given(st.text(), st.integers(0, 20))
def test_word_counter_truncate_is_a_fitting_prefix(text, n):
    check_truncate(WordCounter(), text, n)


def test_check_truncate_catches_a_broken_counter():
    class Greedy(WordCounter):
        def truncate(self, text, max_tokens):
            return text  # ignores the limit

    with pytest.raises(AssertionError):
        check_truncate(Greedy(), "one two three", 1)


def test_hashing_embedder_is_exported():
    assert HashingEmbedder().embed(["x"]).shape[0] == 1


def test_wait_healthy_returns_once_a_child_server_answers_and_fails_when_it_dies() -> None:
    import subprocess
    import sys

    from loomctx.servers import ServerError, free_port
    from loomctx.testing.processes import wait_healthy

    port = free_port()
    serving = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                                "127.0.0.1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", serving, timeout=30)
        assert serving.poll() is None
    finally:
        serving.terminate()
        serving.wait(timeout=10)
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(ServerError, match="exited with 3"):
        wait_healthy(f"http://127.0.0.1:{free_port()}/", dead, timeout=30)


def test_the_fake_server_is_silent_when_a_client_resets_its_connection(capfd) -> None:
    """A client that resets its connection mid-request (how a client that got its error often
    ends) leaves no traceback on stderr: a test that reads stderr sees only its own output."""
    import socket
    import struct
    import threading
    import time

    from loomctx.testing import FakeModelServer

    with FakeModelServer() as server:
        host, port = server.url.split("//")[1].split("/")[0].split(":")
        for _ in range(3):
            s = socket.create_connection((host, int(port)))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 1000\r\n\r\n{\"model\"")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # a reset: the server's read of the rest of the body fails
        # one more request, answered: the server accepted (and gave a thread to) every reset
        # connection before it, as it accepts in order
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert s.recv(64).startswith(b"HTTP/1.")
        deadline = time.monotonic() + 10
        while any("process_request" in t.name for t in threading.enumerate()):
            assert time.monotonic() < deadline, "the handler threads never saw the reset"
            time.sleep(0.01)
    assert "Exception occurred" not in capfd.readouterr().err
