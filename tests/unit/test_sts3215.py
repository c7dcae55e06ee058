"""The STS3215 emulator speaks Feetech protocol 0 byte for byte (no LeRobot needed)."""

import os
import select
import time

import numpy as np
import pytest

from realgap.bridge.sts3215 import (
    REG,
    STS3215Chain,
    checksum,
    decode_sign_magnitude,
    encode_sign_magnitude,
)


def packet(servo_id, instruction, *params):
    body = [servo_id, len(params) + 2, instruction, *params]
    return bytes([0xFF, 0xFF, *body, checksum(body)])


def exchange(chain, data, expect):
    """Write to the port as a driver would, read ``expect`` bytes of reply."""
    fd = os.open(chain.port, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, data)
        reply = b""
        deadline = time.monotonic() + 1.0
        while len(reply) < expect and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.05)[0]:
                reply += os.read(fd, 256)
        return reply
    finally:
        os.close(fd)


def status_params(reply):
    assert reply[:2] == b"\xff\xff" and checksum(reply[2:-1]) == reply[-1]
    return reply[5:-1]


@pytest.fixture
def chain():
    with STS3215Chain(start_ticks=[1000, 2048, 3000, 2048, 2048, 1500]) as emulator:
        yield emulator


def test_sign_magnitude_round_trip():
    for value in (0, 5, -5, 2047, -2047):
        assert decode_sign_magnitude(encode_sign_magnitude(value, 11), 11) == value
    assert encode_sign_magnitude(-1, 15) == 0x8001
    with pytest.raises(ValueError):
        encode_sign_magnitude(4096, 11)


def test_ping_and_read_model_number(chain):
    assert len(exchange(chain, packet(3, 1), 6)) == 6
    reply = exchange(chain, packet(3, 2, REG["Model_Number"], 2), 8)
    params = status_params(reply)
    assert params[0] | params[1] << 8 == 777


def test_sync_write_moves_and_sync_read_reports(chain):
    torque = b"".join(packet(i, 3, REG["Torque_Enable"], 1) for i in chain.ids)
    assert len(exchange(chain, torque, 6 * 6)) == 36  # one status per write
    goal = encode_sign_magnitude(2500, 15)
    body = [REG["Goal_Position"], 2]
    for servo_id in chain.ids:
        body += [servo_id, goal & 0xFF, goal >> 8]
    assert exchange(chain, packet(0xFE, 0x83, *body), 0) == b""  # sync write: no reply
    time.sleep(1.0)  # the kinematic servos slew at 3,000 ticks/s
    reply = exchange(chain, packet(0xFE, 0x82, REG["Present_Position"], 2, *chain.ids), 8 * 6)
    present = [decode_sign_magnitude(reply[k + 5] | reply[k + 6] << 8, 15) for k in range(0, 48, 8)]
    assert present == [2500] * 6


def test_power_up_goal_zero_and_unplug():
    with STS3215Chain(start_ticks=[2048] * 6, power_up_goal_zero=True) as chain:
        goal = status_params(exchange(chain, packet(1, 2, REG["Goal_Position"], 2), 8))
        present = status_params(exchange(chain, packet(1, 2, REG["Present_Position"], 2), 8))
        assert goal == b"\x00\x00" and present[0] | present[1] << 8 == 2048
        chain.unplug()
        assert exchange(chain, packet(1, 1), 6) == b""


def test_corrupt_packet_is_ignored(chain):
    bad = bytearray(packet(2, 1))
    bad[-1] ^= 0xFF
    assert exchange(chain, bytes(bad) + packet(2, 1), 6)[2] == 2  # only the good ping answers
    assert np.array_equal(chain.present_ticks(), [1000, 2048, 3000, 2048, 2048, 1500])
