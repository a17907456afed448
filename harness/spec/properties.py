"""The documented properties every case source may expect; a vendor adds its own names.

Records carry these names in their checks, so reports can tell the numeric result from the
layout and placement properties without knowing any case source.
"""

RESULT = "result"  # the output matches the host reference
PLACEMENT = "placement"  # where the layers under test ran (NPU, CPU fallback, rejected)
