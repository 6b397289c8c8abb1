"""Frontends: models of other frameworks in, Relay out, every expression tagged with the
layer it came from.  `onnx/` reads ONNX graphs (`relaylens import model.onnx`)."""
