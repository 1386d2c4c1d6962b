"""Adapters for the frameworks agents are already written in. Optional: each module imports its
framework, which is an extra (``pip install 'loomctx[langchain]'`` / ``'loomctx[llamaindex]'``);
the core never imports this package.

- :mod:`loomctx.adapters.langchain`: a chat message history backed by a
  :class:`~loomctx.session.Session`, and runnables that build the context before a chat model
  and remember its reply.
- :mod:`loomctx.adapters.llamaindex`: a memory whose ``get()`` is a loomctx build.
"""
