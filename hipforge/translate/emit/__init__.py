"""Emitters: the candidate module in KernelBench's HIP format, around the reference's own construction."""
