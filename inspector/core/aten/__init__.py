"""Aten knowledge generated from torch and onnxscript and shipped as package data: the aten schema catalogue
(parser, binder, formatter) and the torchlib catalogue (which onnxscript function lowers each overload). It knows
nothing of any model, so every layer above can ask it; torch and onnxscript are never needed to read it."""
