"""Lowering: the traced fx graph to IR, one table entry per torch function, Tensor method or nn module."""
