"""LangChain: a chain that sends the model a budgeted context instead of the whole history.

``build_context`` adds each new user message to a loomctx session and returns the built turn
(system prompt, the history window, the input last) as LangChain messages; ``remember_reply``
stores the model's answer. A tiny fake chat model stands in for a real one.

Run: python examples/langchain_chain.py   (needs: pip install 'loomctx[langchain]')
"""

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from loomctx import HashingEmbedder, Session
from loomctx.adapters.langchain import build_context, remember_reply


class EchoModel(BaseChatModel):
    """Answers with how many messages it was sent (stands in for a real chat model)."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        reply = AIMessage(f"I was sent {len(messages)} messages.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


session = Session(system_prompt="You are a shipping assistant. Answer briefly.",
                  embedder=HashingEmbedder())
chain = build_context(session, max_tokens=250) | EchoModel() | remember_reply(session)

for n in range(10):
    reply = chain.invoke(f"Question {n}: where is shipment SHP-{40000 + n} right now, and why?")
    print(f"turn {n}: {reply.content}")

stored = len(session.memory.history.items)
last = session.build_sync(max_tokens=250)
print(f"stored {stored} messages; the last request held {len(last.messages)} of them "
      f"in {last.tokens} tokens (budget 250)")
assert stored == 20 and len(last.messages) < stored and last.tokens <= 250
