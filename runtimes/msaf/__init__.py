"""Microsoft Agent Framework runtime: ``POST /msaf/agent`` behind agent-framework-ag-ui."""

from runtimes.msaf.bridge import MsafRuntime

runtime = MsafRuntime()
"""What ``app.factory`` mounts."""
