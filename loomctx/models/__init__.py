"""Model clients: the :class:`ChatModel` protocol and its implementations."""
