"""AWS Strands Agents runtime: ``POST /strands/agent`` behind ag-ui-strands."""

from runtimes.strands.route import StrandsRuntime

runtime = StrandsRuntime()
"""What ``app.factory`` mounts."""
