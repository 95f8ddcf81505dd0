"""Kernel TCP knobs the video harness uses: the congestion control per socket and the RTT."""

from __future__ import annotations

import socket
import struct

#: Offset of tcpi_rtt (µs) in Linux's struct tcp_info: 8 one-byte fields, then 15 u32 before it.
TCPI_RTT_OFFSET = 8 + 15 * 4
TCP_INFO_LEN = 104


def available() -> list[str]:
    """Congestion controls the running kernel offers."""
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return f.read().split()
    except OSError:
        return []


def set_cc(sock: socket.socket, cc: str) -> None:
    """Select ``cc`` for ``sock``; the error lists what the kernel offers."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    except OSError as e:
        raise ValueError(
            f"congestion control {cc!r} not available ({e.strerror}); the kernel offers: "
            f"{' '.join(available()) or 'unknown'} (leocc needs `leocc kernel load`)"
        ) from None


def get_cc(sock: socket.socket) -> str:
    """The congestion control ``sock`` uses."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0", 1)[0].decode()


def rtt_ms(sock: socket.socket) -> float:
    """The kernel's smoothed RTT of ``sock`` in ms (0 if unknown)."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    except OSError:
        return 0.0
    if len(info) < TCPI_RTT_OFFSET + 4:
        return 0.0
    return struct.unpack_from("I", info, TCPI_RTT_OFFSET)[0] / 1000.0
