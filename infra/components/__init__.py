"""One construct per concern; the stack only wires them together."""
