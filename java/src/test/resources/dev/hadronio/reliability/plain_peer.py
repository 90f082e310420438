"""A plain TCP peer (Python's socket module, no hadroNIO) for PlainPeerTest.

  plain_peer.py sink             accept one connection, read to its end, answer "<bytes> <crc32>\\n"
  plain_peer.py echo             accept one connection, echo everything until its end
  plain_peer.py banner           accept one connection, say "220 plain banner\\r\\n" first, then echo
  plain_peer.py say-and-close    accept one connection, wait 200 ms, say "421 plain goodbye\\r\\n" and
                                 close without reading (unread bytes would make its kernel reset)
  plain_peer.py client PORT N    connect, send N pseudo-random bytes (seed 7) while reading the echo
                                 back, check it, print "OK <bytes> <crc32>"
  plain_peer.py banner-client PORT
                                 connect, read the server's first line, print
                                 "BANNER <millis from connect> <line>", then say "ping\\n" and
                                 print "REPLY <line>"

Servers listen on 127.0.0.1 and print "PORT <port>" first. Failures print "FAIL <reason>" and
exit with status 1.
"""

import random
import socket
import sys
import threading
import time
import zlib

BANNER = b"220 plain banner\r\n"
GOODBYE = b"421 plain goodbye\r\n"


def listen():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    print("PORT", server.getsockname()[1], flush=True)
    connection, _ = server.accept()
    server.close()
    return connection


def echo(connection):
    while True:
        data = connection.recv(1 << 16)
        if not data:
            break
        connection.sendall(data)
    connection.shutdown(socket.SHUT_WR)
    connection.close()


def sink(connection):
    total, crc = 0, 0
    while True:
        data = connection.recv(1 << 16)
        if not data:
            break
        total += len(data)
        crc = zlib.crc32(data, crc)
    connection.sendall(("%d %d\n" % (total, crc)).encode())
    connection.close()


def pattern(length):
    return random.Random(7).randbytes(length)


def client(port, length):
    data = pattern(length)
    connection = socket.create_connection(("127.0.0.1", port))

    def send():
        connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send)
    sender.start()
    received = bytearray()
    while True:
        chunk = connection.recv(1 << 16)
        if not chunk:
            break
        received += chunk
    sender.join()
    if bytes(received) != data:
        print("FAIL echoed %d bytes, sent %d; first difference at %d" % (
            len(received), len(data), next((i for i, (a, b) in enumerate(zip(received, data)) if a != b),
                                           min(len(received), len(data)))), flush=True)
        sys.exit(1)
    print("OK %d %d" % (len(data), zlib.crc32(data)), flush=True)


def read_line(connection):
    line = bytearray()
    while not line.endswith(b"\n"):
        chunk = connection.recv(1)
        if not chunk:
            break
        line += chunk
    return line.decode(errors="replace").strip()


def banner_client(port):
    start = time.monotonic()
    connection = socket.create_connection(("127.0.0.1", port))
    connection.settimeout(30)
    line = read_line(connection)
    print("BANNER %.3f %s" % ((time.monotonic() - start) * 1000, line), flush=True)
    connection.sendall(b"ping\n")
    print("REPLY", read_line(connection), flush=True)
    connection.close()


def main():
    mode = sys.argv[1]
    if mode == "sink":
        sink(listen())
    elif mode == "echo":
        echo(listen())
    elif mode == "banner":
        connection = listen()
        connection.sendall(BANNER)
        echo(connection)
    elif mode == "say-and-close":
        connection = listen()
        time.sleep(0.2)
        connection.sendall(GOODBYE)
        connection.close()
    elif mode == "client":
        client(int(sys.argv[2]), int(sys.argv[3]))
    elif mode == "banner-client":
        banner_client(int(sys.argv[2]))
    else:
        print("FAIL unknown mode", mode, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
