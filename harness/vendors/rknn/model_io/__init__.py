"""The model-I/O case source (seed 003): its cases, models and observers, and the zero-copy
buffer layouts its rules describe (``hil layout rknn-*``)."""
