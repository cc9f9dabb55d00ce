"""hipforge: teach language models to write fast HIP kernels for AMD GPUs."""
