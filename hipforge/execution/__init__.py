"""Sandboxed compile, correctness and timing of HIP candidates on rocm, cuda and cpu backends."""
