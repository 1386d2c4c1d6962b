"""A session that remembers: an early fact is evicted from the recent window, then retrieved.

Run: python examples/session_memory.py
"""

from loomctx import MemoryOptions, Session


def main() -> None:
    s = Session(system_prompt="You are a helpful assistant.", model="gpt-4o",
                memory=MemoryOptions(l1_max_tokens=300))
    s.add_message_sync("user", "Please remember: my dog is called Biscuit.", id="m1")
    for i in range(40):
        s.add_message_sync("user" if i % 2 == 0 else "assistant",
                      f"Small talk number {i} about the weather this week.")
    result = s.build_sync("What is my dog called?", max_tokens=400)
    assert result.tokens <= 400
    assert "m1" in result.report.included_ids, result.report.table()
    print(result.report.table(max_rows=12))


if __name__ == "__main__":
    main()
