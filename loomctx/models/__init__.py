"""Model clients: the :class:`ChatModel` protocol and its implementations.

- :class:`OpenAIChatModel`: Chat Completions, for OpenAI and OpenAI-compatible local servers
  (vLLM, llama.cpp server, Ollama).
- :class:`AnthropicChatModel`: Messages, its replies converted to the OpenAI message shape.
- :class:`Backoff`: how both wait between retries (429, 5xx, timeouts).
"""

from loomctx.models._http import Backoff
from loomctx.models.anthropic import AnthropicChatModel
from loomctx.models.openai import OpenAIChatModel
from loomctx.models.protocol import ChatModel, ModelResponse, StreamEvent, Usage

__all__ = ["AnthropicChatModel", "Backoff", "ChatModel", "ModelResponse", "OpenAIChatModel",
           "StreamEvent", "Usage"]
