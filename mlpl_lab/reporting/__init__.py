"""Executing the notebooks as reports: papermill execution and the notebook header
(report), the kernel started ahead (next_kernel), the re-polling kernel client
(kernel_client) and the protocol audit of executed notebooks (audit). Top layer:
may import anything below.
"""
