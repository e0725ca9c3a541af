"""From upstream to staged snapshots: the source, parsing, normalization (SPEC section 2) and staging."""
