"""The kernel client the reports use: every wait for a kernel message re-polls its socket.

nbclient waits for a cell's ``execute_reply`` with ``shell_channel.get_msg(timeout=None)``: one
``await socket.poll()`` with no deadline. On the 2-core machine, with two training processes
busy, notebook 06 under cpu stopped three times at its widget cell (2026-11-23): the kernel had sent
``idle`` and sat in its event loop, papermill sat in its own, and no timeout could fire. Both
kernels (ipykernel 7.4 and 6.31) and both transports (IPC and TCP) did it. A poll with a
deadline re-reads the socket's pending events each time it is called, so :class:`RepollingChannel`
turns a wait without a deadline into short polls in a loop: a message that is already queued is
read on the next turn, and a wait that really has nothing to read waits as long as before.
A wait *with* a deadline is cut the same way, into polls of at most :data:`REPOLL_SECONDS` until
the deadline, and then raises ``Empty`` as before (nbclient's own timeouts keep their meaning):
the reports give every cell a deadline (the profile's ``cell_timeout_s``, hours long), and one
poll of that length would let a lost wake-up stop a report until the deadline.

:func:`~mlpl_lab.reporting.execute.kernel_config` installs it with ``AsyncKernelManager.client_class``.

The lost wake-up's cause, found later: the panels captured their image into an ``Output`` widget,
and for each captured output nbclient's Output mimic sent a ``comm_msg`` on the shell socket
through jupyter_client's ``Session.send``, which uses a synchronous shadow of the asyncio socket and
so consumes its edge-triggered wake-up while nbclient awaits the ``execute_reply`` there. The
panels now set the widget's ``outputs`` instead (:mod:`mlpl_lab.viz.panel_display`), so plain
papermill and nbconvert no longer wait; this client stays as a second guard for the reports.
"""
from __future__ import annotations

from queue import Empty
from time import monotonic
from typing import Any, Dict

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type

#: seconds of one poll inside a wait that has no deadline
REPOLL_SECONDS = 1.0


class RepollingChannel(AsyncZMQSocketChannel):
    """``get_msg(timeout)`` as a loop of polls of at most :data:`REPOLL_SECONDS`; ``Empty`` once
    ``timeout`` seconds have passed (never, for ``timeout=None``)."""

    async def get_msg(self, timeout: float | None = None) -> Dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            left = REPOLL_SECONDS if deadline is None else max(0.0, deadline - monotonic())
            try:
                return await super().get_msg(timeout=min(REPOLL_SECONDS, left))
            except Empty:
                if deadline is not None and monotonic() >= deadline:
                    raise


class RepollingKernelClient(AsyncKernelClient):
    """nbclient's async kernel client with :class:`RepollingChannel` for shell, iopub and control."""

    shell_channel_class = Type(RepollingChannel)  # type: ignore[assignment]
    iopub_channel_class = Type(RepollingChannel)  # type: ignore[assignment]
    control_channel_class = Type(RepollingChannel)  # type: ignore[assignment]
