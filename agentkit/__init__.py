"""agentkit: runs inside an agent container, serves Podium's agent protocol, adapts agent classes.

Standard library and Pillow only. ``python -m agentkit`` starts the server; see
``docs/agent-protocol.md``.
"""

__version__ = "0.2.0"
