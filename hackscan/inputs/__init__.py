"""Inputs: find the submissions under the given paths, pair each with its reference, and
read them defensively (size, binary, encoding, syntax) into parsed facts."""
