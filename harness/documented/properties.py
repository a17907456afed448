"""The documented properties every case source may expect; a vendor adds its own names.

Records carry these names in their checks, so reports can tell the numeric result from the
layout, placement and precision properties without knowing any case source.
"""

RESULT = "result"  # the output matches the host reference
PLACEMENT = "placement"  # where the layers under test ran (NPU, CPU fallback, rejected)
PRECISION = "precision"  # the precision the layers under test ran in (e.g. int8 as asked)
# that every layer placed on the CPU is one the platform's CPU runs (a platform-wide rule)
CPU_RULE = "platform CPU operators"
