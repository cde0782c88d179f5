"""The kernel client the reports use: every wait for a kernel message re-polls its socket.

nbclient waits for a cell's ``execute_reply`` with ``shell_channel.get_msg(timeout=None)``: one
``await socket.poll()`` with no deadline. On the 2-core machine, with two training processes
busy, notebook 06 under cpu stopped three times at its widget cell (2026-11-23): the kernel had sent
``idle`` and sat in its event loop, papermill sat in its own, and no timeout could fire. Both
kernels (ipykernel 7.4 and 6.31) and both transports (IPC and TCP) did it. A poll with a
deadline re-reads the socket's pending events each time it is called, so :class:`RepollingChannel`
turns a wait without a deadline into short polls in a loop: a message that is already queued is
read on the next turn, and a wait that really has nothing to read waits as long as before.
A wait *with* a deadline is passed on unchanged (nbclient's own timeouts keep their meaning).

:func:`kernel_config` (``mlpl_lab.cli``) installs it with ``AsyncKernelManager.client_class``.
"""
from __future__ import annotations

from queue import Empty
from typing import Any, Dict

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type

#: seconds of one poll inside a wait that has no deadline
REPOLL_SECONDS = 1.0


class RepollingChannel(AsyncZMQSocketChannel):
    """``get_msg(timeout=None)`` as a loop of polls of :data:`REPOLL_SECONDS`."""

    async def get_msg(self, timeout: float | None = None) -> Dict[str, Any]:  # type: ignore[override]
        if timeout is not None:
            return await super().get_msg(timeout=timeout)
        while True:
            try:
                return await super().get_msg(timeout=REPOLL_SECONDS)
            except Empty:
                continue


class RepollingKernelClient(AsyncKernelClient):
    """nbclient's async kernel client with :class:`RepollingChannel` for shell, iopub and control."""

    shell_channel_class = Type(RepollingChannel)  # type: ignore[assignment]
    iopub_channel_class = Type(RepollingChannel)  # type: ignore[assignment]
    control_channel_class = Type(RepollingChannel)  # type: ignore[assignment]
