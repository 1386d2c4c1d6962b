"""LlamaIndex: a chat engine whose memory is a loomctx session, so each call gets a build.

``LoomctxMemory.get()`` builds the context (system prompt, history window, retrieved memory,
the input last) within a token budget, where a ``ChatMemoryBuffer`` would keep the most recent
messages that fit. LlamaIndex's mock LLM stands in for a real model; nothing is downloaded.

Run: python examples/llamaindex_memory.py   (needs: pip install 'loomctx[llamaindex]')
"""

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

from loomctx import HashingEmbedder, Session
from loomctx.adapters.llamaindex import LoomctxMemory

memory = LoomctxMemory(Session(system_prompt="You are a shipping assistant.",
                               embedder=HashingEmbedder()), max_tokens=250)
llm = MockLLMWithChatMemoryOfLastCall()
engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

for n in range(10):
    engine.chat(f"Question {n}: where is shipment SHP-{40000 + n} right now, and why?")
    build = memory.last_build
    assert build is not None
    print(f"turn {n}: sent {len(llm.last_chat_messages or [])} messages, {build.tokens} tokens, "
          f"{build.report.reused_prefix_tokens} repeat the previous request")

stored = len(memory.get_all())
print(f"stored {stored} messages; the budget of 250 tokens held the newest of them")
assert stored == 20 and memory.last_build is not None and memory.last_build.tokens <= 250
