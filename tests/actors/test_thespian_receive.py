"""The length of a Thespian message is read from its peeked prefix, and a message is then read
whole in one recv, never past its end (the connection may carry an acknowledgement next)."""

from __future__ import annotations

import pickle
import socket

from brain.actors.thespian.receive import PEEK_BYTES, message_length, read_messages_whole
from tests.support.thespian_scenarios import run_scenario


def framed(obj: object) -> bytes:
    data = pickle.dumps(obj)
    return f"{len(data)}>".encode() + data


def test_message_length_counts_the_prefix_and_the_pickle() -> None:
    frame = framed(("a", "b" * 1000))
    assert message_length(frame[:PEEK_BYTES]) == len(frame)
    assert message_length(b"12") is None  # the prefix has not arrived whole
    assert message_length(b">") is None
    assert message_length(b"x1>") is None


def test_an_incoming_reads_one_whole_message_and_leaves_what_follows() -> None:
    from thespian.system.transport.TCPTransport import TCPIncomingPersistent

    read_messages_whole()
    left, right = socket.socketpair()
    try:
        message, after = framed(("hello", "x" * 30_000)), framed("ACK")
        left.sendall(message + after)
        incoming = TCPIncomingPersistent(None, right)
        size = incoming.remainingSize()
        assert size == len(message)
        incoming.addData(right.recv(size))
        assert incoming.receivedAllData()
        assert incoming.data == (("hello", "x" * 30_000), b"")
        assert right.recv(100) == after  # the next bytes were not consumed
    finally:
        left.close()
        right.close()


def test_a_member_of_several_hosts_leaves_gevent_sockets_to_thespian() -> None:
    """In a convention member a web worker's gevent socket is read as Thespian reads it: the
    first recv asks for Thespian's 20 bytes, not the whole message."""
    import gevent.socket
    from thespian.system.transport.TCPTransport import TCPIncomingPersistent

    left, right = socket.socketpair()
    wrapped = gevent.socket.socket(fileno=right.detach())
    try:
        message = framed(("hello", "x" * 30_000))
        left.sendall(message)
        read_messages_whole(skip_gevent=True)
        assert TCPIncomingPersistent(None, wrapped).remainingSize() < len(message)
        read_messages_whole(skip_gevent=False)
        assert TCPIncomingPersistent(None, wrapped).remainingSize() == len(message)
    finally:
        read_messages_whole(skip_gevent=False)  # this process's setting, as the suite has it
        left.close()
        wrapped.close()


def test_unpatched_thespian_reads_a_message_in_two_passes_of_its_loop() -> None:
    """The symptom (docs/thespian-patches.md): the first read asks for 20 bytes, the length
    prefix and a sliver of the pickle; the rest waits for the next pass."""
    assert run_scenario("receive", patched=False) == {"arrived": True, "reads": 2}


def test_with_the_patch_a_message_is_read_in_one_pass() -> None:
    assert run_scenario("receive", patched=True) == {"arrived": True, "reads": 1}


def test_an_acknowledgement_is_read_whole_and_what_follows_is_left() -> None:
    """The buffer an acknowledgement is read into asks for the whole frame once its prefix has
    arrived; a message the peer sent next on the same connection stays unread."""
    from brain.actors.thespian.receive import WholeAckBuffer

    read_messages_whole()
    left, right = socket.socketpair()
    try:
        ack, after = framed("ACK"), framed(("next", "y" * 500))
        left.sendall(ack + after)
        buffer = WholeAckBuffer(pickle.loads, right)
        size = buffer.remainingAmount()
        assert size == len(ack)
        buffer.addMore(right.recv(size))
        assert buffer.isDone()
        assert buffer.completed() == ("ACK", b"")
        assert right.recv(1000) == after
    finally:
        left.close()
        right.close()


def test_an_acknowledgement_not_yet_arrived_is_asked_for_as_thespian_asks() -> None:
    """Nothing (or half a length prefix) arrived: Thespian's own 20 bytes are asked for."""
    from brain.actors.thespian.receive import WholeAckBuffer

    left, right = socket.socketpair()
    try:
        assert WholeAckBuffer(pickle.loads, right).remainingAmount() == 20
        left.sendall(b"5")
        assert WholeAckBuffer(pickle.loads, right).remainingAmount() == 20
        assert WholeAckBuffer(pickle.loads, None).remainingAmount() == 20
    finally:
        left.close()
        right.close()


def test_unpatched_thespian_waits_two_passes_more_for_an_acknowledgement() -> None:
    """The symptom: a message sent whole waits a pass before its acknowledgement is awaited,
    and the acknowledgement is read in two passes (each pass also steps the transmit for its
    timeouts: five steps where one does)."""
    seen = run_scenario("acknowledge", patched=False)
    assert seen["arrived"] and seen["status"] == seen["big_status"] == "+SENDSTS_SENT"
    assert seen["ack_reads"] == 2
    assert seen["steps"] >= 4


def test_with_the_patch_a_sent_message_is_acknowledged_in_one_pass() -> None:
    seen = run_scenario("acknowledge", patched=True)
    assert seen["arrived"] and seen["status"] == seen["big_status"] == "+SENDSTS_SENT"
    assert seen["ack_reads"] == 1
    assert seen["steps"] <= 2  # one; two if a slow machine made the sender's run time out


def test_a_member_of_several_hosts_leaves_gevent_sockets_their_passes() -> None:
    """In a convention member a web worker's gevent socket is neither peeked for an
    acknowledgement nor stepped on at once: Thespian's own passes, as its reading."""
    import gevent.socket

    from brain.actors.thespian.receive import WholeAckBuffer, _left_to_thespian

    left, right = socket.socketpair()
    wrapped = gevent.socket.socket(fileno=right.detach())
    try:
        left.sendall(framed("ACK"))
        read_messages_whole(skip_gevent=True)
        assert _left_to_thespian(wrapped) and not _left_to_thespian(left)
        assert WholeAckBuffer(pickle.loads, wrapped).remainingAmount() == 20
        read_messages_whole(skip_gevent=False)
        assert not _left_to_thespian(wrapped)
        assert WholeAckBuffer(pickle.loads, wrapped).remainingAmount() == len(framed("ACK"))
    finally:
        read_messages_whole(skip_gevent=False)  # this process's setting, as the suite has it
        left.close()
        wrapped.close()
