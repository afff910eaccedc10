"""Spec + semantics -> plans -> the text of the generated package."""
