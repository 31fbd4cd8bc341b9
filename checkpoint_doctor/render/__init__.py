"""Rendering: what an operator reads. The layout of text (:mod:`~checkpoint_doctor.render.layout`: tables,
sections, wrapping, the one JSON document) and one module per command's text (``inspect``,
``diagnosis``, ``explain``, ``plan``, ``changes`` for apply/undo/history; the audit's is
:mod:`checkpoint_doctor.fleet.report`),
the JSON document envelope every ``--format json`` output shares (:mod:`~checkpoint_doctor.render.documents`;
the JSON Schemas are in ``checkpoint_doctor/schemas/``), and the follow-up commands printed as hints,
carrying the flags that shaped the answer (:mod:`~checkpoint_doctor.render.hints`). Pure.
"""
