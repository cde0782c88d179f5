"""Executing the notebooks as reports: one notebook through papermill to HTML (execute), the
notebook header and records (report), the kernel started ahead (next_kernel), the re-polling
kernel client (kernel_client) and the protocol audit of executed notebooks (audit). Top layer:
may import anything below.
"""
