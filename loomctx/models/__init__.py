"""Model clients: the :class:`ChatModel` protocol and its implementations.

- :class:`OpenAIChatModel`: Chat Completions, for OpenAI and OpenAI-compatible local servers
  (vLLM, llama.cpp server, Ollama).
- :class:`AnthropicChatModel`: Messages, its replies converted to the OpenAI message shape.
- :class:`WireChatModel`: either of them, or any wire format registered with
  :func:`loomctx.providers.register`, over its HTTP API; every reply is read by the format's
  provider.
- :class:`Backoff`: how they wait between retries (429, 5xx, timeouts): :mod:`loomctx.retry`.
"""

from loomctx.models.anthropic import AnthropicChatModel
from loomctx.models.openai import OpenAIChatModel
from loomctx.models.protocol import ChatModel, ModelResponse, StreamEvent, Usage
from loomctx.models.wire import WireChatModel
from loomctx.retry import Backoff

__all__ = ["AnthropicChatModel", "Backoff", "ChatModel", "ModelResponse", "OpenAIChatModel",
           "StreamEvent", "Usage", "WireChatModel"]
