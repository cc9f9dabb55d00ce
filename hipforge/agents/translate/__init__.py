"""A deterministic PyTorch -> HIP translator: fx trace, fusion into HIP kernels, KernelBench-format output."""

from hipforge.agents.translate.graph import Untranslatable
from hipforge.agents.translate.params import GenParams
from hipforge.agents.translate.translator import Generated, OfflineTranslator, generate

__all__ = ["GenParams", "Generated", "OfflineTranslator", "Untranslatable", "generate"]
