#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the fuzz corpus (native/fuzz/corpus/<target>/seed-*).

The wire format is spelled out here independently of the Rust encoders (big-endian; see the frame
table in native/src/core/protocol.rs). Inputs found by fuzzing are added next to the seeds under
other names (see the README section "Fuzzing"); rerunning this script rewrites only seed-* files.
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = bytes([0x89]) + b"hNIO\r\n" + bytes([0x1A])
HELLO, ADDR, DATA, SWITCH, FIN, CREDIT, AUTH, RAW = 1, 2, 3, 4, 5, 6, 7, 8
CLIENT, SERVER = 1, 2
CAP_UCX, CAP_AUTH = 1, 2
MAX_FRAME = 64 * 1024


def header(kind, length, flags=0, reserved=0):
    return struct.pack(">BBHI", kind, flags, reserved, length)


def frame(kind, payload=b""):
    return header(kind, len(payload)) + payload


def hello(version=3, min_version=3, caps=CAP_UCX, role=CLIENT, nonce=0x5EED_0000_0000_0003, host=0x5EED_0000_0000_0001,
          namespaces=0x5EED_0000_0000_0004, process=0x5EED_0000_0000_0002, reserved=b"\x00\x00\x00"):
    return (struct.pack(">HHIB", version, min_version, caps, role) + reserved
            + struct.pack(">QQQQ", nonce, host, namespaces, process))


def addr(tag=9, slots=8, slot_len=16384, max_message=1 << 20, address=b"\x01\x02\x03", length=None):
    if length is None:
        length = len(address)
    return struct.pack(">IIIII", tag, slots, slot_len, max_message, length) + address


def u64(value):
    return struct.pack(">Q", value)


