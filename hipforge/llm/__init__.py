"""One interface to every model the agents use: Gemini, an OpenAI-compatible server, a local
transformers checkpoint, or a deterministic offline function; with retries, rate limits, a response
cache (read_write / replay / off) and per-call accounting in the warehouse's llm_calls table.

Nothing heavy is imported here: google-genai, httpx, transformers and torch load on first use.
"""

from hipforge.llm.base import RetryPolicy, TokenBucket
from hipforge.llm.cache import CacheMode, ResponseCache, cache_key, default_cache_dir
from hipforge.llm.calllog import CallLog
from hipforge.llm.client import LLMClient, acomplete_many, complete_many
from hipforge.llm.cost import DEFAULT_PRICES, cost_usd
from hipforge.llm.errors import (
    CacheMiss,
    LLMConfigError,
    LLMError,
    LLMRequestError,
    LLMRetriesExhausted,
    TransientLLMError,
)
from hipforge.llm.extract import extract_code
from hipforge.llm.factory import make_provider
from hipforge.llm.gemini import GeminiProvider
from hipforge.llm.local import TransformersProvider
from hipforge.llm.offline import OfflineProvider
from hipforge.llm.openai_compat import OpenAICompatibleProvider
from hipforge.llm.request import LLMProvider, LLMRequest, LLMResponse, Message

__all__ = [
    "CacheMiss",
    "CacheMode",
    "CallLog",
    "DEFAULT_PRICES",
    "GeminiProvider",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LLMProvider",
    "LLMRequest",
    "LLMRequestError",
    "LLMResponse",
    "LLMRetriesExhausted",
    "Message",
    "OfflineProvider",
    "OpenAICompatibleProvider",
    "ResponseCache",
    "RetryPolicy",
    "TokenBucket",
    "TransformersProvider",
    "TransientLLMError",
    "acomplete_many",
    "cache_key",
    "complete_many",
    "cost_usd",
    "default_cache_dir",
    "extract_code",
    "make_provider",
]
