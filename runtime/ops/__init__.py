"""Caffe2-style operators on top of handles, descriptors, workspaces and the planner.

Each op checks shapes and dtypes in Python first and says what is wrong; tensors are
`miopen.Tensor`s, PyTorch tensors or `__cuda_array_interface__` objects.
"""
