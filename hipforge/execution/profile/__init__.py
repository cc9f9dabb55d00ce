"""Hardware-aware feedback: where a candidate's forward time goes and how close it runs to the device's roofs.

A profiler (Nsight Compute on NVIDIA, rocprofv3 on ROCm) measures it per kernel when one is installed;
without one the same signals are estimated from the task's FLOPs and bytes and labelled as estimates.
"""
