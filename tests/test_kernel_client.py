"""The reports' kernel client: a wait without a deadline re-polls, a wait with one keeps it.

Oracle: a real ZeroMQ socket pair and jupyter_client's own Session, no helper of the lab's."""
import asyncio
from queue import Empty

import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session


def _pair():
    ctx = zmq.asyncio.Context()
    receiver = ctx.socket(zmq.PAIR)
    port = receiver.bind_to_random_port("tcp://127.0.0.1")
    sender = zmq.Context().socket(zmq.PAIR)
    sender.connect(f"tcp://127.0.0.1:{port}")
    return receiver, sender


@pytest.mark.timeout(30)
def test_a_wait_without_deadline_outlasts_many_polls_and_returns_the_message(monkeypatch):
    """The message arrives after several re-poll periods. Bug caught: a channel that polls once
    with the short period and lets ``Empty`` escape (nbclient would take it for a timeout), or one
    that returns nothing."""
    from mlpl_lab.reporting import kernel_client as kc

    monkeypatch.setattr(kc, "REPOLL_SECONDS", 0.05)

    async def main():
        receiver, sender = _pair()
        session = Session()
        channel = kc.RepollingChannel(receiver, session)

        async def later():
            await asyncio.sleep(0.4)  # eight poll periods
            session.send(sender, "execute_reply", {"status": "ok"})

        task = asyncio.ensure_future(later())
        msg = await asyncio.wait_for(channel.get_msg(), 10)
        await task
        return msg

    msg = asyncio.run(main())
    assert msg["msg_type"] == "execute_reply" and msg["content"] == {"status": "ok"}


@pytest.mark.timeout(30)
def test_a_wait_with_a_deadline_still_times_out(monkeypatch):
    """nbclient's own timeouts keep their meaning. Bug caught: a channel that loops also when
    a deadline is given (the wait would never end; the test's timeout fails it)."""
    from mlpl_lab.reporting import kernel_client as kc

    monkeypatch.setattr(kc, "REPOLL_SECONDS", 0.05)

    async def main():
        receiver, _ = _pair()
        channel = kc.RepollingChannel(receiver, Session())
        with pytest.raises(Empty):
            await channel.get_msg(timeout=0.2)

    asyncio.run(main())


def test_the_report_kernel_config_installs_the_repolling_client():
    """The wiring papermill uses. Bugs caught: a dotted name that does not resolve, a config key
    on a class nbclient does not instantiate (AsyncKernelManager), channels left at the default."""
    from jupyter_client.manager import AsyncKernelManager

    from mlpl_lab.reporting.execute import kernel_config
    from mlpl_lab.reporting.kernel_client import RepollingChannel, RepollingKernelClient

    km = AsyncKernelManager(kernel_name="python3", config=kernel_config())
    client = km.client()
    assert isinstance(client, RepollingKernelClient)
    for name in ("shell", "iopub", "control"):
        assert getattr(client, f"{name}_channel_class") is RepollingChannel
    assert km.transport == "ipc"


@pytest.mark.timeout(30)
def test_a_long_deadline_is_waited_in_short_polls_and_the_message_returned(monkeypatch):
    """The reports give every cell an hours-long deadline. Bug caught: a channel that hands such a
    deadline to one socket poll -- a lost wake-up (see the module) would then stop the report until
    the deadline instead of for one poll period. Oracle: the socket's own poll calls, recorded."""
    from mlpl_lab.reporting import kernel_client as kc

    monkeypatch.setattr(kc, "REPOLL_SECONDS", 0.05)

    class Recording:  # the receiving socket, its poll timeouts (ms) recorded
        def __init__(self, socket):
            self.socket, self.waits = socket, []

        def poll(self, timeout=None, *a, **kw):
            self.waits.append(timeout)
            return self.socket.poll(timeout, *a, **kw)

        def __getattr__(self, name):
            return getattr(self.socket, name)

    async def main():
        receiver, sender = _pair()
        session = Session()
        channel = kc.RepollingChannel(receiver, session)
        channel.socket = recording = Recording(receiver)

        async def later():
            await asyncio.sleep(0.4)
            session.send(sender, "execute_reply", {"status": "ok"})

        try:
            task = asyncio.ensure_future(later())
            msg = await asyncio.wait_for(channel.get_msg(timeout=3600), 10)
            await task
        finally:  # closed here: a socket left to the garbage collector can block its context's term()
            for sock in (receiver, sender):
                sock.close(linger=0)
                sock.context.term()
        return msg, recording.waits

    msg, waits = asyncio.run(main())
    assert msg["content"] == {"status": "ok"}
    assert len(waits) >= 4 and all(w is not None and w <= 50 for w in waits), waits
