"""Kernel families: each module builds the HIP source of one kind of kernel (and, for pool and scan, the IR
value that asks for it), over the pieces in common.py."""
