"""What the header cannot say: the annotations, their resolution into semantics, the gate, the parameter forms, names."""
