"""Reference tasks: gemm."""
