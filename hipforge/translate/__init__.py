"""A deterministic PyTorch -> HIP translator: fx trace, fusion into HIP kernels, KernelBench-format output.

Read it in the order a task goes through it (generate.py):
  frontend/  the task's Model traced with torch.fx on the meta device (trace.py), attention and transformer
             layers traced through as the ops they compute (decompose.py)
  ir/        the values the stages pass on (values.py), sizes kept as expressions over tensors (sizes.py),
             a convolution's hyperparameters (conv_spec.py)
  lower/     fx graph -> IR (fx_graph.py), op by op from the tables of torch functions, Tensor methods and
             nn modules (tables.py, tables_more.py, modules.py) and what each op becomes (ops.py, products.py,
             views.py, compare.py, norms.py, losses.py)
  plan.py    the IR cut into fused kernels and ATen calls, and ModelNew's forward over them
  kernels/   one module per kernel family (elementwise, row_reduce, two_stage_reduce, gemm, gemv, conv,
             conv_gemm, conv_epilogue, pool, scan) over the HIP pieces they share (common.py, value_classes.py)
  emit/      the candidate module in KernelBench's HIP format (candidate.py), with ModelNew built by the
             reference's own construction (reference_init.py)
The translator agent (hipforge.agents.translator.offline) is this package's one caller in agents/.
"""

from hipforge.translate.errors import Untranslatable
from hipforge.translate.generate import Generated, generate
from hipforge.translate.params import GenParams

__all__ = ["GenParams", "Generated", "Untranslatable", "generate"]
