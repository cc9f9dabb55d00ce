"""KernelBench: loading problems, scoring (fast_p, geomean) and plots."""
