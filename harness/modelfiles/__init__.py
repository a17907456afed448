"""Users' own ONNX models made runnable (``prepare``: opset, input shapes, inputs) and cut
into pieces (``graph``); ``harness.cases.user_models`` turns one into a case."""
