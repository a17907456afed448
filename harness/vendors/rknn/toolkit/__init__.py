"""The rknn-toolkit2 side: the calls a job becomes, the processes that import the toolkit,
the converter, the build-log parser, the simulator target and the SDK environments."""
