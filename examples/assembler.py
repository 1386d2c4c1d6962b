"""The seed's ContextAssembler API: named components with CRITICAL…LOW priorities.

Run: python examples/assembler.py
"""

from loomctx import ComponentPriority, ContextAssembler


def main() -> None:
    asm = ContextAssembler(max_tokens=120)
    asm.add_component("request", "### User request\nA monthly revenue report by region.",
                      ComponentPriority.CRITICAL)
    asm.add_component("schema_orders", "orders(id, region, amount, created_at) " * 12,
                      ComponentPriority.HIGH)
    asm.add_component("rules", "Use ISO dates. Round money to cents.", ComponentPriority.LOW)
    print(asm.assemble())
    summary = asm.get_summary()
    assert summary["total_tokens"] <= 120
    print(summary["total_tokens"], "tokens")


if __name__ == "__main__":
    main()