def write(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


def main():
    # frame_header: each type at and just beyond its bounds, non-zero flags/reserved, unknown types.
    bounds = {HELLO: (44, 44), ADDR: (21, MAX_FRAME), DATA: (1, MAX_FRAME), SWITCH: (0, 0), FIN: (8, 8),
              CREDIT: (8, 8), AUTH: (16, 32), RAW: (0, 0)}
    for kind, (low, high) in bounds.items():
        write("frame_header", f"t{kind}-min", header(kind, low))
        write("frame_header", f"t{kind}-max", header(kind, high))
        if low > 0:
            write("frame_header", f"t{kind}-below", header(kind, low - 1))
        write("frame_header", f"t{kind}-above", header(kind, high + 1))
    write("frame_header", "flags", header(HELLO, 44, flags=1))
    write("frame_header", "reserved", header(DATA, 100, reserved=0x0100))
    write("frame_header", "type0", header(0, 8))
    write("frame_header", "type9", header(9, 0))
    write("frame_header", "type255-huge", header(255, 0xFFFFFFFF))
    write("frame_header", "data-huge", header(DATA, 0xFFFFFFFF))

    # hello
    write("hello", "ours-ucx", hello())
    write("hello", "ours-tcp", hello(caps=0))
    write("hello", "ours-auth", hello(caps=CAP_UCX | CAP_AUTH))
    write("hello", "unknown-caps", hello(caps=0xFFFFFFFF))
    write("hello", "wide-range", hello(version=9, min_version=1))
    write("hello", "future", hello(version=7, min_version=5))
    write("hello", "inverted", hello(version=2, min_version=3))
    write("hello", "version1", hello(version=1, min_version=1))
    write("hello", "version2-24-bytes", struct.pack(">HHIQQ", 2, 2, CAP_UCX, 1, 2))
    write("hello", "server", hello(role=SERVER))
    write("hello", "role0", hello(role=0))
    write("hello", "role3", hello(role=3))
    write("hello", "reserved", hello(reserved=b"\x00\x01\x00"))
    write("hello", "version0", hello(version=0, min_version=0))
    write("hello", "max", hello(version=0xFFFF, min_version=0xFFFF))
    write("hello", "short", hello()[:43])
    write("hello", "long", hello() + b"\x00")
    write("hello", "empty", b"")

    # addr
    write("addr", "typical", addr())
    write("addr", "minimal", addr(tag=1, slots=1, slot_len=256, max_message=256, address=b"\x00"))
    write("addr", "maximal", addr(tag=0xFFFFFFFF, slots=4096, slot_len=16 << 20, max_message=1 << 30,
                                  address=bytes(range(256)) * 4))
    write("addr", "tag0", addr(tag=0))
    write("addr", "slots0", addr(slots=0))
    write("addr", "slots-above", addr(slots=4097))
    write("addr", "slot-len-below", addr(slot_len=255))
    write("addr", "slot-len-above", addr(slot_len=(16 << 20) + 1, max_message=1 << 30))
    write("addr", "max-message-below-slot", addr(max_message=16383))
    write("addr", "max-message-above", addr(max_message=(1 << 30) + 1))
    write("addr", "length-short", addr(length=2))
    write("addr", "length-long", addr(length=4))
    write("addr", "length-huge", addr(length=0xFFFFFFFF))
    write("addr", "no-address", addr(address=b""))
    write("addr", "fields-only", addr()[:19])

    # control_frames: [context: bit 0 = this side sent ADDR, bit 1 = this side is the client (the
    # peer's HELLO says server)][frames after the magic]
    handshake = frame(HELLO, hello()) + frame(ADDR, addr())
    sequences = {
        "tcp-only": (0, frame(HELLO, hello(caps=0)) + frame(DATA, b"hello") + frame(DATA, b"world") + frame(FIN, u64(0))),
        "upgrade": (1, handshake + frame(DATA, b"early") + frame(SWITCH) + frame(FIN, u64(12345))),
        "switch-without-link": (0, handshake + frame(SWITCH)),
        "second-hello": (0, frame(HELLO, hello()) + frame(HELLO, hello())),
        "addr-before-hello": (0, frame(ADDR, addr()) + frame(HELLO, hello())),
        "second-addr": (1, handshake + frame(ADDR, addr())),
        "bad-addr": (1, frame(HELLO, hello()) + frame(ADDR, addr(slots=0))),
        "bad-hello": (0, frame(HELLO, hello(version=7, min_version=5))),
        "auth-hello": (0, frame(HELLO, hello(caps=CAP_UCX | CAP_AUTH))),
        "auth-frame": (0, frame(HELLO, hello()) + frame(AUTH, bytes(16))),
        "credit": (0, frame(HELLO, hello()) + frame(CREDIT, u64(3))),
        "data-after-fin": (0, frame(HELLO, hello()) + frame(FIN, u64(0)) + frame(DATA, b"late")),
        "data-after-switch": (1, handshake + frame(SWITCH) + frame(DATA, b"late")),
        "second-switch": (1, handshake + frame(SWITCH) + frame(SWITCH)),
        "second-fin": (0, frame(FIN, u64(0)) + frame(FIN, u64(0))),
        "fin-counts-without-switch": (0, frame(HELLO, hello()) + frame(FIN, u64(1))),
        "frames-after-fin": (0, frame(FIN, u64(0)) + frame(HELLO, hello()) + frame(ADDR, addr())),
        "data-without-hello": (0, frame(DATA, b"no hello") + frame(FIN, u64(0))),
        "truncated-data": (0, frame(HELLO, hello()) + frame(DATA, b"0123456789")[:12]),
        "truncated-header": (0, frame(HELLO, hello()) + header(DATA, 4)[:5]),
        "truncated-addr": (1, frame(HELLO, hello()) + frame(ADDR, addr())[:20]),
        "flags": (0, frame(HELLO, hello()) + header(DATA, 1, flags=0x80) + b"x"),
        "unknown-type": (0, header(9, 0)),
        "empty": (0, b""),
        "raw": (0, frame(HELLO, hello()) + frame(DATA, b"framed ") + frame(RAW) + b"then raw bytes"),
        "raw-first": (0, frame(RAW) + b"raw from the start"),
        "raw-after-switch": (1, handshake + frame(SWITCH) + frame(RAW) + b"x"),
        "second-raw": (0, frame(RAW) + frame(RAW)),
        "raw-after-fin": (0, frame(FIN, u64(0)) + frame(RAW) + b"x"),
        "reflected": (0, frame(HELLO, hello(role=SERVER)) + frame(ADDR, addr(slots=0)) + frame(AUTH, bytes(3))
                      + frame(DATA, b"echo") + frame(RAW) + b"echoed raw"),
        "server-hello": (2, frame(HELLO, hello(role=SERVER)) + frame(ADDR, addr()) + frame(DATA, b"hi") + frame(FIN, u64(0))),
        "client-sees-client-hello": (2, frame(HELLO, hello(role=CLIENT)) + frame(DATA, b"mine") + frame(FIN, u64(0))),
        "old-version": (0, frame(HELLO, hello(version=2, min_version=2)) + frame(DATA, b"x") + frame(RAW) + b"y"),
        "no-ucx": (0, frame(HELLO, hello(caps=0)) + frame(RAW) + b"plain"),
    }
    for name, (context, data) in sequences.items():
        write("control_frames", name, bytes([context]) + data)

    # tags_credits: [slots][ops...] (op % 6: 0 send, 1 consume, 2 genuine report, 3 forged tag,
    # 4 credit message, 5 large counters)
    write("tags_credits", "send-consume-report", bytes([8, 0, 8, 1, 3, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]))
    write("tags_credits", "stale-report", bytes([4, 0, 4, 1, 1, 1, 2, 2, 0] + [0] * 9 + [2, 1] + [0] * 9))
    write("tags_credits", "forged-ahead", bytes([8, 0, 8, 3]) + struct.pack(">Q", (7 << 32) | 200))
    write("tags_credits", "forged-behind", bytes([8, 0, 8, 1, 8, 2, 0] + [0] * 9 + [3]) + struct.pack(">Q", (1 << 30) - 1))
    write("tags_credits", "forged-kind3", bytes([2, 3]) + struct.pack(">Q", (0xFFFFFFFF << 32) | (3 << 30) | 5))
    write("tags_credits", "credit-message", bytes([1, 4, 12]) + struct.pack(">IQ", 42, 1 << 40) + bytes([4, 11]) + bytes(11))
    write("tags_credits", "large-counters", bytes([1, 5]) + struct.pack(">QQQ", (1 << 62) + 12345, (1 << 29) - 1, 1 << 29))
    write("tags_credits", "wrap", bytes([1, 5]) + struct.pack(">QQQ", (1 << 30) - 3, 10, 5))

    # stream: [config: bit 7 = the raw peer speaks hadroNIO (urgent handshake, then the magic
    # and the bytes after its mark), bit 6 = the Conn is the client, bit 5 = interleave writes,
    # bits 0-4 seed the piece sizes][bytes]
    for name, (context, data) in sequences.items():
        if context & 1 == 0:
            client = 0x40 if context & 2 else 0
            write("stream", "server-" + name if not client else "client-" + name, bytes([0x80 | client | (len(data) % 32)]) + data)
    server_hello = frame(HELLO, hello(role=SERVER))
    write("stream", "client-tcp-only", bytes([0xC0]) + frame(HELLO, hello(role=SERVER, caps=0)) + frame(DATA, b"x") + frame(FIN, u64(0)))
    write("stream", "client-writes", bytes([0xE5]) + server_hello + frame(DATA, b"hello") + frame(FIN, u64(0)))
    write("stream", "server-writes", bytes([0xA7]) + sequences["tcp-only"][1])
    write("stream", "client-raw", bytes([0xC3]) + server_hello + frame(RAW) + b"raw bytes after RAW")
    write("stream", "plain-server-banner", bytes([0x40]) + b"SSH-2.0-OpenSSH_9.2\r\n")
    write("stream", "plain-server-magic-prefix", bytes([0x40]) + MAGIC[:5])
    write("stream", "plain-client-http", bytes([0x03]) + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    write("stream", "plain-empty", bytes([0x00]))
    write("stream", "plain-one-byte", bytes([0x01]) + b"\x00")
    write("stream", "plain-client-magic", bytes([0x02]) + MAGIC + frame(HELLO, hello()))
    write("stream", "magic-only", bytes([0x80]))
    write("stream", "not-magic", bytes([0x81]) + b"GET / HTTP/1.1\r\n")
    write("stream", "big-data", bytes([0x91]) + frame(HELLO, hello()) + frame(DATA, bytes(range(256)) * 12)
          + frame(DATA, b"tail") + frame(FIN, u64(0)))

    # negotiation: [seed: 8][config][client length / 97][server length / 89]; config bits 0-1
    # pairing (both hadroNIO, plain client, plain server, plain echo server), 2 client secret,
    # 3 server secret, 4 secrets differ, 5 probes lost, 6 client may not upgrade, 7 server may not
    def negotiation(name, seed, config, client, server):
        write("negotiation", name, struct.pack(">QBBB", seed, config, client, server))
    negotiation("upgrade", 1, 0, 200, 150)
    negotiation("upgrade-small", 2, 0, 1, 1)
    negotiation("upgrade-empty", 3, 0, 0, 0)
    negotiation("probe-lost", 4, 32, 100, 100)
    negotiation("secrets", 5, 4 | 8, 80, 80)
    negotiation("secrets-differ", 6, 4 | 8 | 16, 80, 80)
    negotiation("secret-server-only", 7, 8, 50, 50)
    negotiation("secret-client-only", 8, 4, 50, 50)
    negotiation("client-no-upgrade", 9, 64, 100, 100)
    negotiation("server-no-upgrade", 10, 128 | 4, 100, 100)
    negotiation("plain-client", 11, 1, 120, 60)
    negotiation("plain-server", 12, 2, 120, 60)
    negotiation("plain-server-secret", 13, 2 | 4, 60, 30)
    negotiation("plain-echo", 14, 3, 255, 0)
    negotiation("plain-echo-secret", 15, 3 | 4, 30, 0)

if __name__ == "__main__":
    main()
